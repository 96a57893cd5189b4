// SPDX-License-Identifier: BSD-3-Clause

// The consumer program of tests/clients/consumer.sh (Go): IDs through each
// call, kill -9 of the first responder, failover figures, close().
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	flakewire "github.com/flakewire/flakewire/clients/go"
)

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+f+"\n", a...)
	os.Exit(1)
}

// timed: milliseconds one Get takes from a client of servers (defaults).
func timed(servers ...string) float64 {
	c, err := flakewire.New(servers, nil)
	if err != nil {
		fail("New(%v): %v", servers, err)
	}
	defer c.Close()
	t := time.Now()
	if _, err := c.Get(); err != nil {
		fail("Get from %v: %v", servers, err)
	}
	return float64(time.Since(t).Microseconds()) / 1000
}

func main() {
	a, b := os.Getenv("FW_A"), os.Getenv("FW_B")
	c, err := flakewire.New([]string{a, b}, nil)
	if err != nil {
		fail("New: %v", err)
	}
	var ids []uint64
	one, err := c.Get()
	if err != nil {
		fail("Get: %v", err)
	}
	ids = append(ids, one)
	for i := 0; i < 1000; i++ {
		id, err := c.Next()
		if err != nil {
			fail("Next %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	uuids, err := c.UUID7(5)
	if err != nil || len(uuids) != 5 {
		fail("UUID7(5): %d, %v", len(uuids), err)
	}
	pid, _ := strconv.Atoi(os.Getenv("FW_A_PID"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		fail("kill -9 %d: %v", pid, err)
	}
	var worst time.Duration
	for i := 0; i < 3000; i++ {
		t := time.Now()
		id, err := c.Next()
		if err != nil {
			fail("Next after kill -9 of %s: %v", a, err)
		}
		if d := time.Since(t); d > worst {
			worst = d
		}
		ids = append(ids, id)
	}
	after, err := c.Get()
	if err != nil {
		fail("Get after kill -9 of %s: %v", a, err)
	}
	ids = append(ids, after)
	l, err := c.Layout()
	if err != nil {
		fail("Layout: %v", err)
	}
	seen := map[uint64]bool{}
	last := map[uint32]uint64{}
	for _, id := range ids {
		if seen[id] {
			fail("duplicate ID %d", id)
		}
		seen[id] = true
		p, err := l.Decode(id)
		if err != nil {
			fail("Decode(%d): %v", id, err)
		}
		w := p.Datacenter<<16 | p.Worker
		if id <= last[w] {
			fail("ID %d of worker %d not above %d", id, p.Worker, last[w])
		}
		last[w] = id
	}
	if len(last) != 2 {
		fail("IDs from %d workers, want 2 (A then B)", len(last))
	}
	if err := c.Close(); err != nil {
		fail("Close: %v", err)
	}
	if _, err := c.Next(); !errors.Is(err, flakewire.ErrClosed) {
		fail("Next after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Get(); !errors.Is(err, flakewire.ErrClosed) {
		fail("Get after Close: %v, want ErrClosed", err)
	}
	fmt.Printf("FAILOVER go dead_port_ms=%.1f silent_host_ms=%.1f after_kill9_worst_call_ms=%.1f\n",
		timed(os.Getenv("FW_DEAD"), b), timed(os.Getenv("FW_SILENT"), b),
		float64(worst.Microseconds())/1000)
	fmt.Printf("OK go: %d unique IDs increasing per worker, 5 UUIDv7, closed after Close\n", len(ids))
}

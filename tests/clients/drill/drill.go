// SPDX-License-Identifier: BSD-3-Clause

// The Go caller of scripts/drill.sh (issue 49): one client (flakewire.New,
// the public API) shared by two goroutines, one calling Next() and one Get()
// (one round trip), each at a fixed rate for a bounded time, one line per
// call on stdout:
//
//	WALL_S MODE LATENCY_US ok|err [MESSAGE]
//
// WALL_S is the call's start (Unix seconds, 6 decimals). A call late on its
// slot does not make up the missed ones.
//
// usage: drill SERVERS RATE SECONDS TIMEOUT_MS (0: the client's default)
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	flakewire "github.com/flakewire/flakewire/clients/go"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: drill SERVERS RATE SECONDS TIMEOUT_MS")
		os.Exit(2)
	}
	servers := strings.Split(os.Args[1], ",")
	rate, _ := strconv.ParseFloat(os.Args[2], 64)
	secs, _ := strconv.ParseFloat(os.Args[3], 64)
	tmo, _ := strconv.Atoi(os.Args[4])
	if rate < 1 || rate > 10000 || secs < 1 || secs > 600 || tmo < 0 {
		fmt.Fprintln(os.Stderr, "drill: bad arguments")
		os.Exit(2)
	}
	o := flakewire.DefaultOptions()
	if tmo > 0 {
		o.Timeout = time.Duration(tmo) * time.Millisecond
	}
	c, err := flakewire.New(servers, &o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drill: New:", err)
		os.Exit(1)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var mu sync.Mutex
	var wg sync.WaitGroup
	period := time.Duration(float64(time.Second) / rate)
	run := func(name string, call func() (uint64, error)) {
		defer wg.Done()
		start := time.Now()
		slot := start
		maxCalls := int(rate*secs) + 1
		for i := 0; i < maxCalls && time.Since(start).Seconds() < secs; i++ {
			if d := time.Until(slot); d > 0 {
				time.Sleep(d)
			}
			t0 := time.Now()
			_, err := call()
			lat := time.Since(t0).Microseconds()
			w := float64(t0.UnixNano()) / 1e9
			mu.Lock()
			if err == nil {
				fmt.Fprintf(out, "%.6f %s %d ok\n", w, name, lat)
			} else {
				fmt.Fprintf(out, "%.6f %s %d err %s\n", w, name, lat,
					strings.ReplaceAll(err.Error(), "\n", " "))
			}
			mu.Unlock()
			slot = slot.Add(period)
			if now := time.Now(); slot.Before(now) {
				slot = now
			}
		}
	}
	wg.Add(2)
	go run("next", c.Next)
	go run("get", c.Get)
	wg.Wait()
	out.Flush()
	c.Close()
}

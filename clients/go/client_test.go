// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseServer(t *testing.T) {
	good := map[string]struct {
		h string
		p int
	}{"10.0.0.1:99": {"10.0.0.1", 99}, "10.0.0.1": {"10.0.0.1", 4242},
		"[::1]:4243": {"::1", 4243}, "[fe80::1]": {"fe80::1", 4242}, "fe80::1": {"fe80::1", 4242}}
	for s, w := range good {
		h, p, err := ParseServer(s)
		if err != nil || h != w.h || p != w.p {
			t.Errorf("%q: %q %d %v", s, h, p, err)
		}
	}
	for _, s := range []string{"[::1", "[::1]x", "h:0", "h:65536", "h:x", ":1", "", "h:+1", "[::1]:"} {
		if _, _, err := ParseServer(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// fake answers each request with handler(op, tag) datagrams.
func fake(t *testing.T, handler func(op uint8, tag uint64) [][]byte) string {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		b := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDP(b)
			if err != nil {
				return
			}
			if n < 24 {
				continue
			}
			for _, d := range handler(b[3], binary.BigEndian.Uint64(b[8:])) {
				conn.WriteToUDP(d, from)
			}
		}
	}()
	return conn.LocalAddr().String()
}

func mkReply(op uint8, tag uint64, status uint8, worker uint16, ids ...uint64) []byte {
	b := make([]byte, 24, 24+8*len(ids))
	binary.BigEndian.PutUint16(b, Magic)
	b[2], b[3], b[4] = Version, op|OpReply, status
	if status == StOK {
		binary.BigEndian.PutUint16(b[6:], uint16(len(ids)))
	}
	binary.BigEndian.PutUint64(b[8:], tag)
	binary.BigEndian.PutUint16(b[18:], worker)
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, id)
	}
	if op == OpInfo && status == StOK {
		binary.BigEndian.PutUint16(b[6:], 1)
		info := make([]byte, 32)
		binary.BigEndian.PutUint64(info, DefaultEpochMs)
		copy(info[8:], []byte{41, 0, 10, 12, 1, 1, 0, 181, 0, 16, 0, 4})
		b = append(b, info...)
	}
	return b
}

func mkID(worker uint64, seq uint64) uint64 {
	return uint64(time.Now().UnixMilli()-DefaultEpochMs)<<22 | worker<<12 | seq
}

func opts() *Options {
	o := DefaultOptions()
	o.Timeout, o.Retries = 300*time.Millisecond, 0
	return &o
}

func TestStraysIgnored(t *testing.T) {
	addr := fake(t, func(op uint8, tag uint64) [][]byte {
		if op == OpInfo {
			return [][]byte{mkReply(op, tag, 0, 7)}
		}
		good := mkReply(op, tag, 0, 7, mkID(7, 0))
		return [][]byte{[]byte("junk"), mkReply(op, tag^1, 0, 7, mkID(7, 0)), mkReply(OpList, tag, 0, 7, mkID(7, 0)), good}
	})
	c, err := New([]string{addr}, opts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Get()
	if p, _ := DefaultLayout.Decode(id); err != nil || p.Worker != 7 || c.Stats.Stray.Load() != 3 {
		t.Fatalf("id %d err %v stray %d", id, err, c.Stats.Stray.Load())
	}
}

func TestInvalidRejected(t *testing.T) {
	for name, id := range map[string]uint64{"worker": mkID(8, 0), "sign": 1<<63 | mkID(7, 0), "time": 1000<<22 | 7<<12} {
		id := id
		addr := fake(t, func(op uint8, tag uint64) [][]byte {
			if op == OpInfo {
				return [][]byte{mkReply(op, tag, 0, 7)}
			}
			return [][]byte{mkReply(op, tag, 0, 7, id)}
		})
		c, _ := New([]string{addr}, opts())
		_, err := c.Get()
		var ie *InvalidReplyError
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v", name, err)
		}
		c.Close()
	}
}

func TestFailoverOnStatus(t *testing.T) {
	for _, st := range []uint8{StNoLease, StClockUnsafe} {
		st := st
		a := fake(t, func(op uint8, tag uint64) [][]byte { return [][]byte{mkReply(op, tag, st, 1)} })
		b := fake(t, func(op uint8, tag uint64) [][]byte {
			if op == OpInfo {
				return [][]byte{mkReply(op, tag, 0, 9)}
			}
			return [][]byte{mkReply(op, tag, 0, 9, mkID(9, 0))}
		})
		c, _ := New([]string{a, b}, opts())
		id, err := c.Get()
		if p, _ := DefaultLayout.Decode(id); err != nil || p.Worker != 9 || c.Stats.Failovers.Load() < 1 {
			t.Errorf("status %d: id %d err %v", st, id, err)
		}
		c.Close()
		c, _ = New([]string{a}, opts())
		_, err = c.Get()
		var se *StatusError
		if !errors.As(err, &se) || se.Status != st {
			t.Errorf("status %d alone: %v", st, err)
		}
		c.Close()
	}
}

func TestTimeout(t *testing.T) {
	addr := fake(t, func(uint8, uint64) [][]byte { return nil })
	o := opts()
	o.Timeout = 20 * time.Millisecond
	c, _ := New([]string{addr}, o)
	defer c.Close()
	if _, err := c.Next(); !errors.Is(err, ErrTimeout) {
		t.Fatalf("%v", err)
	}
}

func answering(op uint8, tag uint64) [][]byte {
	if op == OpInfo {
		return [][]byte{mkReply(op, tag, 0, 7)}
	}
	if op == OpID {
		return [][]byte{mkReply(op, tag, 0, 7, mkID(7, 0))}
	}
	return [][]byte{mkReply(op, tag, 0, 7, mkID(7, 0), mkID(7, 1), mkID(7, 2))}
}

func TestClosedEndsHandOuts(t *testing.T) {
	o := opts()
	o.UseRange, o.Prefetch, o.LowWater = false, 3, 0
	c, err := New([]string{fake(t, answering)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Next(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close with 2 IDs buffered: %v", err)
	}
	if _, err := c.Get(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := c.NextUUID7(); !errors.Is(err, ErrClosed) {
		t.Fatalf("NextUUID7 after Close: %v", err)
	}
}

// deadPort: a loopback port nothing listens on, below the ephemeral range
// (32768-60999) so no socket of this test is given it meanwhile.
func deadPort(t *testing.T) string {
	for p := 20000 + time.Now().Nanosecond()%10000; p < 32768; p++ {
		conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		if err == nil {
			conn.Close()
			return conn.LocalAddr().String()
		}
	}
	t.Fatal("no free port")
	return ""
}

func TestRefusedFailsOverAtOnce(t *testing.T) {
	o := opts()
	o.Timeout, o.Retries = 2*time.Second, 3
	c, err := New([]string{deadPort(t), fake(t, answering)}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Get(); err != nil {
		t.Fatal(err)
	}
	// A timeout would cost 2 s; ICMP port unreachable costs a round trip.
	if c.Stats.Refused.Load() < 1 || c.Stats.Timeouts.Load() != 0 || time.Since(start) > time.Second {
		t.Fatalf("refused %d timeouts %d in %v", c.Stats.Refused.Load(), c.Stats.Timeouts.Load(), time.Since(start))
	}
}

func TestNoResponseNamesServers(t *testing.T) {
	silent := fake(t, func(uint8, uint64) [][]byte { return nil })
	dead := deadPort(t)
	o := opts()
	o.Timeout = 20 * time.Millisecond
	c, _ := New([]string{silent, dead}, o)
	defer c.Close()
	_, err := c.Get()
	var ne *NoResponseError
	if !errors.As(err, &ne) || !errors.Is(err, ErrTimeout) || len(ne.Tried) != 2 ||
		ne.Tried[0] != silent+": no reply in 20ms" || ne.Tried[1] != dead+": refused (ICMP port unreachable)" {
		t.Fatalf("%v", err)
	}
}

func TestErrorTypes(t *testing.T) {
	var ae *AddressError
	if _, err := New([]string{"h:0"}, nil); !errors.As(err, &ae) || ae.Server != "h:0" {
		t.Fatalf("bad port: %v", err)
	}
	if _, err := New(nil, nil); !errors.As(err, &ae) {
		t.Fatalf("no server: %v", err)
	}
	var re *ResolveError
	if _, err := New([]string{"no-such-host.invalid:4242"}, nil); !errors.As(err, &re) {
		t.Fatalf("DNS failure: %v", err)
	}
}

func TestContextEndsTheWait(t *testing.T) {
	silent := fake(t, func(uint8, uint64) [][]byte { return nil })
	o := opts()
	o.Timeout = 5 * time.Second
	c, _ := New([]string{silent}, o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.GetContext(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("GetContext: %v after %v", err, time.Since(start))
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel2)
	if _, err := c.NextContext(ctx2); !errors.Is(err, context.Canceled) {
		t.Fatalf("NextContext: %v", err)
	}
	cancel2()
}

func TestLayoutBeforeAnyID(t *testing.T) {
	c, _ := New([]string{fake(t, answering)}, opts())
	defer c.Close()
	l, err := c.Layout()
	if err != nil || l != DefaultLayout {
		t.Fatalf("%v %v", l, err)
	}
}

// An ID buffered longer than MaxAge is not handed out: after 100 ms the
// next ID comes from a later request, not from the 2 IDs left of the first
// reply (before issue 37 Next handed those out however old).
func TestMaxAge(t *testing.T) {
	var seq, lists atomic.Uint64
	addr := fake(t, func(op uint8, tag uint64) [][]byte {
		if op == OpInfo {
			return [][]byte{mkReply(op, tag, 0, 7)}
		}
		lists.Add(1)
		s := seq.Add(3) - 3
		return [][]byte{mkReply(op, tag, 0, 7, mkID(7, s), mkID(7, s+1), mkID(7, s+2))}
	})
	o := opts()
	o.UseRange, o.Prefetch, o.LowWater, o.MaxAge = false, 3, 0, 20*time.Millisecond
	if _, err := New([]string{addr}, &Options{Timeout: time.Second, Prefetch: 3, MaxAge: time.Millisecond}); err == nil {
		t.Fatal("MaxAge 1ms accepted")
	}
	c, err := New([]string{addr}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := c.Next()
	if err != nil || lists.Load() != 1 {
		t.Fatalf("first: %v, %d requests", err, lists.Load())
	}
	time.Sleep(100 * time.Millisecond)
	b, err := c.Next()
	if err != nil || lists.Load() < 2 || b&0xfff < 3 || b <= a {
		t.Fatalf("after 100 ms: %d after %d, %v, %d requests", b, a, err, lists.Load())
	}
}

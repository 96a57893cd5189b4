// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"sync"
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
	return fakeReq(t, func(req []byte) [][]byte { return handler(req[3], binary.BigEndian.Uint64(req[8:])) })
}

// fakeReq answers each request (24 bytes at least) with handler(request) datagrams.
func fakeReq(t *testing.T, handler func(req []byte) [][]byte) string {
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
			for _, d := range handler(b[:n]) {
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
	// 3 strays; more only when a reply came after T (50 ms) and the request
	// went again: its datagrams are strays too.
	stray := c.Stats.Stray.Load()
	if p, _ := DefaultLayout.Decode(id); err != nil || p.Worker != 7 || stray < 3 || stray > 3 && c.Stats.Timeouts.Load() == 0 {
		t.Fatalf("id %d err %v stray %d", id, err, stray)
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
		// Alone, the responder is asked again (every 10 ms) until the
		// deadline, whose error names what it answered (before issue 49: a
		// *StatusError at once).
		c, _ = New([]string{a}, opts())
		_, err = c.Get()
		var ne *NoResponseError
		if !errors.As(err, &ne) || len(ne.Tried) != 1 || ne.Tried[0] != a+": answered "+statusWord(st) {
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
	// ICMP port unreachable moves the call on at once (a failover; a resend
	// after T is not one).
	if c.Stats.Refused.Load() < 1 || c.Stats.Failovers.Load() < 1 || time.Since(start) > time.Second {
		t.Fatalf("refused %d failovers %d in %v", c.Stats.Refused.Load(), c.Stats.Failovers.Load(), time.Since(start))
	}
}

func TestNoResponseNamesServers(t *testing.T) {
	silent := fake(t, func(uint8, uint64) [][]byte { return nil })
	dead := deadPort(t)
	o := opts()
	o.Timeout = 200 * time.Millisecond
	c, _ := New([]string{silent, dead}, o)
	defer c.Close()
	_, err := c.Get()
	var ne *NoResponseError
	// The text of issue 49: "no reply in N ms" (since its first unanswered
	// send), "refused".
	if !errors.As(err, &ne) || !errors.Is(err, ErrTimeout) || len(ne.Tried) != 2 ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(silent)+`: no reply in [0-9]+ ms$`).MatchString(ne.Tried[0]) ||
		ne.Tried[1] != dead+": refused" {
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

// A call ended by its context leaves nothing behind that cuts a later
// call's wait short. Before the fix, the goroutine that wakes a cancelled
// read could still move the socket's read deadline to "now" after its call
// had returned, and the next call (or a refill) on that server then failed
// at once with "no reply in 2s" (TestContextEndsTheWait failed so, 1 run in
// 80 on a loaded machine). On one P the late goroutine runs exactly when
// the next call parks on its read: each round ends a call by a context
// cancelled before it, then needs the next call to wait for its reply.
func TestEndedContextLeavesNextCallAlone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	o := opts()
	o.Timeout = 2 * time.Second
	g := &idSource{l: DefaultLayout, worker: 7}
	c, _ := New([]string{fakeReq(t, func(req []byte) [][]byte { return [][]byte{g.answer(req)} })}, o)
	defer c.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 50; i++ {
		if _, err := c.GetContext(cancelled); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d, the cancelled call: %v", i, err)
		}
		if _, err := c.Get(); err != nil {
			t.Fatalf("round %d, the call after it: %v (%d timeouts)", i, err, c.Stats.Timeouts.Load())
		}
	}
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
	var seq, lists atomic.Uint64 // lists: LIST requests, resends after T apart
	var tags sync.Map
	addr := fake(t, func(op uint8, tag uint64) [][]byte {
		if op == OpInfo {
			return [][]byte{mkReply(op, tag, 0, 7)}
		}
		if _, again := tags.LoadOrStore(tag, true); !again {
			lists.Add(1)
		}
		s := seq.Add(3) - 3
		return [][]byte{mkReply(op, tag, 0, 7, mkID(7, s), mkID(7, s+1), mkID(7, s+2))}
	})
	o := opts()
	o.UseRange, o.Prefetch, o.LowWater = false, 3, 0
	// The bounds, 10 ms..1 h: outside them New fails with the error naming MaxAge
	// and its range, and makes no client.
	for _, bad := range []time.Duration{time.Millisecond, 10*time.Millisecond - 1, time.Hour + 1} {
		o.MaxAge = bad
		c, err := New([]string{addr}, o)
		if want := "flakewire: MaxAge " + bad.String() + " not in 10ms..1h"; c != nil || err == nil || err.Error() != want {
			t.Fatalf("MaxAge %v: client %v, error %v, want %q", bad, c, err, want)
		}
	}
	for _, good := range []time.Duration{10 * time.Millisecond, time.Hour} {
		o.MaxAge = good
		c, err := New([]string{addr}, o)
		if err != nil {
			t.Fatalf("MaxAge %v: %v", good, err)
		}
		c.Close()
	}
	if lists.Load() != 0 {
		t.Fatalf("New sent %d requests", lists.Load())
	}
	o.MaxAge = 20 * time.Millisecond
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

// idSource hands out a worker's IDs in a layout as a responder does: each
// range within one millisecond, never back in time. Used by one fake's goroutine.
type idSource struct {
	l       Layout
	worker  uint64
	ms, seq uint64
}

// take returns up to n consecutive IDs (those left in the current ms).
func (g *idSource) take(n uint64) Range {
	if now := uint64(time.Now().UnixMilli()) - g.l.EpochMs; now > g.ms {
		g.ms, g.seq = now, 0
	}
	per := uint64(1) << g.l.SeqBits
	if n > per-g.seq {
		n = per - g.seq
	}
	r := Range{g.ms<<(g.l.DcBits+g.l.WorkerBits+g.l.SeqBits) | g.worker<<g.l.SeqBits | g.seq, uint32(n)}
	if g.seq += n; g.seq == per {
		g.ms, g.seq = g.ms+1, 0
	}
	return r
}

// answer is g's reply to an ID, LIST or RANGE request (INFO: g's layout).
func (g *idSource) answer(req []byte) []byte {
	op, tag, count := req[3], binary.BigEndian.Uint64(req[8:]), uint64(binary.BigEndian.Uint16(req[6:]))
	b := mkReply(op, tag, 0, uint16(g.worker))
	switch op {
	case OpInfo:
		b[24+8], b[24+9], b[24+10], b[24+11] = g.l.TimeBits, g.l.DcBits, g.l.WorkerBits, g.l.SeqBits
	case OpID:
		count = 1
		fallthrough
	case OpList:
		for i := uint64(0); i < count; i++ {
			b = binary.BigEndian.AppendUint64(b, g.take(1).First)
		}
		binary.BigEndian.PutUint16(b[6:], uint16(count))
	case OpRange:
		k := 0
		for left := count; left > 0 && k < RangesMax; k++ {
			r := g.take(left)
			b = binary.BigEndian.AppendUint64(b, r.First)
			b = binary.BigEndian.AppendUint32(b, r.N)
			left -= uint64(r.N)
		}
		binary.BigEndian.PutUint16(b[6:], uint16(k))
	}
	return b
}

// IDs held in a goroutine's own share (a Sequence) are not handed out past
// MaxAge either. Four goroutines wait out a first refill the responder holds
// for 6 x MaxAge, long enough for the ticker that ages shares to end idle;
// each then holds a share of 100 IDs, waits 4 x MaxAge, and must get an ID
// at most 2 x MaxAge old, from a new request. Before commit 2136f1c
// the ticker was not restarted when the waiters took their shares: the
// epoch stood still, and each share went on handing out its old IDs.
func TestMaxAgeShares(t *testing.T) {
	const maxAge = 100 * time.Millisecond
	var lists atomic.Uint64
	g := &idSource{l: DefaultLayout, worker: 7}
	addr := fakeReq(t, func(req []byte) [][]byte {
		if req[3] == OpList && lists.Add(1) == 1 {
			time.Sleep(6 * maxAge)
		}
		return [][]byte{g.answer(req)}
	})
	o := opts()
	o.Timeout = 5 * time.Second // the held reply is waited for (resends queue behind it)
	o.UseRange, o.Prefetch, o.LowWater, o.MaxAge = false, 800, 0, maxAge
	c, err := New([]string{addr}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A correct client's next ID is at most MaxAge old (2 x MaxAge: a late tick)
	// when the wait ends; a share held across it is older than the wait.
	const callers, wait = 4, 4 * maxAge
	var start, taken, resume sync.WaitGroup
	start.Add(callers)
	taken.Add(callers)
	resume.Add(1)
	var waitFrom time.Time
	var sentBefore uint64
	errs := make([]error, callers)
	for i := 0; i < callers; i++ {
		go func(i int) {
			defer start.Done()
			q := c.Sequence()
			a, err := q.Next()
			taken.Done()
			if err != nil {
				errs[i] = err
				return
			}
			resume.Wait()
			b, err := q.Next()
			p, _ := DefaultLayout.Decode(b)
			switch {
			case err != nil:
				errs[i] = err
			case int64(p.UnixMs) < waitFrom.Add(wait-2*maxAge).UnixMilli():
				errs[i] = fmt.Errorf("after a wait of %v: ID %d issued %d ms before the wait ended (the first was %d)",
					wait, b, waitFrom.Add(wait).UnixMilli()-int64(p.UnixMs), a)
			}
		}(i)
	}
	taken.Wait()
	waitFrom, sentBefore = time.Now(), lists.Load()
	time.Sleep(wait)
	resume.Done()
	start.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if lists.Load() <= sentBefore {
		t.Errorf("no request after the wait: %d LIST requests in all", lists.Load())
	}
}

// Refills grow while a caller drains the pool, up to 1024 x Prefetch and
// 16 ms of one worker's IDs (2^SeqBits a ms, from INFO), and no further:
// with LowWater 0 every refill starts on an empty pool, so each doubles the
// last until the cap. The fake notes the largest RANGE asked.
func TestRefillCap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seqBits  uint8
		prefetch int
		cap      uint64
	}{
		{"1024 x prefetch", 12, 2, 1024 * 2}, // 16 << 12 = 65,536 is larger
		{"16 ms of IDs", 8, 16, 16 << 8},     // 1024 x 16 = 16,384 is larger
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ranges, biggest, over atomic.Uint64
			l := Layout{DefaultEpochMs, 41, 0, 22 - tc.seqBits, tc.seqBits}
			g := &idSource{l: l, worker: 7}
			addr := fakeReq(t, func(req []byte) [][]byte {
				if n := uint64(binary.BigEndian.Uint16(req[6:])); req[3] == OpRange {
					ranges.Add(1)
					if n > biggest.Load() {
						biggest.Store(n)
					}
					if n > tc.cap {
						over.Add(1)
					}
				}
				return [][]byte{g.answer(req)}
			})
			o := opts()
			o.Timeout = 5 * time.Second
			o.Prefetch, o.LowWater = tc.prefetch, 0
			c, err := New([]string{addr}, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Past the cap (2 x cap, a refill of each size below it) and 8 refills at it.
			var prev uint64
			for i := uint64(0); i < 10*tc.cap; i++ {
				id, err := c.Next()
				if err != nil || id <= prev {
					t.Fatalf("ID %d: %d after %d, %v", i, id, prev, err)
				}
				prev = id
			}
			if over.Load() != 0 || biggest.Load() != tc.cap {
				t.Fatalf("cap %d: largest RANGE asked %d, %d over the cap, %d RANGE requests",
					tc.cap, biggest.Load(), over.Load(), ranges.Load())
			}
		})
	}
}

// SPDX-License-Identifier: BSD-3-Clause

// Package flakewire is a client for the flakewire Snowflake ID responders
// (UDP, protocol version 1), standard library only. It behaves as the C
// client (lib/client/fw_client.h) does:
//
//   - every request carries a fresh random 64-bit tag; a reply is accepted
//     only when its tag, op and source address match, so stale, foreign and
//     garbled datagrams are ignored and the wait goes on;
//   - requests are padded as PROTOCOL.md section 6 says (unless
//     Options.Trusted), so a responder that does not trust this host still
//     answers in full;
//   - a call (one Get, one refill of Next, one INFO) ends at most Timeout
//     (1 s) after it started, with IDs or an error, whatever the
//     responders do (doc/clients.md, "Availability: deadlines, hedging,
//     health"; avail.go): it asks the first responder of the order
//     (healthy ones in the order given, then those holding off after
//     RETRY_AFTER, then unhealthy ones); a refusal (ICMP port unreachable
//     on the connected socket), CLOCK_UNSAFE, NO_LEASE, REFUSED or
//     RETRY_AFTER move it to the next one at once; after a delay learnt
//     from the client's round trips it hedges to the next healthy one,
//     under a budget (HedgeBudgetPct of calls); with no answer it asks
//     again (50 ms, doubling); a lone responder is asked until the
//     deadline (every 10 ms while it refuses or answers NO_LEASE or
//     CLOCK_UNSAFE); BAD_REQUEST, BAD_VERSION, and REFUSED from every
//     responder end the call at once with a *StatusError;
//   - the client remembers refused, silent, CLOCK_UNSAFE, NO_LEASE and
//     REFUSED responders as unhealthy, skips them while others answer and
//     probes them with INFO every 100 ms in a goroutine until they answer
//     again (after a status, from 1 s after it on);
//   - every ID is checked before it is handed out: positive, strictly
//     increasing within a reply and above the last one seen from that
//     worker, no more than asked, carrying the datacenter and worker the
//     reply names (the layout is learnt with an INFO request first) and a
//     time within MaxSkew of this host's clock.
//
// A Client is safe for concurrent use by many goroutines; Next hands out
// buffered IDs without waiting for a refill in flight, in one order for all
// goroutines (under a lock). A Sequence (Client.Sequence, one per
// goroutine) hands out the same pool's IDs with no lock and no write shared
// with other goroutines per call: the way to scale with the callers. After
// Close every call fails with ErrClosed, buffered IDs included.
//
// Errors, the same six in every flakewire client (doc/clients.md):
// *AddressError (a server string that cannot be parsed), *ResolveError
// (DNS), *NoResponseError (errors.Is ErrTimeout; names every server tried
// and what each did), *StatusError (a responder's status), *InvalidReplyError,
// ErrClosed; plus ctx.Err() from the Context calls.
package flakewire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RetryAfterMax is the longest RETRY_AFTER hold-off honoured: a responder
// is not asked again before its hint passes (at most this), unless no
// other one is eligible.
const RetryAfterMax = time.Second

const workersTracked = 64

// ErrTimeout: no responder answered by the call's deadline (errors.Is on a
// *NoResponseError, which says what each server did).
var ErrTimeout = errors.New("flakewire: no responder answered")

// ErrClosed: the client was closed; buffered IDs are no longer handed out.
var ErrClosed = errors.New("flakewire: client closed")

// AddressError: a server string that cannot be parsed (or no server given).
type AddressError struct{ Server, Msg string }

func (e *AddressError) Error() string {
	if e.Server == "" {
		return "flakewire: " + e.Msg
	}
	return fmt.Sprintf("flakewire: server %q: %s", e.Server, e.Msg)
}

// ResolveError: a host name that does not resolve (Err is the resolver's).
type ResolveError struct {
	Server string
	Err    error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("flakewire: server %q does not resolve: %v", e.Server, e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }

// NoResponseError: no responder answered by the call's deadline; Tried
// names each server asked, in the order first asked, and what it did last
// ("127.0.0.1:4243: no reply in 80 ms", "127.0.0.1:4244: RETRY_AFTER 900
// ms", "127.0.0.1:4245: refused", "...: answered NO_LEASE"). Empty: the call waited
// its whole deadline for another call of this client.
type NoResponseError struct{ Tried []string }

func (e *NoResponseError) Error() string {
	if len(e.Tried) == 0 {
		return "flakewire: no responder answered: the deadline passed behind another call"
	}
	return "flakewire: no responder answered: " + strings.Join(e.Tried, "; ")
}

func (e *NoResponseError) Is(target error) bool { return target == ErrTimeout }

// StatusError: a responder answered BAD_REQUEST or BAD_VERSION (another
// responder would say the same: the call ends at once), or every responder
// answered REFUSED in the call (at once, not at the deadline; Reply is the
// last one's). RETRY_AFTER, CLOCK_UNSAFE, NO_LEASE and a REFUSED while
// another responder can still be asked move the call on; at the deadline
// they are named in a *NoResponseError ("answered NO_LEASE").
type StatusError struct {
	Status uint8
	Reply  *Reply
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("flakewire: responder answered %s (status %d)", StatusName(e.Status), e.Status)
}

// InvalidReplyError: a reply failed validation; none of its IDs were used.
type InvalidReplyError struct{ Msg string }

func (e *InvalidReplyError) Error() string { return "flakewire: invalid reply: " + e.Msg }

// Options of a Client. Start from DefaultOptions().
type Options struct {
	// Timeout: a call's deadline (1 ms..60 s); 1 s. A call (one Get, one
	// refill of Next, one INFO, one request of GetN) returns or fails at
	// most Timeout after it started.
	Timeout time.Duration
	// HedgeMin: the floor of the hedge delay (0..100 ms); 2 ms. A call asks
	// the next responder too when the first has not answered within the
	// 99th percentile of the client's last 256 round trips (10 ms before
	// 16 of them), at least HedgeMin, at most 100 ms.
	HedgeMin time.Duration
	// HedgeBudgetPct: hedges allowed, in % of calls (0..100; 0: no
	// hedging); 5. A bucket of 10 hedges, full at New.
	HedgeBudgetPct int
	// Retries: no longer used: the deadline bounds a call. Accepted, ignored.
	Retries  int
	Prefetch int           // IDs fetched per refill by Next, 1..2^20; 1024
	LowWater int           // Next refills in the background below this, 0..2^20; 256
	Trusted  bool          // do not pad requests (a source the responder trusts); false
	UseRange bool          // prefetch with RANGE, else LIST; true
	MaxSkew  time.Duration // reject IDs further than this from the local clock; 0: off; 5 min
	// MaxAge: the longest Next keeps a prefetched ID (10 ms..1 h); 1 s. An
	// ID's time is when it was issued: older IDs are dropped (wasted, never
	// reused), so a buffer filled long ago never hands out old times.
	MaxAge time.Duration
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{Timeout: time.Second, HedgeMin: 2 * time.Millisecond, HedgeBudgetPct: 5,
		Retries: 3, Prefetch: 1024, LowWater: 256, UseRange: true, MaxSkew: 5 * time.Minute,
		MaxAge: time.Second}
}

// Stats counts what a client did: requests sent (hedges and resends
// included), resends after a timeout (T), RETRY_AFTER replies, moves to
// the next responder after a refusal or a status, ignored datagrams,
// refusals (ICMP port unreachable), hedges, and probes of unhealthy
// responders.
type Stats struct {
	Requests, Timeouts, RetryAfter, Failovers, Stray atomic.Uint64
	Refused, Hedges, Probes                          atomic.Uint64
}

type server struct {
	spec string
	addr *net.UDPAddr
	conn *net.UDPConn
}

// Client asks responders for IDs. Create it with New.
type Client struct {
	opts  Options
	srv   []*server
	Stats Stats
	done  chan struct{} // closed by Close

	pmu   sync.Mutex // guards pends
	pends map[uint64]*pending
	hmu   sync.Mutex // guards health
	// per responder, shared by every call (avail.go)
	health []health

	call      chan struct{} // the call lock: one call at a time; guards the fields below
	av        avail
	layout    *Layout
	infoDone  bool
	seen      map[uint32]uint64
	seenOrder []uint32
	lastUUID  map[uint32][16]byte
	lastReply *Reply

	// Read by every Next, written rarely: cache lines of their own.
	_      [64]byte
	closed atomic.Bool
	// the layout's SeqBits once known (0 before), read by startRefill under buf
	seqBits atomic.Uint32
	// advanced every MaxAge/ageTicks while Next is used
	epoch atomic.Uint64
	_     [64]byte

	buf        sync.Mutex // guards the pool and the fields below
	cond       *sync.Cond
	runs       []poolRun
	count      uint64
	refilling  bool
	gen        uint64
	refillErr  error
	ticking    bool
	idleTicks  int
	takes      uint64 // takes from the pool
	takesSeen  uint64
	starved    bool // a caller found the pool empty since the last refill
	want, low  int  // IDs per refill and the low-water mark now (adaptive)
	lastRefill time.Time
	uuids      [][16]byte
}

// Maximum age: IDs fetched at epoch e are handed out while the epoch is
// below e+ageTicks; the ticker stops after idleTicks ticks without a take
// (every buffered ID has expired by then). Refills grow up to growMax x
// Prefetch (with RANGE and a known layout up to growMaxRange x Prefetch and
// growSeqMs of a worker's IDs; never over 2^20) while callers drain the pool.
const (
	ageTicks     = 4
	idleTicks    = 2 * ageTicks
	growMax      = 64
	growMaxRange = 1024 // with RANGE (at most 2^20 IDs): fewer, larger refills
	growSeqMs    = 16   // ... and at most 16 ms of one worker's IDs (2^SeqBits a ms)
	stripeRanges = 8
)

type poolRun struct {
	Range
	epoch uint64
	at    time.Time
}

// stripe: the IDs one Sequence hands out without a lock, in the pool's order.
type stripe struct {
	runs  [stripeRanges]Range
	head  int
	n     int
	epoch uint64
}

func (s *stripe) take() uint64 {
	r := &s.runs[s.head]
	id := r.First
	r.First++
	r.N--
	if r.N == 0 {
		s.head++
		s.n--
	}
	return id
}

// ParseServer splits "HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare
// IPv6 address into host and port (default 4242).
func ParseServer(s string) (string, int, error) {
	host, port := s, DefaultPort
	var p string
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, &AddressError{s, "'[' without ']'"}
		}
		host = s[1:end]
		rest := s[end+1:]
		if strings.HasPrefix(rest, ":") {
			p = rest[1:]
			if p == "" {
				return "", 0, &AddressError{s, "empty port"}
			}
		} else if rest != "" {
			return "", 0, &AddressError{s, fmt.Sprintf("unexpected %q after ']'", rest)}
		}
	} else if strings.Count(s, ":") == 1 {
		i := strings.IndexByte(s, ':')
		host, p = s[:i], s[i+1:]
		if p == "" {
			return "", 0, &AddressError{s, "empty port"}
		}
	}
	if host == "" {
		return "", 0, &AddressError{s, "empty host"}
	}
	if p != "" {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 || v > 65535 || p[0] < '0' || p[0] > '9' {
			return "", 0, &AddressError{s, fmt.Sprintf("port %q not in 1..65535", p)}
		}
		port = v
	}
	return host, port, nil
}

// New creates a client for responders tried in the order given; opts nil
// means DefaultOptions(). It starts one goroutine per responder that reads
// its replies (and probes for unhealthy ones): they run until Close, so
// close a client you no longer use.
func New(servers []string, opts *Options) (*Client, error) {
	o := DefaultOptions()
	if opts != nil {
		o = *opts
	}
	switch {
	case len(servers) == 0:
		return nil, &AddressError{"", "at least one responder is needed"}
	case o.Timeout < time.Millisecond || o.Timeout > time.Minute:
		return nil, fmt.Errorf("flakewire: Timeout %v not in 1ms..1m", o.Timeout)
	case o.HedgeMin < 0 || o.HedgeMin > hedgeMax:
		return nil, fmt.Errorf("flakewire: HedgeMin %v not in 0s..100ms", o.HedgeMin)
	case o.HedgeBudgetPct < 0 || o.HedgeBudgetPct > 100:
		return nil, fmt.Errorf("flakewire: HedgeBudgetPct %d not in 0..100", o.HedgeBudgetPct)
	case o.Prefetch < 1 || o.Prefetch > 1<<20:
		return nil, fmt.Errorf("flakewire: Prefetch %d not in 1..%d", o.Prefetch, 1<<20)
	case o.LowWater < 0 || o.LowWater > 1<<20:
		return nil, fmt.Errorf("flakewire: LowWater %d not in 0..%d", o.LowWater, 1<<20)
	case o.MaxSkew < 0:
		return nil, fmt.Errorf("flakewire: MaxSkew %v is negative", o.MaxSkew)
	case o.MaxAge < 10*time.Millisecond || o.MaxAge > time.Hour:
		return nil, fmt.Errorf("flakewire: MaxAge %v not in 10ms..1h", o.MaxAge)
	}
	c := &Client{opts: o, seen: map[uint32]uint64{}, lastUUID: map[uint32][16]byte{},
		want: o.Prefetch, low: o.LowWater, done: make(chan struct{}), call: make(chan struct{}, 1),
		pends: map[uint64]*pending{}}
	c.av.tokens = budgetCap
	c.cond = sync.NewCond(&c.buf)
	for _, s := range servers {
		host, port, err := ParseServer(s)
		if err != nil {
			c.Close()
			return nil, err
		}
		addr, err := net.ResolveUDPAddr("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			c.Close()
			return nil, &ResolveError{s, err}
		}
		network := "udp4"
		if addr.IP.To4() == nil {
			network = "udp6"
		}
		// Connected: the kernel reports ICMP port unreachable as ECONNREFUSED.
		conn, err := net.DialUDP(network, nil, addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.srv = append(c.srv, &server{spec: s, addr: addr, conn: conn})
	}
	c.health = make([]health, len(c.srv))
	for i := range c.srv {
		go c.read(i)
	}
	return c, nil
}

// Close closes the sockets; every later call (and a caller waiting for a
// refill) fails with ErrClosed, and buffered IDs are dropped.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.done)
	for _, s := range c.srv {
		s.conn.Close()
	}
	c.buf.Lock()
	c.runs, c.count, c.uuids = nil, 0, nil
	c.cond.Broadcast()
	c.buf.Unlock()
	return nil
}

// Layout returns the responders' layout (for Layout.Decode and ReadUUID),
// asking the first responder of the order with an INFO request if no
// request has learnt it yet; never nil. A responder whose INFO carries no
// valid layout gives DefaultLayout.
func (c *Client) Layout() (Layout, error) { return c.LayoutContext(context.Background()) }

// LayoutContext is Layout with a context for the INFO request.
func (c *Client) LayoutContext(ctx context.Context) (Layout, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	if err := c.lockCall(ctx, deadline); err != nil {
		return Layout{}, err
	}
	defer c.unlockCall()
	if err := c.ensureLayout(ctx, deadline); err != nil {
		return Layout{}, err
	}
	if c.layout == nil {
		return DefaultLayout, nil
	}
	return *c.layout, nil
}

// LastReply is the header (and body) of the last reply accepted.
func (c *Client) LastReply() *Reply {
	c.call <- struct{}{}
	defer c.unlockCall()
	return c.lastReply
}

func (c *Client) adoptInfo(r *Reply) {
	i := r.Info
	l := Layout{i.EpochMs, i.TimeBits, i.DcBits, i.WorkerBits, i.SeqBits}
	if l.Validate() == nil && c.layout == nil {
		c.layout = &l
		c.seqBits.Store(uint32(l.SeqBits))
	}
	c.infoDone = true
}

// ensureLayout learns the layout with an INFO request (once), within the
// caller's deadline. Under the call lock.
func (c *Client) ensureLayout(ctx context.Context, deadline time.Time) error {
	if c.infoDone {
		return nil
	}
	r, err := c.exchange(ctx, deadline, OpInfo, 0)
	var se *StatusError
	if errors.As(err, &se) && se.Status != StRetryAfter {
		c.infoDone = true
		return nil
	}
	if err != nil {
		return err
	}
	c.adoptInfo(r)
	return nil
}

func (c *Client) checkID(id uint64, r *Reply, nowMs int64) error {
	if c.layout == nil {
		return nil
	}
	p, err := c.layout.Decode(id)
	if err != nil {
		return &InvalidReplyError{err.Error()}
	}
	if p.Datacenter != uint32(r.Datacenter) || p.Worker != uint32(r.Worker) {
		return &InvalidReplyError{fmt.Sprintf("ID %d names worker %d/%d, the reply %d/%d",
			id, p.Datacenter, p.Worker, r.Datacenter, r.Worker)}
	}
	skew := int64(p.UnixMs) - nowMs
	if c.opts.MaxSkew > 0 && (skew > c.opts.MaxSkew.Milliseconds() || -skew > c.opts.MaxSkew.Milliseconds()) {
		return &InvalidReplyError{fmt.Sprintf("ID %d is %d ms from this clock", id, skew)}
	}
	return nil
}

func (c *Client) validate(r *Reply, runs []Range, asked uint64) error {
	const int64Max = 1<<63 - 1
	nowMs := time.Now().UnixMilli()
	var total, prev uint64
	if len(runs) == 0 {
		return &InvalidReplyError{"OK reply without IDs"}
	}
	for i, x := range runs {
		if x.N == 0 || x.First == 0 || x.First > int64Max || uint64(x.N-1) > int64Max-x.First {
			return &InvalidReplyError{fmt.Sprintf("ID run %d+%d is not positive int64", x.First, x.N)}
		}
		last := x.First + uint64(x.N) - 1
		if i > 0 && x.First <= prev {
			return &InvalidReplyError{"IDs of a reply do not increase"}
		}
		if err := c.checkID(x.First, r, nowMs); err != nil {
			return err
		}
		if err := c.checkID(last, r, nowMs); err != nil {
			return err
		}
		prev = last
		total += uint64(x.N)
	}
	if total > asked {
		return &InvalidReplyError{fmt.Sprintf("%d IDs for %d asked", total, asked)}
	}
	key := uint32(r.Datacenter)<<16 | uint32(r.Worker)
	if last, ok := c.seen[key]; ok {
		if runs[0].First <= last {
			return &InvalidReplyError{fmt.Sprintf("ID %d not above %d from the same worker", runs[0].First, last)}
		}
	} else {
		c.seenOrder = append(c.seenOrder, key)
		if len(c.seenOrder) > workersTracked {
			delete(c.seen, c.seenOrder[0])
			c.seenOrder = c.seenOrder[1:]
		}
	}
	c.seen[key] = prev
	return nil
}

// fetch: one LIST or RANGE request, validated; under the call lock.
func (c *Client) fetch(ctx context.Context, deadline time.Time, useRange bool, want uint16) ([]Range, error) {
	if err := c.ensureLayout(ctx, deadline); err != nil {
		return nil, err
	}
	op := uint8(OpList)
	if useRange {
		op = OpRange
	}
	r, err := c.exchange(ctx, deadline, op, want)
	if err != nil {
		return nil, err
	}
	runs := r.Ranges
	if !useRange {
		runs = make([]Range, len(r.IDs))
		for i, id := range r.IDs {
			runs[i] = Range{id, 1}
		}
	}
	if err := c.validate(r, runs, uint64(want)); err != nil {
		return nil, err
	}
	return runs, nil
}

// Get returns one ID with one ID request (one round trip).
func (c *Client) Get() (uint64, error) { return c.GetContext(context.Background()) }

// GetContext is Get ending early with ctx.Err() when ctx is cancelled or
// its deadline passes (before Timeout's).
func (c *Client) GetContext(ctx context.Context) (uint64, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	if err := c.lockCall(ctx, deadline); err != nil {
		return 0, err
	}
	defer c.unlockCall()
	if err := c.ensureLayout(ctx, deadline); err != nil {
		return 0, err
	}
	r, err := c.exchange(ctx, deadline, OpID, 1)
	if err != nil {
		return 0, err
	}
	if err := c.validate(r, []Range{{r.IDs[0], 1}}, 1); err != nil {
		return 0, err
	}
	return r.IDs[0], nil
}

// GetN returns n IDs with LIST requests of at most 181 each, asking again
// while a responder answers PARTIAL; each request has its own deadline
// (Timeout). On error the IDs got so far are returned with it.
func (c *Client) GetN(n int) ([]uint64, error) {
	if n < 0 {
		return nil, fmt.Errorf("flakewire: n %d is negative", n)
	}
	out := make([]uint64, 0, n)
	ctx := context.Background()
	if err := c.lockCall(ctx, time.Now().Add(c.opts.Timeout)); err != nil {
		return nil, err
	}
	defer c.unlockCall()
	for len(out) < n {
		want := n - len(out)
		if want > ListMax {
			want = ListMax
		}
		runs, err := c.fetch(ctx, time.Now().Add(c.opts.Timeout), false, uint16(want))
		if err != nil {
			return out, err
		}
		for _, x := range runs {
			out = append(out, x.First)
		}
	}
	return out, nil
}

// GetRange returns up to want (1..65535) IDs as runs of consecutive IDs
// with one RANGE request; the responder may give fewer (PARTIAL).
func (c *Client) GetRange(want int) ([]Range, error) {
	if want < 1 || want > RangeIDsMax {
		return nil, fmt.Errorf("flakewire: want %d not in 1..%d", want, RangeIDsMax)
	}
	deadline := time.Now().Add(c.opts.Timeout)
	if err := c.lockCall(context.Background(), deadline); err != nil {
		return nil, err
	}
	defer c.unlockCall()
	return c.fetch(context.Background(), deadline, true, uint16(want))
}

// Info asks the first responder of the order for its INFO reply
// (Reply.Info holds the record); its layout is adopted for the ID checks
// if none was known.
func (c *Client) Info() (*Reply, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	if err := c.lockCall(context.Background(), deadline); err != nil {
		return nil, err
	}
	defer c.unlockCall()
	r, err := c.exchange(context.Background(), deadline, OpInfo, 0)
	if err != nil {
		return nil, err
	}
	c.adoptInfo(r)
	return r, nil
}

// UUID7 returns up to n (1..90) UUIDv7 with one UUID7 request (a
// responder may give fewer: PARTIAL), checked as the C client does:
// version 7, the RFC variant, strictly increasing and above the last UUID
// seen from that worker, a time near this clock, and, with the layout,
// flakewire's tag and the datacenter and worker the reply names.
func (c *Client) UUID7(n int) ([][16]byte, error) {
	if n < 1 || n > UUID7Max {
		return nil, fmt.Errorf("flakewire: n %d not in 1..%d", n, UUID7Max)
	}
	deadline := time.Now().Add(c.opts.Timeout)
	if err := c.lockCall(context.Background(), deadline); err != nil {
		return nil, err
	}
	defer c.unlockCall()
	if err := c.ensureLayout(context.Background(), deadline); err != nil {
		return nil, err
	}
	r, err := c.exchange(context.Background(), deadline, OpUUID7, uint16(n))
	if err != nil {
		return nil, err
	}
	if len(r.UUIDs) == 0 || len(r.UUIDs) > n {
		return nil, &InvalidReplyError{fmt.Sprintf("%d UUIDs for %d asked", len(r.UUIDs), n)}
	}
	l := DefaultLayout
	if c.layout != nil {
		l = *c.layout
	}
	nowMs := time.Now().UnixMilli()
	for i, u := range r.UUIDs {
		p := l.ReadUUID(u)
		if !p.IsV7 {
			return nil, &InvalidReplyError{FormatUUID(u) + " is not a UUIDv7"}
		}
		if c.layout != nil && (!p.Flakewire || p.Datacenter != uint32(r.Datacenter) || p.Worker != uint32(r.Worker)) {
			return nil, &InvalidReplyError{fmt.Sprintf("%s does not carry worker %d/%d", FormatUUID(u), r.Datacenter, r.Worker)}
		}
		if i > 0 && string(u[:]) <= string(r.UUIDs[i-1][:]) {
			return nil, &InvalidReplyError{"UUIDs of a reply do not increase"}
		}
		skew := int64(p.UnixMs) - nowMs
		if c.opts.MaxSkew > 0 && (skew > c.opts.MaxSkew.Milliseconds() || -skew > c.opts.MaxSkew.Milliseconds()) {
			return nil, &InvalidReplyError{fmt.Sprintf("UUID %s is %d ms from this clock", FormatUUID(u), skew)}
		}
	}
	key := uint32(r.Datacenter)<<16 | uint32(r.Worker)
	if last, ok := c.lastUUID[key]; ok && string(r.UUIDs[0][:]) <= string(last[:]) {
		return nil, &InvalidReplyError{"UUID not above the last one from that worker"}
	}
	if len(c.lastUUID) >= workersTracked {
		c.lastUUID = map[uint32][16]byte{}
	}
	c.lastUUID[key] = r.UUIDs[len(r.UUIDs)-1]
	return r.UUIDs, nil
}

// NextUUID7 returns one UUIDv7 from a small local buffer refilled 90 at a time.
func (c *Client) NextUUID7() ([16]byte, error) {
	if c.closed.Load() {
		return [16]byte{}, ErrClosed
	}
	c.buf.Lock()
	if len(c.uuids) > 0 {
		u := c.uuids[0]
		c.uuids = c.uuids[1:]
		c.buf.Unlock()
		return u, nil
	}
	c.buf.Unlock()
	got, err := c.UUID7(UUID7Max)
	if err != nil {
		return [16]byte{}, err
	}
	c.buf.Lock()
	c.uuids = append(c.uuids, got[1:]...)
	c.buf.Unlock()
	return got[0], nil
}

// refill fetches want IDs into the pool, each reply's as it arrives: one
// call, all its requests within one deadline.
func (c *Client) refill(want int) {
	per := RangeIDsMax
	if !c.opts.UseRange {
		per = ListMax
	}
	var err error
	deadline := time.Now().Add(c.opts.Timeout)
	for fetched := 0; fetched < want; {
		n := want - fetched
		if n > per {
			n = per
		}
		var runs []Range
		if err = c.lockCall(context.Background(), deadline); err != nil {
			break
		}
		runs, err = c.fetch(context.Background(), deadline, c.opts.UseRange, uint16(n))
		c.unlockCall()
		if err != nil {
			break
		}
		c.buf.Lock()
		if c.closed.Load() {
			c.buf.Unlock()
			err = ErrClosed
			break
		}
		e, now := c.epoch.Load(), time.Now()
		for _, x := range runs {
			if k := len(c.runs); k > 0 && c.runs[k-1].epoch == e &&
				c.runs[k-1].First+uint64(c.runs[k-1].N) == x.First && c.runs[k-1].N <= ^uint32(0)-x.N {
				c.runs[k-1].N += x.N
			} else {
				c.runs = append(c.runs, poolRun{x, e, now})
			}
			c.count += uint64(x.N)
			fetched += int(x.N)
		}
		c.cond.Broadcast()
		c.buf.Unlock()
	}
	c.buf.Lock()
	// After a failed refill the next may start at once: the health memory
	// makes it fast (no hold-off).
	c.refillErr = err
	c.refilling = false
	c.gen++
	c.cond.Broadcast()
	c.buf.Unlock()
}

// startRefill sizes the next refill as Leaf sizes its segments: doubled
// (up to the top the constants above give) when a caller found the pool empty since the
// last one, halved (down to Prefetch) when the last one lasted more than
// half of MaxAge; at the largest size the low-water mark doubles instead
// (up to two refills), so one refill is always in flight. Under c.buf.
func (c *Client) startRefill() {
	top := c.opts.Prefetch * growMax
	if seq := c.seqBits.Load(); c.opts.UseRange && seq > 0 {
		top = maxInt(top, minInt(c.opts.Prefetch*growMaxRange, growSeqMs<<seq))
	}
	if top > 1<<20 {
		top = maxInt(1<<20, c.opts.Prefetch)
	}
	now := time.Now()
	switch {
	case c.gen > 0 && c.starved && c.want < top:
		c.want = minInt(2*c.want, top)
		c.low = int(int64(c.want) * int64(c.opts.LowWater) / int64(c.opts.Prefetch))
	case c.gen > 0 && c.starved:
		c.low = minInt(maxInt(2*c.low, 1), 2*c.want)
	case c.gen > 0 && now.Sub(c.lastRefill) > c.opts.MaxAge/2:
		c.want = maxInt(c.want/2, c.opts.Prefetch)
		c.low = int(int64(c.want) * int64(c.opts.LowWater) / int64(c.opts.Prefetch))
	}
	c.lastRefill, c.starved, c.refilling = now, false, true
	n := c.want
	if c.opts.UseRange && n > RangeIDsMax {
		n -= n % RangeIDsMax // whole RANGE requests: 65,536 IDs would take a round trip for one
	}
	go c.refill(n)
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// dropExpired drops the pool's IDs older than MaxAge. Under c.buf.
func (c *Client) dropExpired(now time.Time) {
	e := c.epoch.Load()
	i := 0
	for ; i < len(c.runs); i++ {
		r := &c.runs[i]
		if r.epoch+ageTicks > e && now.Sub(r.at) < c.opts.MaxAge {
			break
		}
		c.count -= uint64(r.N)
	}
	c.runs = c.runs[i:]
}

// tick advances the epoch while Next is used, keeps the pool fresh and
// full, and ends after idleTicks ticks without a take.
// ensureTicking starts the ticker (the epoch that ages shares, the pool's
// upkeep) unless it runs. Under c.buf.
func (c *Client) ensureTicking() {
	if !c.ticking {
		c.ticking, c.idleTicks = true, 0
		go c.tick()
	}
}

func (c *Client) tick() {
	t := time.NewTicker(c.opts.MaxAge / ageTicks)
	defer t.Stop()
	for range t.C {
		c.buf.Lock()
		c.epoch.Add(1)
		if c.takes == c.takesSeen {
			c.idleTicks++
		} else {
			c.idleTicks = 0
		}
		c.takesSeen = c.takes
		now := time.Now()
		c.dropExpired(now)
		if c.closed.Load() || c.idleTicks >= idleTicks {
			c.ticking = false
			c.buf.Unlock()
			return
		}
		if c.count < uint64(c.low) && !c.refilling {
			c.startRefill()
		}
		c.buf.Unlock()
	}
}

// fill moves one caller's share of the pool (an eighth of a refill) to s. Under c.buf.
func (c *Client) fill(s *stripe) {
	want := uint64(c.want / 8)
	if want == 0 {
		want = 1
	}
	if want > RangeIDsMax {
		want = RangeIDsMax
	}
	s.head, s.n, s.epoch = 0, 0, ^uint64(0)
	for want > 0 && len(c.runs) > 0 && s.n < stripeRanges {
		h := &c.runs[0]
		k := uint64(h.N)
		if k > want {
			k = want
		}
		s.runs[s.n] = Range{First: h.First, N: uint32(k)}
		s.n++
		if h.epoch < s.epoch {
			s.epoch = h.epoch
		}
		h.First += k
		h.N -= uint32(k)
		c.count -= k
		want -= k
		if h.N == 0 {
			c.runs = c.runs[1:]
		}
	}
}

// Next returns one ID from the shared pool (under a lock: one order for
// every goroutine, so a goroutine's own IDs increase per responder worker).
// Below LowWater a refill of Prefetch IDs (grown while callers drain the
// pool faster) starts in a goroutine; callers wait only when the pool is
// empty, and then get the refill's error if it fails. IDs older than
// MaxAge are dropped. Many goroutines calling Next contend for the lock:
// give each its own Sequence to scale.
func (c *Client) Next() (uint64, error) { return c.NextContext(context.Background()) }

// NextContext is Next ending a wait for an empty buffer's refill with
// ctx.Err() when ctx is cancelled or its deadline passes (the refill goes
// on in the background for later calls).
func (c *Client) NextContext(ctx context.Context) (uint64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	c.buf.Lock()
	if c.count > 0 && c.ticking && c.runs[0].epoch+ageTicks > c.epoch.Load() {
		id := c.takePool()
		c.buf.Unlock()
		return id, nil
	}
	c.buf.Unlock()
	return c.nextSlow(ctx, nil)
}

// takePool takes the pool's first ID and starts a refill below the
// low-water mark. Under c.buf.
func (c *Client) takePool() uint64 {
	h := &c.runs[0]
	id := h.First
	h.First++
	h.N--
	if h.N == 0 {
		c.runs = c.runs[1:]
	}
	c.count--
	c.takes++
	if c.count < uint64(c.low) && !c.refilling {
		c.startRefill()
	}
	return id
}

// Sequence hands out IDs to one goroutine at a time (it is not safe for
// concurrent use): they increase per responder worker, in the order the
// pool got them. It takes a share of the pool (an eighth of a refill) at a
// time under the client's lock, then hands it out with no lock and no
// write shared with other goroutines, so N goroutines with a Sequence each
// get more IDs per second than one. Shares held by different Sequences are
// not ordered with each other (each at most MaxAge old); IDs are unique in
// any case. Get one per goroutine from Client.Sequence; it shares the
// client's pool, refills, MaxAge and Close.
type Sequence struct {
	c *Client
	s stripe
}

// Sequence returns a new Sequence over c's pool.
func (c *Client) Sequence() *Sequence { return &Sequence{c: c} }

// Next is Client.Next with the order kept for this Sequence's caller.
func (q *Sequence) Next() (uint64, error) { return q.NextContext(context.Background()) }

// NextContext is Client.NextContext with the order kept for this Sequence's caller.
func (q *Sequence) NextContext(ctx context.Context) (uint64, error) {
	c := q.c
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if q.s.n > 0 && q.s.epoch+ageTicks > c.epoch.Load() {
		return q.s.take(), nil
	}
	return c.nextSlow(ctx, &q.s)
}

// nextSlow refills s from the pool (s nil: takes one ID from the pool),
// waiting for a refill only when the pool is empty.
func (c *Client) nextSlow(ctx context.Context, s *stripe) (uint64, error) {
	if s != nil {
		s.head, s.n = 0, 0 // empty or expired: these IDs are wasted, never reused
	}
	c.buf.Lock()
	defer c.buf.Unlock()
	if ctx.Done() != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-ctx.Done():
				c.buf.Lock()
				c.cond.Broadcast()
				c.buf.Unlock()
			case <-stop:
			}
		}()
	}
	c.takes++
	c.ensureTicking()
	waited := false
	var gen uint64
	for {
		if c.closed.Load() {
			return 0, ErrClosed
		}
		c.dropExpired(time.Now())
		if c.count > 0 && s == nil {
			return c.takePool(), nil
		}
		if c.count > 0 {
			// the ticker may have ended idle while this caller waited out a long
			// refill: without it the epoch stands still and the share never expires
			c.ensureTicking()
			c.fill(s)
			if c.count < uint64(c.low) && !c.refilling {
				c.startRefill()
			}
			return s.take(), nil
		}
		if waited && c.gen != gen && c.refillErr != nil {
			return 0, c.refillErr
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		c.starved = true
		if !c.refilling {
			c.startRefill()
		}
		gen = c.gen
		waited = true
		c.cond.Wait()
	}
}

// NextString is Next as a decimal string (for JSON and JavaScript).
func (c *Client) NextString() (string, error) {
	id, err := c.Next()
	if err != nil {
		return "", err
	}
	return strconv.FormatUint(id, 10), nil
}

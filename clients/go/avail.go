// SPDX-License-Identifier: BSD-3-Clause

package flakewire

// The availability contract (doc/clients.md, "Availability: deadlines,
// hedging, health"): which responder a call asks, when it asks another
// (a failover, a hedge, a resend after a timeout), and what the client
// remembers of each responder between calls (health, RETRY_AFTER
// hold-offs, round trips, the hedge budget). client.go calls it; it calls
// nothing of client.go but the socket and the counters.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	probeEvery    = 100 * time.Millisecond // an unhealthy responder is asked INFO this often
	sickResendGap = 10 * time.Millisecond  // resends to a responder not healthy, at most this often
	hedgeCold     = 10 * time.Millisecond  // the hedge delay before rttMin round trips
	hedgeMax      = 100 * time.Millisecond
	resendMin     = 50 * time.Millisecond // T = max(4 d, 50 ms)
	rttWindow     = 256                   // successful round trips kept (µs)
	rttMin        = 16
	rttEvery      = 64        // the 99th percentile is recomputed every rttEvery samples
	budgetCap     = 10 * 1000 // hedge tokens, in thousandths
	hedgeCost     = 1000      // one hedge
	retryAfterMin = time.Millisecond
)

// statusHold: a responder unhealthy for a status (NO_LEASE, CLOCK_UNSAFE,
// REFUSED) is not probed before this has passed since its last such status.
// It answers INFO, so a probe would make it healthy again at once, and every
// call would ask it first only to hear the status again.
const statusHold = time.Second

// event: what happened to a pending request at responder srv: a reply, or
// (reply nil) a refusal (ICMP port unreachable) or, err set, a failed send.
type event struct {
	srv   int
	reply *Reply
	at    time.Time
	err   error
}

// pending: a request in flight under tag (a call's, or a probe's).
type pending struct {
	op   uint8
	ch   chan event
	sent []bool // responders sent this tag; under Client.pmu
}

// health: what every call of the client shares about one responder; under Client.hmu.
type health struct {
	sick       bool      // refused, a bad status, or silent while another answered (or to the deadline)
	holdUntil  time.Time // RETRY_AFTER: not asked before (unless nothing else is eligible)
	probeAfter time.Time // its last status + statusHold: not probed before
	probing    bool      // a probe goroutine runs for it
}

// avail: the per-client state of the contract that calls share; guarded
// by the call lock (one call at a time), the health by hmu.
type avail struct {
	rtt     [rttWindow]uint32 // µs, a ring
	rttN    uint64
	hedgeD  time.Duration // the hedge delay d, recomputed every rttEvery samples
	tokens  int           // the hedge budget, thousandths of a token
	orderAt []int         // scratch for order
}

// newTag returns a random 64-bit tag.
func newTag() (uint64, error) {
	var tb [8]byte
	if _, err := rand.Read(tb[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(tb[:]), nil
}

func (c *Client) register(tag uint64, op uint8) *pending {
	p := &pending{op: op, ch: make(chan event, 4*len(c.srv)+8), sent: make([]bool, len(c.srv))}
	c.pmu.Lock()
	c.pends[tag] = p
	c.pmu.Unlock()
	return p
}

func (c *Client) unregister(tag uint64) {
	c.pmu.Lock()
	delete(c.pends, tag)
	c.pmu.Unlock()
}

// deliver hands ev to the request under tag if it was sent to ev.srv and
// is of op (any op for a refusal); false: nobody waits for it.
func (c *Client) deliver(tag uint64, op uint8, ev event) bool {
	c.pmu.Lock()
	p := c.pends[tag]
	ok := p != nil && p.sent[ev.srv] && p.op == op
	c.pmu.Unlock()
	if !ok {
		return false
	}
	select {
	case p.ch <- ev:
	default: // the call has more events than it reads: drop (a resend will tell again)
	}
	return true
}

// read is responder i's reader: it runs from New to Close and hands each
// valid reply to the request waiting for its tag, and a refusal to every
// request sent there.
func (c *Client) read(i int) {
	s := c.srv[i]
	b := make([]byte, 2048)
	for {
		n, from, err := s.conn.ReadFromUDP(b)
		if err != nil {
			if c.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				ev := event{srv: i, at: time.Now()}
				c.pmu.Lock()
				for _, p := range c.pends {
					if p.sent[i] {
						select {
						case p.ch <- ev:
						default:
						}
					}
				}
				c.pmu.Unlock()
				continue
			}
			time.Sleep(time.Millisecond) // an unexpected error: never spin on it
			continue
		}
		at := time.Now()
		if !from.IP.Equal(s.addr.IP) || from.Port != s.addr.Port {
			c.Stats.Stray.Add(1)
			continue
		}
		r, err := ParseReply(b[:n])
		if err != nil {
			var we *WireError
			if errors.As(err, &we) && we.Reason == "version" {
				c.pmu.Lock()
				p := c.pends[we.Tag]
				c.pmu.Unlock()
				if p != nil && c.deliver(we.Tag, p.op,
					event{srv: i, reply: &Reply{Op: p.op | OpReply, Status: StBadVersion, Tag: we.Tag}, at: at}) {
					continue
				}
			}
			c.Stats.Stray.Add(1)
			continue
		}
		if !c.deliver(r.Tag, r.Op&^OpReply, event{srv: i, reply: r, at: at}) {
			c.Stats.Stray.Add(1)
		}
	}
}

// order: eligible responders (healthy, no hold-off) in configured order,
// then held-off ones (earliest hold_until first), then unhealthy ones.
func (c *Client) order(now time.Time) []int {
	o := c.av.orderAt[:0]
	c.hmu.Lock()
	defer c.hmu.Unlock()
	for i := range c.srv {
		if h := &c.health[i]; !h.sick && !h.holdUntil.After(now) {
			o = append(o, i)
		}
	}
	k := len(o)
	for i := range c.srv {
		if h := &c.health[i]; !h.sick && h.holdUntil.After(now) {
			o = append(o, i)
		}
	}
	held := o[k:]
	sort.SliceStable(held, func(a, b int) bool {
		return c.health[held[a]].holdUntil.Before(c.health[held[b]].holdUntil)
	})
	for i := range c.srv {
		if c.health[i].sick {
			o = append(o, i)
		}
	}
	c.av.orderAt = o
	return o
}

// heldOff: healthy, held off by RETRY_AFTER at now.
func (c *Client) heldOff(i int, now time.Time) bool {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	h := &c.health[i]
	return !h.sick && h.holdUntil.After(now)
}

func (c *Client) eligible(i int, now time.Time) bool {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	h := &c.health[i]
	return !h.sick && !h.holdUntil.After(now)
}

// markSick notes responder i unhealthy and starts its probe unless one runs.
func (c *Client) markSick(i int) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	h := &c.health[i]
	h.sick = true
	if !h.probing && !c.closed.Load() {
		h.probing = true
		go c.probe(i)
	}
}

// markStatus notes responder i unhealthy for a status it answered at
// (NO_LEASE, CLOCK_UNSAFE, REFUSED): not probed before at + statusHold.
func (c *Client) markStatus(i int, at time.Time) {
	c.hmu.Lock()
	c.health[i].probeAfter = at.Add(statusHold)
	c.hmu.Unlock()
	c.markSick(i)
}

func (c *Client) markHealthy(i int) {
	c.hmu.Lock()
	c.health[i].sick = false
	c.hmu.Unlock()
}

// markIssued: responder i answered OK: healthy, and an older status no longer holds its probe.
func (c *Client) markIssued(i int) {
	c.hmu.Lock()
	c.health[i].sick = false
	c.health[i].probeAfter = time.Time{}
	c.hmu.Unlock()
}

// probeAnswered: a valid INFO reply to a probe makes responder i healthy,
// unless a status it answered since holds it.
func (c *Client) probeAnswered(i int) {
	c.hmu.Lock()
	if h := &c.health[i]; !h.probeAfter.After(time.Now()) {
		h.sick = false
	}
	c.hmu.Unlock()
}

func (c *Client) hold(i int, until time.Time) {
	c.hmu.Lock()
	c.health[i].holdUntil = until
	c.hmu.Unlock()
}

// Healthy reports whether the client holds responder i (0..len(servers)-1,
// in the order given to New) healthy: not refused, not silent while another answered, no bad
// status since its last valid INFO reply to a probe. A responder unhealthy for a status
// (NO_LEASE, CLOCK_UNSAFE, REFUSED) is first probed 1 s after it.
func (c *Client) Healthy(i int) bool {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	return !c.health[i].sick
}

// probe asks unhealthy responder i INFO every probeEvery (not before its
// probeAfter) until a valid reply marks it healthy, or Close. It never
// takes the call lock.
func (c *Client) probe(i int) {
	s := c.srv[i]
	next := time.Now().Add(probeEvery)
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-c.done:
			t.Stop()
			c.endProbe(i)
			return
		case <-t.C:
		}
		c.hmu.Lock()
		if !c.health[i].sick || c.closed.Load() {
			c.health[i].probing = false
			c.hmu.Unlock()
			return
		}
		after := c.health[i].probeAfter
		c.hmu.Unlock()
		if after.After(time.Now()) {
			next = after // held by its status
			continue
		}
		tag, err := newTag()
		if err != nil {
			next = time.Now().Add(probeEvery)
			continue
		}
		p := c.register(tag, OpInfo)
		c.pmu.Lock()
		p.sent[i] = true
		c.pmu.Unlock()
		next = time.Now().Add(probeEvery)
		if _, err := s.conn.Write(EncodeRequest(OpInfo, 0, tag, !c.opts.Trusted, 12)); err == nil {
			c.Stats.Probes.Add(1)
			t := time.NewTimer(time.Until(next))
		wait:
			for {
				select {
				case ev := <-p.ch:
					if ev.reply == nil {
						break wait // refused: still unhealthy
					}
					if ev.reply.Status == StOK && ev.reply.Info != nil {
						c.probeAnswered(i)
						break wait
					}
				case <-t.C:
					break wait
				case <-c.done:
					break wait
				}
			}
			t.Stop()
		}
		c.unregister(tag)
	}
}

func (c *Client) endProbe(i int) {
	c.hmu.Lock()
	c.health[i].probing = false
	c.hmu.Unlock()
}

// hedgeDelay is d: the 99th percentile of the last 256 round trips, in
// hedgeMin..100 ms; 10 ms before 16 round trips. Under the call lock.
func (c *Client) hedgeDelay() time.Duration {
	if c.av.rttN < rttMin {
		return hedgeCold
	}
	return c.av.hedgeD
}

// noteRTT records a successful round trip and recomputes d every rttEvery
// samples (and at the rttMin-th): never a sort per call. Under the call lock.
func (c *Client) noteRTT(rtt time.Duration) {
	us := rtt.Microseconds()
	if us < 0 {
		us = 0
	}
	if us > 1<<31 {
		us = 1 << 31
	}
	c.av.rtt[c.av.rttN%rttWindow] = uint32(us)
	c.av.rttN++
	if n := c.av.rttN; n != rttMin && n%rttEvery != 0 {
		return
	}
	n := int(c.av.rttN)
	if n > rttWindow {
		n = rttWindow
	}
	w := make([]uint32, n)
	copy(w, c.av.rtt[:n])
	sort.Slice(w, func(a, b int) bool { return w[a] < w[b] })
	k := (99*n + 99) / 100 // ceil(0.99 n)
	d := time.Duration(w[k-1]) * time.Microsecond
	if d < c.opts.HedgeMin {
		d = c.opts.HedgeMin
	}
	if d > hedgeMax {
		d = hedgeMax
	}
	c.av.hedgeD = d
}

// callSrv: what one call did with one responder.
type callSrv struct {
	sends    int
	first    time.Time // its first send in this call
	waiting  time.Time // its first send since its last answer; zero: none outstanding
	answered bool      // any valid reply in this call
	lastSent time.Time
	what     string // the last thing it did ("refused", "RETRY_AFTER 900 ms", "answered NO_LEASE")
	refused  bool   // answered REFUSED in this call
}

// statusWord names a status in the error text: "NO_LEASE".
func statusWord(st uint8) string {
	return strings.ToUpper(strings.ReplaceAll(StatusName(st), "-", "_"))
}

// exchange is one call's request (the contract's "One call"): the first
// responder in the order, a failover at once on a refusal, NO_LEASE,
// CLOCK_UNSAFE, REFUSED or RETRY_AFTER, a hedge after d under the budget,
// a resend after T; an error at the deadline naming what each responder
// did. A *StatusError at once on BAD_REQUEST or BAD_VERSION, or when every
// responder answered REFUSED (the contract's "Statuses"). Holds the call lock.
func (c *Client) exchange(ctx context.Context, deadline time.Time, op uint8, count uint16) (*Reply, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tag, err := newTag()
	if err != nil {
		return nil, err
	}
	// RANGE pads for 2^seq_bits IDs per range once INFO gave the layout.
	seq := 12
	if c.layout != nil {
		seq = int(c.layout.SeqBits)
	}
	req := EncodeRequest(op, count, tag, !c.opts.Trusted, seq)
	p := c.register(tag, op)
	defer c.unregister(tag)

	hedging := c.opts.HedgeBudgetPct > 0
	if hedging {
		if c.av.tokens += 10 * c.opts.HedgeBudgetPct; c.av.tokens > budgetCap {
			c.av.tokens = budgetCap
		}
	}
	d := c.hedgeDelay()
	T := 4 * d
	if T < resendMin {
		T = resendMin
	}
	n := len(c.srv)
	st := make([]callSrv, n)
	var tried []int          // in the order of their first send
	cycle := make([]bool, n) // sent in the current round of the order
	var last time.Time       // the last send
	plan, planAt := -1, time.Time{}

	// next: the next responder of the order (recomputed) not yet sent in
	// this round, or one held off by RETRY_AFTER even if this round asked it
	// (a RETRY_AFTER also takes it out of the round: asked again when its
	// hint ends, before the unhealthy ones, not after a silent one's resend
	// timer); a new round when every one was.
	next := func(now time.Time) int {
		o := c.order(now)
		for _, i := range o {
			if !cycle[i] || c.heldOff(i, now) {
				return i
			}
		}
		for i := range cycle {
			cycle[i] = false
		}
		return o[0]
	}
	// hedgeTo: the next eligible responder not yet sent in this round, or -1.
	hedgeTo := func(now time.Time) int {
		for _, i := range c.order(now) {
			if !cycle[i] && c.eligible(i, now) {
				return i
			}
		}
		return -1
	}
	// schedule sends to i now, or when its hold-off ends (nothing else is
	// eligible), or sickResendGap after the call's last send to it when it
	// is unhealthy (a refused lone responder: every 10 ms).
	schedule := func(i int, now time.Time) {
		at := now
		c.hmu.Lock()
		h := c.health[i]
		c.hmu.Unlock()
		if h.holdUntil.After(at) {
			at = h.holdUntil
		}
		if h.sick && st[i].sends > 0 && st[i].lastSent.Add(sickResendGap).After(at) {
			at = st[i].lastSent.Add(sickResendGap)
		}
		cycle[i] = true
		plan, planAt = i, at
	}
	send := func(i int, now time.Time) error {
		c.pmu.Lock()
		p.sent[i] = true
		c.pmu.Unlock()
		s := &st[i]
		if s.sends == 0 {
			s.first = now
			tried = append(tried, i)
		}
		s.sends++
		s.lastSent, last = now, now
		if s.waiting.IsZero() {
			s.waiting = now
		}
		cycle[i] = true
		c.Stats.Requests.Add(1)
		if _, err := c.srv[i].conn.Write(req); err != nil {
			if c.closed.Load() {
				return ErrClosed
			}
			// A refusal the socket noted before this send, or no route.
			ev := event{srv: i, at: now}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				ev.err = err
			}
			select {
			case p.ch <- ev:
			default:
			}
		}
		return nil
	}
	failover := func(now time.Time) {
		c.Stats.Failovers.Add(1)
		schedule(next(now), now)
		if T < c.opts.Timeout {
			T *= 2
		}
	}

	schedule(c.order(time.Now())[0], time.Now())
	for {
		now := time.Now()
		if plan >= 0 && !now.Before(planAt) && now.Before(deadline) {
			if err := send(plan, now); err != nil {
				return nil, err
			}
			plan = -1
			continue
		}
		if !now.Before(deadline) {
			if plan >= 0 && st[plan].sends == 0 { // held off past the deadline, never asked
				tried = append(tried, plan)
				st[plan].what = "held off by RETRY_AFTER past the deadline"
			}
			return nil, c.noResponse(st, tried, deadline)
		}
		wake := deadline
		if plan >= 0 {
			if planAt.Before(wake) {
				wake = planAt
			}
		} else {
			if hedging && c.av.tokens >= hedgeCost {
				if !now.Before(last.Add(d)) {
					if i := hedgeTo(now); i >= 0 {
						c.av.tokens -= hedgeCost
						c.Stats.Hedges.Add(1)
						if err := send(i, now); err != nil {
							return nil, err
						}
						continue
					}
				} else if hedgeTo(now) >= 0 && last.Add(d).Before(wake) {
					wake = last.Add(d)
				}
			}
			if !now.Before(last.Add(T)) {
				c.Stats.Timeouts.Add(1)
				schedule(next(now), now)
				if T < c.opts.Timeout {
					T *= 2
				}
				continue
			}
			if last.Add(T).Before(wake) {
				wake = last.Add(T)
			}
		}
		timer := time.NewTimer(wake.Sub(now))
		var ev event
		got := false
		select {
		case ev = <-p.ch:
			got = true
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-c.done:
			timer.Stop()
			return nil, ErrClosed
		}
		timer.Stop()
		if !got {
			continue
		}
		s := &st[ev.srv]
		s.waiting = time.Time{}
		r := ev.reply
		if r == nil {
			if ev.err != nil {
				s.what = "send failed: " + ev.err.Error()
			} else {
				c.Stats.Refused.Add(1)
				s.what = "refused"
			}
			c.markSick(ev.srv)
			if plan < 0 {
				failover(ev.at)
			}
			continue
		}
		s.answered = true
		c.lastReply = r
		switch r.Status {
		case StOK:
			c.markIssued(ev.srv)
			if s.sends == 1 { // Karn: a round trip only when the send it answers is known
				c.noteRTT(ev.at.Sub(s.first))
			}
			for i := range st {
				if st[i].sends > 0 && !st[i].answered && i != ev.srv {
					c.markSick(i) // lost the race to another responder
				}
			}
			return r, nil
		case StRetryAfter:
			c.Stats.RetryAfter.Add(1)
			c.markHealthy(ev.srv)
			h := time.Duration(r.RetryAfterUs) * time.Microsecond
			if h < retryAfterMin {
				h = retryAfterMin
			}
			if h > RetryAfterMax {
				h = RetryAfterMax
			}
			c.hold(ev.srv, ev.at.Add(h))
			cycle[ev.srv] = false // out of this round (see next)
			s.what = fmt.Sprintf("RETRY_AFTER %d ms", (r.RetryAfterUs+500)/1000)
			if plan < 0 || plan == ev.srv {
				failover(ev.at)
			}
		case StClockUnsafe, StNoLease, StRefused:
			c.markStatus(ev.srv, ev.at)
			s.what = "answered " + statusWord(r.Status)
			s.refused = s.refused || r.Status == StRefused
			if allRefused(st) {
				return nil, &StatusError{r.Status, r}
			}
			if plan < 0 || plan == ev.srv {
				failover(ev.at)
			}
		default: // BAD_REQUEST, BAD_VERSION: another responder would say the same
			return nil, &StatusError{r.Status, r}
		}
	}
}

// allRefused: every responder of the client answered REFUSED in this call.
func allRefused(st []callSrv) bool {
	for i := range st {
		if !st[i].refused {
			return false
		}
	}
	return true
}

// noResponse is the deadline's error: what each responder did, in the
// order first asked; those still silent are marked unhealthy.
func (c *Client) noResponse(st []callSrv, tried []int, deadline time.Time) error {
	out := make([]string, 0, len(tried))
	for _, i := range tried {
		s := &st[i]
		what := s.what
		// Silence is what it did unless it answered, refused or failed a send
		// and was asked again less than resendMin ago (a lone responder's
		// NO_LEASE, resent every 10 ms, stays "answered NO_LEASE").
		if quiet := deadline.Sub(s.waiting); !s.waiting.IsZero() && (what == "" || quiet >= resendMin) {
			what = fmt.Sprintf("no reply in %d ms", (quiet+time.Millisecond/2)/time.Millisecond)
		}
		if !s.waiting.IsZero() && !s.answered {
			c.markSick(i)
		}
		out = append(out, c.srv[i].spec+": "+what)
	}
	return &NoResponseError{Tried: out}
}

// lockCall takes the call lock by deadline (a call waiting behind another
// waits at most its own deadline), or fails: ctx's error, ErrClosed, or a
// *NoResponseError naming no responder.
func (c *Client) lockCall(ctx context.Context, deadline time.Time) error {
	select {
	case c.call <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case c.call <- struct{}{}:
		return nil
	case <-t.C:
		return &NoResponseError{}
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
}

func (c *Client) unlockCall() { <-c.call }

// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import (
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Live tests against the responders tests/clients/live.sh starts; skipped
// when its environment is absent.

func liveEnv(t *testing.T, keys ...string) []string {
	var out []string
	for _, k := range keys {
		v := os.Getenv(k)
		if v == "" {
			t.Skipf("%s unset: run by tests/clients/live.sh", k)
		}
		out = append(out, v)
	}
	return out
}

func mustNew(t *testing.T, servers []string, o Options) *Client {
	c, err := New(servers, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// take runs threads goroutines of each Next calls; all IDs, per caller order kept.
func take(t *testing.T, c *Client, threads, each int) [][]uint64 {
	return takeWith(t, threads, each, func() func() (uint64, error) { return c.Next })
}

// takeSeq is take with a Sequence per goroutine.
func takeSeq(t *testing.T, c *Client, threads, each int) [][]uint64 {
	return takeWith(t, threads, each, func() func() (uint64, error) { return c.Sequence().Next })
}

func takeWith(t *testing.T, threads, each int, next func() func() (uint64, error)) [][]uint64 {
	out := make([][]uint64, threads)
	var wg sync.WaitGroup
	for k := range out {
		wg.Add(1)
		go func(k int, next func() (uint64, error)) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id, err := next()
				if err != nil {
					t.Error(err)
					return
				}
				out[k] = append(out[k], id)
			}
		}(k, next())
	}
	wg.Wait()
	return out
}

func uniqueWorkers(t *testing.T, c *Client, all [][]uint64, seen map[uint64]bool) map[uint32]bool {
	w := map[uint32]bool{}
	for _, o := range all {
		for _, id := range o {
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
			p, err := mustLayout(t, c).Decode(id)
			if err != nil {
				t.Fatal(err)
			}
			w[p.Worker] = true
		}
	}
	return w
}

func TestLiveLoop(t *testing.T) {
	env := liveEnv(t, "FW_TRUSTED", "FW_UNTRUSTED", "FW_FEWSEQ", "FW_DEAD")
	trusted, untrusted, fewseq, dead := env[0], env[1], env[2], env[3]
	o := DefaultOptions()

	t.Run("info and one-shot calls", func(t *testing.T) {
		c := mustNew(t, []string{trusted}, o)
		r, err := c.Info()
		if err != nil || r.Worker != 11 || r.Info.SeqBits != 12 || r.Info.EpochMs != DefaultEpochMs {
			t.Fatalf("%+v %v", r, err)
		}
		a, err := c.Get()
		if err != nil {
			t.Fatal(err)
		}
		ids, err := c.GetN(500)
		if err != nil || len(ids) != 500 || ids[0] <= a {
			t.Fatalf("%d %v", len(ids), err)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatal("LIST IDs not increasing")
			}
		}
		runs, err := c.GetRange(5000)
		total := 0
		for _, x := range runs {
			total += int(x.N)
		}
		if err != nil || total < 1 || total > 5000 || runs[0].First <= ids[499] {
			t.Fatalf("%v %d", err, total)
		}
	})
	t.Run("untrusted padded gets full answers", func(t *testing.T) {
		c := mustNew(t, []string{untrusted}, o)
		ids, err := c.GetN(181)
		if err != nil || len(ids) != 181 || c.LastReply().Count != 181 || c.LastReply().Flags&FlagPartial != 0 {
			t.Fatalf("%d %v", len(ids), err)
		}
		if p, _ := mustLayout(t, c).Decode(ids[0]); p.Worker != 12 {
			t.Fatal("worker")
		}
	})
	t.Run("untrusted unpadded is refused", func(t *testing.T) {
		u := o
		u.Trusted = true
		c := mustNew(t, []string{untrusted}, u)
		_, err := c.Get()
		if se, ok := err.(*StatusError); !ok || se.Status != StRefused {
			t.Fatalf("%v", err)
		}
	})
	t.Run("concurrent Next unique and valid", func(t *testing.T) {
		u := o
		u.Prefetch, u.LowWater = 512, 128
		c := mustNew(t, []string{trusted}, u)
		all := take(t, c, 8, 1250)
		for _, x := range all {
			for i := 1; i < len(x); i++ {
				if x[i] <= x[i-1] {
					t.Fatal("one caller's IDs not increasing")
				}
			}
		}
		seen := map[uint64]bool{}
		if w := uniqueWorkers(t, c, all, seen); len(seen) != 10000 || len(w) != 1 || !w[11] {
			t.Fatalf("%d IDs, workers %v", len(seen), w)
		}
	})
	t.Run("concurrent Sequences increasing, unique and valid", func(t *testing.T) {
		u := o
		u.Prefetch, u.LowWater = 512, 128
		c := mustNew(t, []string{trusted}, u)
		all := takeSeq(t, c, 8, 1250)
		for _, x := range all {
			for i := 1; i < len(x); i++ {
				if x[i] <= x[i-1] {
					t.Fatal("one caller's IDs not increasing")
				}
			}
		}
		seen := map[uint64]bool{}
		if w := uniqueWorkers(t, c, all, seen); len(seen) != 10000 || len(w) != 1 || !w[11] {
			t.Fatalf("%d IDs, workers %v", len(seen), w)
		}
		if s, err := c.NextString(); err != nil || s == "" {
			t.Fatal(err)
		}
	})
	t.Run("PARTIAL and RETRY_AFTER with one sequence bit", func(t *testing.T) {
		// First, before any background refill competes for the 2 IDs per ms.
		c := mustNew(t, []string{fewseq}, o)
		runs, err := c.GetRange(4096)
		if err != nil || c.LastReply().Flags&FlagPartial == 0 || len(runs) == 0 {
			t.Fatalf("%v", err)
		}
		u := o
		u.Prefetch, u.LowWater = 200, 50
		c = mustNew(t, []string{fewseq}, u)
		all := take(t, c, 3, 100)
		seen := map[uint64]bool{}
		uniqueWorkers(t, c, all, seen)
		if len(seen) != 300 || mustLayout(t, c).SeqBits != 1 || c.Stats.RetryAfter.Load() == 0 {
			t.Fatalf("%d IDs, retry_after %d", len(seen), c.Stats.RetryAfter.Load())
		}
	})
	t.Run("UUID7 trusted, untrusted padded, unpadded refused", func(t *testing.T) {
		for addr, worker := range map[string]uint32{trusted: 11, untrusted: 12} {
			c := mustNew(t, []string{addr}, o)
			if r, err := c.Info(); err != nil || !r.Info.SupportsUUID7() {
				t.Fatalf("INFO features: %v", err)
			}
			us, err := c.UUID7(90)
			if err != nil || len(us) != 90 || c.LastReply().Count != 90 {
				t.Fatalf("%d %v", len(us), err)
			}
			seen := map[[16]byte]bool{}
			for _, u := range us {
				seen[u] = true
				if p := mustLayout(t, c).ReadUUID(u); !p.Flakewire || p.Worker != worker {
					t.Fatalf("%s: %+v", FormatUUID(u), p)
				}
			}
			for i := 0; i < 200; i++ {
				u, err := c.NextUUID7()
				if err != nil || seen[u] {
					t.Fatalf("%v dup %v", err, seen[u])
				}
				seen[u] = true
			}
		}
		u := o
		u.Trusted = true
		c := mustNew(t, []string{untrusted}, u)
		if _, err := c.UUID7(1); err == nil || err.(*StatusError).Status != StRefused {
			t.Fatalf("%v", err)
		}
	})
	t.Run("IPv6 loopback", func(t *testing.T) {
		v6 := os.Getenv("FW_V6")
		if v6 == "" {
			t.Skip("no IPv6 loopback")
		}
		c := mustNew(t, []string{v6}, o)
		ids, err := c.GetN(181)
		if err != nil || len(ids) != 181 {
			t.Fatalf("%d %v", len(ids), err)
		}
		if p, _ := mustLayout(t, c).Decode(ids[0]); p.Worker != 14 {
			t.Fatalf("worker %d", p.Worker)
		}
	})
	t.Run("failover from a dead responder", func(t *testing.T) {
		u := o
		u.Timeout = 50 * time.Millisecond
		c := mustNew(t, []string{dead, trusted}, u)
		for i := 0; i < 10; i++ {
			if _, err := c.Next(); err != nil {
				t.Fatal(err)
			}
		}
		// The dead port answers ICMP port unreachable: failover at once.
		if c.Stats.Failovers.Load() < 1 || c.Stats.Refused.Load() < 1 {
			t.Fatalf("failovers %d refused %d timeouts %d", c.Stats.Failovers.Load(),
				c.Stats.Refused.Load(), c.Stats.Timeouts.Load())
		}
	})
}

func TestLiveTap(t *testing.T) {
	env := liveEnv(t, "FW_TAP", "FW_TAP_BACKUP", "FW_TAP_PID")
	o := DefaultOptions()
	// MaxAge 200 ms: after the kill, the IDs the pool still holds from
	// flakewire (a refill grows while callers drain it) expire, so the next
	// ones must come from the backup.
	o.Prefetch, o.LowWater, o.MaxAge = 256, 64, 200*time.Millisecond
	// UUIDv7 from flakewire alone (with the backup configured, a hedge or a
	// RETRY_AFTER may take any call to it).
	u1 := mustNew(t, env[:1], o)
	us := map[[16]byte]bool{}
	for i := 0; i < 300; i++ {
		u, err := u1.NextUUID7()
		if err != nil || us[u] || mustLayout(t, u1).ReadUUID(u).Worker != 21 {
			t.Fatalf("UUID7 over TAP: %v", err)
		}
		us[u] = true
	}
	// Issue 49: RETRY_AFTER from flakewire's busy milliseconds (4 sequence
	// bits) moves a call to the backup at once; every ID stays unique.
	c := mustNew(t, env[:2], o)
	seen := map[uint64]bool{}
	w := uniqueWorkers(t, c, take(t, c, 8, 500), seen)
	if len(seen) != 4000 || !w[21] || len(w) > 2 || mustLayout(t, c).SeqBits != 4 || c.Stats.RetryAfter.Load() == 0 {
		t.Fatalf("%d IDs, workers %v, retry_after %d", len(seen), w, c.Stats.RetryAfter.Load())
	}
	pid, _ := strconv.Atoi(env[2])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	w = uniqueWorkers(t, c, take(t, c, 8, 250), seen)
	if len(seen) != 6000 || !w[22] || c.Stats.Failovers.Load() < 1 {
		t.Fatalf("%d IDs, workers %v", len(seen), w)
	}
}

func mustLayout(t *testing.T, c *Client) Layout {
	t.Helper()
	l, err := c.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

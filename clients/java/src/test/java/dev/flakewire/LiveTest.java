// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Live: against the responders tests/clients/live.sh starts; skipped without its environment. */
class LiveTest {
    static String env(String k) {
        String v = System.getenv(k);
        assumeTrue(v != null, k + " unset: run by tests/clients/live.sh");
        return v;
    }

    /** threads callers of each next() calls; fails on an error. Returns each caller's IDs. */
    static List<long[]> take(Client c, int threads, int each) throws Exception {
        List<long[]> out = new ArrayList<>();
        ConcurrentLinkedQueue<Throwable> errs = new ConcurrentLinkedQueue<>();
        List<Thread> ts = new ArrayList<>();
        for (int k = 0; k < threads; k++) {
            long[] o = new long[each];
            out.add(o);
            Thread t = new Thread(() -> {
                try {
                    for (int i = 0; i < each; i++) o[i] = c.next();
                } catch (Throwable e) {
                    errs.add(e);
                }
            });
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) t.join();
        if (!errs.isEmpty()) throw new AssertionError(errs.peek());
        return out;
    }

    static Set<Integer> workers(Client c, List<long[]> all, Set<Long> seen) throws java.io.IOException {
        Set<Integer> w = new HashSet<>();
        for (long[] o : all) {
            for (long id : o) {
                assertTrue(seen.add(id), "duplicate ID " + id);
                w.add(c.layout().decode(id).worker());
            }
        }
        return w;
    }

    static Client.Options opts(int prefetch, int lowWater) {
        Client.Options o = new Client.Options();
        o.prefetch = prefetch;
        o.lowWater = lowWater;
        return o;
    }

    @Test
    @Tag("loop")
    void loopInfoAndOneShotCalls() throws IOException {
        try (Client c = new Client(List.of(env("FW_TRUSTED")), null)) {
            Wire.Reply r = c.info();
            assertEquals(11, r.worker());
            assertEquals(12, r.info().seqBits());
            long a = c.get();
            long[] ids = c.getN(500);
            assertTrue(ids[0] > a);
            for (int i = 1; i < ids.length; i++) assertTrue(ids[i] > ids[i - 1]);
            long total = 0;
            List<Wire.Range> runs = c.getRange(5000);
            for (Wire.Range x : runs) total += x.n();
            assertTrue(total >= 1 && total <= 5000 && runs.get(0).first() > ids[499]);
        }
    }

    @Test
    @Tag("loop")
    void loopUntrustedPaddedFullUnpaddedRefused() throws IOException {
        try (Client c = new Client(List.of(env("FW_UNTRUSTED")), null)) {
            long[] ids = c.getN(181);
            assertEquals(181, c.lastReply().count());
            assertEquals(0, c.lastReply().flags() & Wire.F_PARTIAL);
            assertEquals(12, c.layout().decode(ids[0]).worker());
        }
        Client.Options o = new Client.Options();
        o.trusted = true;
        try (Client c = new Client(List.of(env("FW_UNTRUSTED")), o)) {
            assertEquals(Wire.ST_REFUSED, assertThrows(StatusException.class, c::get).status);
        }
    }

    @Test
    @Tag("loop")
    void loopConcurrentNextUniqueAndValid() throws Exception {
        try (Client c = new Client(List.of(env("FW_TRUSTED")), opts(512, 128))) {
            List<long[]> all = take(c, 8, 1250);
            for (long[] o : all) for (int i = 1; i < o.length; i++) assertTrue(o[i] > o[i - 1]);
            Set<Long> seen = new HashSet<>();
            assertEquals(Set.of(11), workers(c, all, seen));
            assertEquals(10000, seen.size());
            assertTrue(c.nextString().matches("[0-9]+"));
        }
    }

    @Test
    @Tag("loop")
    void loopPartialAndRetryAfterWithOneSequenceBit() throws Exception {
        // First, before any background refill competes for the 2 IDs per ms.
        // RETRY_AFTER is retried until the call's deadline (issue 49; before, retries = 10 was needed).
        try (Client c = new Client(List.of(env("FW_FEWSEQ")), null)) {
            c.getRange(4096);
            assertNotEquals(0, c.lastReply().flags() & Wire.F_PARTIAL);
        }
        try (Client c = new Client(List.of(env("FW_FEWSEQ")), opts(200, 50))) {
            Set<Long> seen = new HashSet<>();
            assertEquals(Set.of(13), workers(c, take(c, 3, 100), seen));
            assertEquals(300, seen.size());
            assertEquals(1, c.layout().seqBits());
            assertTrue(c.stats.retryAfter.get() > 0);
        }
    }

    @Test
    @Tag("loop")
    void loopUuid7TrustedUntrustedRefused() throws Exception {
        for (String[] a : new String[][] {{env("FW_TRUSTED"), "11"}, {env("FW_UNTRUSTED"), "12"}}) {
            try (Client c = new Client(List.of(a[0]), null)) {
                assertTrue(c.info().info().supportsUuid7());
                List<java.util.UUID> us = c.uuid7(90);
                assertEquals(90, us.size());
                assertEquals(90, c.lastReply().count());
                Set<java.util.UUID> all = new HashSet<>(us);
                for (java.util.UUID u : us) {
                    Layout.UuidParts p = c.layout().readUuid(u);
                    assertTrue(p.flakewire() && p.worker() == Integer.parseInt(a[1]));
                }
                for (int i = 0; i < 200; i++) assertTrue(all.add(c.nextUuid7()));
            }
        }
        Client.Options o = new Client.Options();
        o.trusted = true;
        try (Client c = new Client(List.of(env("FW_UNTRUSTED")), o)) {
            assertEquals(Wire.ST_REFUSED, assertThrows(StatusException.class, () -> c.uuid7(1)).status);
        }
    }

    @Test
    @Tag("loop")
    void loopIpv6Loopback() throws IOException {
        String v6 = env("FW_V6");
        assumeTrue(!v6.isEmpty(), "no IPv6 loopback");
        try (Client c = new Client(List.of(v6), null)) {
            long[] ids = c.getN(181);
            assertEquals(181, new HashSet<>(java.util.Arrays.stream(ids).boxed().toList()).size());
            assertEquals(14, c.layout().decode(ids[0]).worker());
        }
    }

    @Test
    @Tag("loop")
    void loopFailoverFromADeadResponder() throws Exception {
        // The default deadline (issue 49: the timeout bounds a call; retries are no longer used).
        try (Client c = new Client(List.of(env("FW_DEAD"), env("FW_TRUSTED")), null)) {
            Set<Long> seen = new HashSet<>();
            workers(c, take(c, 1, 10), seen);
            assertEquals(10, seen.size());
            // The dead port answers ICMP port unreachable: failover at once.
            assertTrue(c.stats.failovers.get() >= 1 && c.stats.refused.get() >= 1 && c.stats.timeouts.get() == 0);
        }
    }

    @Test
    @Tag("tap")
    void tapConcurrentUniqueRetryAfterThenFailover() throws Exception {
        // The default deadline (1 s; issue 49: before, 50 ms per attempt, 3 retries).
        Client.Options o = opts(256, 64);
        // maxAgeMs 200: after the kill, the IDs the pool still holds from flakewire (a refill
        // grows while callers drain it) expire, so the next ones must come from the backup.
        o.maxAgeMs = 200;
        try (Client c = new Client(List.of(env("FW_TAP"), env("FW_TAP_BACKUP")), o)) {
            // Issue 49: RETRY_AFTER from flakewire (4 sequence bits) moves a call to the backup at once,
            // so IDs and UUIDs come from either worker (before, only from 21 until the kill).
            Set<java.util.UUID> us = new HashSet<>();
            for (int i = 0; i < 300; i++) {
                java.util.UUID u = c.nextUuid7();
                assertTrue(us.add(u));
                assertTrue(Set.of(21, 22).contains(c.layout().readUuid(u).worker()));
            }
            Set<Long> seen = new HashSet<>();
            assertTrue(Set.of(21, 22).containsAll(workers(c, take(c, 8, 500), seen)));
            assertEquals(4000, seen.size());
            assertEquals(4, c.layout().seqBits());
            assertTrue(c.stats.retryAfter.get() > 0);
            // SIGKILL: nothing answers once it returns (a SIGTERMed flakewire answers
            // until its shutdown is done, which a loaded machine stretches past this take).
            ProcessHandle.of(Long.parseLong(env("FW_TAP_PID"))).orElseThrow().destroyForcibly();
            Thread.sleep(600);
            Set<Integer> w = workers(c, take(c, 8, 250), seen);
            assertEquals(6000, seen.size());
            assertTrue(w.contains(22) && c.stats.failovers.get() >= 1, "workers " + w + ", failovers " + c.stats.failovers.get());
        }
    }
}

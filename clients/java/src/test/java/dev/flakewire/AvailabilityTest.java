// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.flakewire.ClientTest.Fake;
import dev.flakewire.ClientTest.IdSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The seven tests of the availability contract (doc/clients.md, "Availability: deadlines, hedging, health") against
 * scripted fake responders on loopback. No speed is asserted: only the deadline, the hints and the budget.
 */
class AvailabilityTest {
    static final long MS = 1_000_000L;

    static int op(byte[] req) {
        return req[3] & 0xFF;
    }

    static long tag(byte[] req) {
        return ByteBuffer.wrap(req).getLong(8);
    }

    /** g's OK answer to an INFO, ID, LIST or RANGE request. */
    static byte[] ok(IdSource g, byte[] req) {
        if (op(req) == Wire.OP_ID) return ClientTest.reply(Wire.OP_ID, tag(req), 0, g.worker, g.take(1)[0]);
        return g.answer(req);
    }

    static byte[] retryAfter(byte[] req, long us) {
        byte[] b = ClientTest.reply(op(req), tag(req), Wire.ST_RETRY_AFTER, 1);
        ByteBuffer.wrap(b).putInt(20, (int) us);
        return b;
    }

    static int worker(long id) {
        return Layout.DEFAULT.decode(id).worker();
    }

    static double ms(long ns) {
        return ns / 1e6;
    }

    /**
     * 1. A silent first responder, a live second: a new client's first get (INFO included) succeeds within its
     * deadline and marks the first unhealthy; later calls go straight to the second: every ID request the silent one
     * sees is a hedge or a resend, never a call's first send, and its INFO requests are the first call's and the
     * probes.
     */
    @Test
    void silentFirstLiveSecond() throws Exception {
        AtomicInteger aInfo = new AtomicInteger(), aIds = new AtomicInteger();
        IdSource gb = new IdSource(Layout.DEFAULT, 9);
        try (Fake a = new Fake(req -> {
            (op(req) == Wire.OP_INFO ? aInfo : aIds).incrementAndGet();
            return List.of();
        }); Fake b = new Fake(req -> List.of(ok(gb, req))); Client c = new Client(List.of(a.addr, b.addr), null)) {
            long t0 = System.nanoTime();
            long id = c.get();
            long took = System.nanoTime() - t0;
            assertEquals(9, worker(id));
            assertTrue(took < 1000 * MS, "the first get took " + ms(took) + " ms, past its 1000 ms deadline");
            assertFalse(c.responders().healthy(0), "the silent responder is not marked unhealthy");
            for (int i = 0; i < 20; i++) assertEquals(9, worker(c.get()));
            long extra = c.stats.hedges.get() + c.stats.timeouts.get();
            assertTrue(aIds.get() <= extra, aIds.get() + " ID requests to the silent responder, " + extra
                    + " hedges and resends in all");
            assertTrue(aInfo.get() <= 1 + extra + c.stats.probes.get(), aInfo.get() + " INFO requests to it, "
                    + c.stats.probes.get() + " probes");
            System.out.printf("silentFirstLiveSecond: first get %.1f ms, %d probes, %d hedges%n", ms(took),
                    c.stats.probes.get(), c.stats.hedges.get());
        }
    }

    /** 2. The silent responder starts answering: a probe marks it healthy and calls return to it. */
    @Test
    void probeBringsTheFirstBack() throws Exception {
        AtomicBoolean on = new AtomicBoolean();
        AtomicInteger aInfo = new AtomicInteger();
        IdSource ga = new IdSource(Layout.DEFAULT, 7), gb = new IdSource(Layout.DEFAULT, 9);
        try (Fake a = new Fake(req -> {
            if (op(req) == Wire.OP_INFO) aInfo.incrementAndGet();
            return on.get() ? List.of(ok(ga, req)) : List.of();
        }); Fake b = new Fake(req -> List.of(ok(gb, req))); Client c = new Client(List.of(a.addr, b.addr), null)) {
            assertEquals(9, worker(c.get()));
            on.set(true);
            long t0 = System.nanoTime();
            int w = 9;
            while (w != 7 && System.nanoTime() - t0 < 3000 * MS) {
                Thread.sleep(10);
                w = worker(c.get());
            }
            assertEquals(7, w, "calls did not return to the first responder within 3 s of it answering ("
                    + c.stats.probes.get() + " probes, " + aInfo.get() + " INFO requests seen)");
            assertTrue(c.responders().healthy(0) && c.stats.probes.get() >= 1, "not marked healthy by a probe");
            for (int i = 0; i < 10; i++) assertEquals(7, worker(c.get()), "call " + i + " not back on the first");
        }
    }

    /**
     * 3. RETRY_AFTER from the first: the call is answered by the second at once (one round trip each, no sleep of the
     * 400 ms hint); the first is not asked again until its hint passes, and then is first again.
     */
    @Test
    void retryAfterMovesOnAtOnce() throws Exception {
        AtomicInteger aReqs = new AtomicInteger();
        IdSource ga = new IdSource(Layout.DEFAULT, 7), gb = new IdSource(Layout.DEFAULT, 9);
        try (Fake a = new Fake(req -> aReqs.incrementAndGet() == 1 ? List.of(retryAfter(req, 400_000))
                : List.of(ok(ga, req))); Fake b = new Fake(req -> List.of(ok(gb, req)));
                Client c = new Client(List.of(a.addr, b.addr), null)) {
            long t0 = System.nanoTime();
            long id = c.get();
            long took = System.nanoTime() - t0;
            assertEquals(9, worker(id));
            assertTrue(took < 400 * MS, "the call took " + ms(took) + " ms: it slept the 400 ms hint");
            // INFO to the first (RETRY_AFTER), INFO and ID to the second
            assertEquals(3, c.stats.requests.get() - c.stats.hedges.get());
            assertEquals(9, worker(c.get()));
            long inHint = System.nanoTime() - t0;
            assertEquals(1, aReqs.get(), "the first was asked again within its hint (" + ms(inHint) + " ms)");
            Thread.sleep(Math.max(0, 450 - (System.nanoTime() - t0) / MS));
            assertEquals(7, worker(c.get()), "the first is not first again after its hint");
        }
    }

    /**
     * 4. One responder answering RETRY_AFTER 50 ms three times, then OK: the call succeeds (the old code failed after
     * counting RETRY_AFTERs as attempts), and the responder is not asked again before each hint passed.
     */
    @Test
    void loneRetryAfterRetriedUntilOk() throws Exception {
        AtomicInteger n = new AtomicInteger();
        List<Long> at = Collections.synchronizedList(new ArrayList<>());
        IdSource g = new IdSource(Layout.DEFAULT, 7);
        try (Fake a = new Fake(req -> {
            at.add(System.nanoTime());
            return n.getAndIncrement() < 3 ? List.of(retryAfter(req, 50_000)) : List.of(ok(g, req));
        })) {
            Client.Options o = new Client.Options();
            o.retries = 1; // ignored now; the old code gave up after two attempts
            try (Client c = new Client(List.of(a.addr), o)) {
                assertEquals(7, worker(c.get()));
                assertEquals(3, c.stats.retryAfter.get());
                for (int i = 1; i <= 3; i++) {
                    long gap = at.get(i) - at.get(i - 1);
                    assertTrue(gap >= 40 * MS, "request " + i + " came " + ms(gap) + " ms after a 50 ms hint");
                }
            }
        }
    }

    /** 5. One responder refused (nothing bound) that starts listening 200 ms later: a default call succeeds. */
    @Test
    void refusedLoneResponderRetriedUntilItBinds() throws Exception {
        String dead = ClientTest.deadPort();
        int port = Integer.parseInt(dead.substring(dead.lastIndexOf(':') + 1));
        IdSource g = new IdSource(Layout.DEFAULT, 7);
        List<Fake> late = Collections.synchronizedList(new ArrayList<>());
        Thread binder = new Thread(() -> {
            try {
                Thread.sleep(200);
                late.add(new Fake(port, (req, send) -> send.accept(ok(g, req))));
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        try (Client c = new Client(List.of(dead), null)) {
            binder.start();
            assertEquals(7, worker(c.get()));
            assertTrue(c.stats.refused.get() >= 1, "no refusal seen: the port was bound before the call");
        } finally {
            binder.join();
            for (Fake f : late) f.close();
        }
    }

    /**
     * 6. All silent: the call fails with the no-response error no earlier than its deadline and not long after it
     * (within deadline + 2 s: a loaded machine schedules late, and the old attempt count took 12 s here), naming each
     * responder ("no reply in N ms").
     */
    @Test
    void allSilentFailAtTheDeadline() throws Exception {
        try (Fake a = new Fake(req -> List.of()); Fake b = new Fake(req -> List.of())) {
            Client.Options o = new Client.Options();
            o.timeoutMs = 400;
            try (Client c = new Client(List.of(a.addr, b.addr), o)) {
                long t0 = System.nanoTime();
                NoResponseException e = assertThrows(NoResponseException.class, c::get);
                long took = System.nanoTime() - t0;
                assertTrue(took >= 400 * MS && took <= 2400 * MS, "failed after " + ms(took) + " ms, deadline 400");
                assertEquals(2, e.tried.size(), e.tried.toString());
                assertTrue(e.tried.get(0).matches(Pattern.quote(a.addr) + ": no reply in [0-9]+ ms"), e.getMessage());
                assertTrue(e.tried.get(1).matches(Pattern.quote(b.addr) + ": no reply in [0-9]+ ms"), e.getMessage());
            }
        }
    }

    /**
     * 7. The budget: the first copy of every request (whichever responder gets it) is answered 30 ms late, any later
     * copy at once, so every call wants a hedge. Over 200 calls the copies (hedges, and resends if any) stay within
     * the 10 tokens a client starts with plus 5 % of the calls (+1); some hedge does go out.
     */
    @Test
    void hedgesStayWithinTheBudget() throws Exception {
        Set<Long> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger copies = new AtomicInteger();
        ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor();
        IdSource ga = new IdSource(Layout.DEFAULT, 7), gb = new IdSource(Layout.DEFAULT, 9);
        try (Fake a = new Fake(0, (req, send) -> slowFirst(req, send, ga, seen, copies, later));
                Fake b = new Fake(0, (req, send) -> slowFirst(req, send, gb, seen, copies, later));
                Client c = new Client(List.of(a.addr, b.addr), null)) {
            final int calls = 200;
            for (int i = 0; i < calls; i++) c.get();
            long bound = 10 + calls * 5 / 100 + 1;
            assertTrue(copies.get() <= bound, copies.get() + " copies of requests over " + calls + " calls, budget "
                    + bound + " (" + c.stats.hedges.get() + " hedges)");
            assertTrue(c.stats.hedges.get() >= 1 && copies.get() >= 1, "no hedge went out");
            System.out.printf("hedgesStayWithinTheBudget: %d hedges, %d copies seen, %d resends%n",
                    c.stats.hedges.get(), copies.get(), c.stats.timeouts.get());
        } finally {
            later.shutdownNow();
        }
    }

    private static void slowFirst(byte[] req, java.util.function.Consumer<byte[]> send, IdSource g, Set<Long> seen,
            AtomicInteger copies, ScheduledExecutorService later) {
        if (seen.add(tag(req))) {
            later.schedule(() -> send.accept(ok(g, req)), 30, TimeUnit.MILLISECONDS);
        } else {
            copies.incrementAndGet();
            send.accept(ok(g, req));
        }
    }

    // The contract's "Statuses" (doc/clients.md): one test per rule.

    static byte[] status(byte[] req, int st, int worker) {
        return ClientTest.reply(op(req), tag(req), st, worker);
    }

    /** A lone responder answering NO_LEASE twice, then OK: the call succeeds (it is asked again meanwhile). */
    @Test
    void loneNoLeaseRetriedUntilOk() throws Exception {
        AtomicInteger n = new AtomicInteger();
        IdSource g = new IdSource(Layout.DEFAULT, 7);
        try (Fake a = new Fake(req -> op(req) == Wire.OP_ID && n.incrementAndGet() <= 2
                ? List.of(status(req, Wire.ST_NO_LEASE, 7)) : List.of(ok(g, req)));
                Client c = new Client(List.of(a.addr), null)) {
            assertEquals(7, worker(c.get()));
            assertEquals(3, n.get(), "ID requests");
        }
    }

    /** A lone responder answering NO_LEASE always: NoResponseException at the deadline, naming the status. */
    @Test
    void loneNoLeaseFailsAtTheDeadline() throws Exception {
        AtomicInteger n = new AtomicInteger();
        try (Fake a = new Fake(req -> {
            n.incrementAndGet();
            return List.of(status(req, Wire.ST_NO_LEASE, 7));
        })) {
            Client.Options o = new Client.Options();
            o.timeoutMs = 400;
            try (Client c = new Client(List.of(a.addr), o)) {
                long t0 = System.nanoTime();
                NoResponseException e = assertThrows(NoResponseException.class, c::get);
                long took = System.nanoTime() - t0;
                assertTrue(took >= 400 * MS && took <= 2400 * MS, "failed after " + ms(took) + " ms, deadline 400");
                assertEquals(List.of(a.addr + ": answered NO_LEASE"), e.tried);
                assertTrue(n.get() >= 3, n.get() + " requests: not asked again until the deadline");
            }
        }
    }

    /** Two responders both answering REFUSED: StatusException once both did, well before the deadline. */
    @Test
    void allRefusedFailsAtOnce() throws Exception {
        AtomicInteger aIds = new AtomicInteger(), bIds = new AtomicInteger();
        try (Fake a = new Fake(req -> {
            if (op(req) == Wire.OP_ID) aIds.incrementAndGet();
            return List.of(status(req, Wire.ST_REFUSED, 7));
        }); Fake b = new Fake(req -> {
            if (op(req) == Wire.OP_ID) bIds.incrementAndGet();
            return List.of(status(req, Wire.ST_REFUSED, 9));
        })) {
            Client.Options o = new Client.Options();
            o.timeoutMs = 10_000;
            try (Client c = new Client(List.of(a.addr, b.addr), o)) {
                long t0 = System.nanoTime();
                StatusException e = assertThrows(StatusException.class, c::get);
                long took = System.nanoTime() - t0;
                assertEquals(Wire.ST_REFUSED, e.status);
                assertTrue(took < 5000 * MS, "failed after " + ms(took) + " ms, deadline 10000");
                assertTrue(aIds.get() >= 1 && bIds.get() >= 1, "ID requests " + aIds.get() + " and " + bIds.get());
                assertFalse(c.responders().healthy(0) || c.responders().healthy(1), "a REFUSED responder healthy");
            }
        }
    }

    /**
     * The first answering REFUSED (to ID requests; INFO it answers), the second OK: the second's ID. The first is
     * unhealthy after the call and is not probed for 1 s (before, the probe's INFO made it healthy again within a
     * round trip, so every call asked it first). Once it admits us, the probe after the hold, and no earlier, makes it
     * healthy, and calls return to it.
     */
    @Test
    void refusedMovesOn() throws Exception {
        AtomicInteger aIds = new AtomicInteger();
        AtomicBoolean refuse = new AtomicBoolean(true);
        IdSource ga = new IdSource(Layout.DEFAULT, 7), gb = new IdSource(Layout.DEFAULT, 9);
        try (Fake a = new Fake(req -> {
            if (op(req) == Wire.OP_INFO || !refuse.get()) return List.of(ok(ga, req));
            aIds.incrementAndGet();
            return List.of(status(req, Wire.ST_REFUSED, 7));
        }); Fake b = new Fake(req -> List.of(ok(gb, req))); Client c = new Client(List.of(a.addr, b.addr), null)) {
            c.info(); // the layout; should its reply lose a hedge race, the probe makes both healthy again:
            for (long w0 = System.nanoTime(); !c.responders().healthy(0) || !c.responders().healthy(1);
                    Thread.sleep(10)) {
                assertTrue(System.nanoTime() - w0 < 3000 * MS, "not both healthy in 3 s");
            }
            long t0 = System.nanoTime();
            assertEquals(9, worker(c.get()));
            assertTrue(aIds.get() >= 1, "no ID request to the first"); // more if a slow reply brought a resend
            assertFalse(c.responders().healthy(0), "the REFUSED responder is not marked unhealthy");
            // It admits us from now on; no call runs, so only a probe can bring it back.
            refuse.set(false);
            for (long w0 = System.nanoTime(); !c.responders().healthy(0); Thread.sleep(10)) {
                assertTrue(System.nanoTime() - w0 < 5000 * MS, "not healthy again in 5 s (" + c.stats.probes.get()
                        + " probes)");
            }
            long took = System.nanoTime() - t0;
            assertTrue(took >= Responders.STATUS_HOLD_NS, "healthy again " + ms(took)
                    + " ms after its REFUSED, within the 1 s hold");
            // Calls return to it (a slow reply on a loaded machine may lose a hedge race: a few tries).
            int w = worker(c.get());
            for (long w0 = System.nanoTime(); w != 7 && System.nanoTime() - w0 < 5000 * MS; Thread.sleep(10)) {
                w = worker(c.get());
            }
            assertEquals(7, w, "calls did not return to the first after the hold");
        }
    }

    /**
     * A responder that answered RETRY_AFTER is asked again before an unhealthy one, although this call asked it
     * already: once its hint has passed, and as the earliest hold when no responder is eligible. Responders s (silent,
     * found so by the first call: unhealthy), a, and b (never issues; answers INFO, so it is healthy, until it falls
     * silent). 1: a's RETRY_AFTER 200 ms, read while a is held, sends the call to b; at b's resend timer (800 ms after
     * that send) a's hint has passed: a answers, s is not asked (before, a, sent to more often than s in the call, came
     * after it). 2: with b unhealthy too, a's three RETRY_AFTER 50 ms and its OK are all the call's sends (before, once
     * a hint ended, the call went to the unhealthy one asked fewer times). No hedging, and a hedge floor of 100 ms: the
     * resend timer is 400 ms, so a slow reply on a loaded machine does not send the call elsewhere either.
     */
    @Test
    void retryAfterBeforeUnhealthy() throws Exception {
        AtomicInteger sIds = new AtomicInteger(), aIds = new AtomicInteger(), bIds = new AtomicInteger();
        AtomicInteger ras = new AtomicInteger(), hintUs = new AtomicInteger();
        AtomicBoolean bOff = new AtomicBoolean();
        IdSource ga = new IdSource(Layout.DEFAULT, 9);
        try (Fake s = new Fake(req -> {
            if (op(req) == Wire.OP_ID) sIds.incrementAndGet();
            return List.of();
        }); Fake a = new Fake(req -> {
            if (op(req) != Wire.OP_ID) return List.of(ok(ga, req));
            aIds.incrementAndGet();
            return ras.getAndDecrement() > 0 ? List.of(retryAfter(req, hintUs.get())) : List.of(ok(ga, req));
        }); Fake b = new Fake(req -> {
            if (op(req) == Wire.OP_ID) bIds.incrementAndGet();
            return op(req) == Wire.OP_INFO && !bOff.get() ? List.of(ok(ga, req)) : List.of();
        })) {
            Client.Options o = new Client.Options();
            o.timeoutMs = 2000;
            o.hedgeBudgetPct = 0;
            o.hedgeMinUs = 100_000;
            try (Client c = new Client(List.of(s.addr, a.addr, b.addr), o)) {
                for (int i = 0; i < 20; i++) assertEquals(9, worker(c.get())); // the first finds s silent
                // Should a slow reply have sent a call to b (or a lost a race), the probe brings it back.
                for (long w0 = System.nanoTime(); (!c.responders().healthy(1) || !c.responders().healthy(2))
                        && System.nanoTime() - w0 < 3000 * MS;) {
                    Thread.sleep(10);
                }
                assertFalse(c.responders().healthy(0), "the silent s is not marked unhealthy");
                assertTrue(c.responders().healthy(1) && c.responders().healthy(2), "a or b not healthy");
                assertEquals(100 * MS, c.responders().hedgeDelayNs());
                bOff.set(true);
                // 1. Its hint passed while the call waited for b.
                int s0 = sIds.get(), a0 = aIds.get(), b0 = bIds.get();
                hintUs.set(200_000);
                ras.set(1);
                assertEquals(9, worker(c.get()));
                assertEquals(s0, sIds.get(), "ID requests to s");
                assertEquals(a0 + 2, aIds.get(), "ID requests to a (RETRY_AFTER, then OK)");
                assertEquals(b0 + 1, bIds.get(), "ID requests to b");
                assertFalse(c.responders().healthy(2), "b, silent, still healthy");
                // 2. No responder eligible: a, held off, before the unhealthy ones.
                a0 = aIds.get();
                hintUs.set(50_000);
                ras.set(3);
                assertEquals(9, worker(c.get()));
                assertEquals(s0, sIds.get(), "ID requests to s");
                assertEquals(b0 + 1, bIds.get(), "ID requests to b");
                assertEquals(a0 + 4, aIds.get(), "ID requests to a (3 RETRY_AFTER, then OK)");
            }
        }
    }

    /**
     * BAD_REQUEST (and BAD_VERSION) from the first: StatusException at once, the second never asked, the first still
     * healthy. The first answers 20 calls first (a warm client: a cold JVM's first round trip can pass the 50 ms
     * resend timer on a loaded machine, which would ask the second before the status is read; should a responder lose
     * such a race, the probe makes both healthy again before the test goes on), and there is no hedging (a hedge after
     * d would ask the second too).
     */
    @Test
    void badRequestEndsTheCall() throws Exception {
        for (int st : new int[] {Wire.ST_BAD_REQUEST, Wire.ST_BAD_VERSION}) {
            AtomicBoolean bad = new AtomicBoolean();
            AtomicInteger bReqs = new AtomicInteger();
            IdSource ga = new IdSource(Layout.DEFAULT, 7), gb = new IdSource(Layout.DEFAULT, 9);
            try (Fake a = new Fake(req -> List.of(bad.get() ? status(req, st, 7) : ok(ga, req)));
                    Fake b = new Fake(req -> {
                        if (bad.get()) bReqs.incrementAndGet();
                        return List.of(ok(gb, req));
                    })) {
                Client.Options o = new Client.Options();
                o.timeoutMs = 10_000;
                o.hedgeBudgetPct = 0;
                try (Client c = new Client(List.of(a.addr, b.addr), o)) {
                    for (int i = 0; i < 20; i++) c.get();
                    for (long w0 = System.nanoTime(); !c.responders().healthy(0) || !c.responders().healthy(1);
                            Thread.sleep(10)) {
                        assertTrue(System.nanoTime() - w0 < 3000 * MS, "not both healthy again in 3 s");
                    }
                    bad.set(true);
                    long probes = c.stats.probes.get();
                    long t0 = System.nanoTime();
                    StatusException e = assertThrows(StatusException.class, c::get);
                    long took = System.nanoTime() - t0;
                    assertEquals(st, e.status);
                    assertTrue(took < 5000 * MS, "failed after " + ms(took) + " ms, deadline 10000");
                    Thread.sleep(150); // a probe would have gone by now
                    assertEquals(0, bReqs.get(), "requests to the second");
                    assertTrue(c.responders().healthy(0), "status " + st + " marked the first unhealthy");
                    assertEquals(probes, c.stats.probes.get(), "probes");
                }
            }
        }
    }

    /** The options of the contract, by their Java names, with its defaults; out of range rejected. */
    @Test
    void optionDefaults() throws IOException {
        Client.Options o = new Client.Options();
        assertEquals(1000, o.timeoutMs);
        assertEquals(2000, o.hedgeMinUs);
        assertEquals(5, o.hedgeBudgetPct);
        o.retries = 99; // accepted, ignored
        try (Fake f = new Fake(ClientTest::answering); Client c = new Client(List.of(f.addr), o)) {
            assertTrue(c.get() > 0);
        }
        Client.Options bad = new Client.Options();
        bad.hedgeBudgetPct = 101;
        assertThrows(IllegalArgumentException.class, () -> new Client(List.of("127.0.0.1:1"), bad));
        Client.Options bad2 = new Client.Options();
        bad2.hedgeMinUs = -1;
        assertThrows(IllegalArgumentException.class, () -> new Client(List.of("127.0.0.1:1"), bad2));
    }
}

// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The client's own rules against a scripted fake responder on loopback. */
class ClientTest {
    /** Answers each request with handler(op, tag) datagrams. */
    static final class Fake implements AutoCloseable {
        /** Handles one request (its bytes, 24 at least); send answers it, now or later from any thread. */
        interface Handler {
            void handle(byte[] req, java.util.function.Consumer<byte[]> send);
        }

        final DatagramSocket sock;
        final String addr;

        Fake(BiFunction<Integer, Long, List<byte[]>> handler) throws IOException {
            this(req -> handler.apply(req[3] & 0xFF, ByteBuffer.wrap(req).getLong(8)));
        }

        /** Answers each request (its bytes, 24 at least) with handler(request) datagrams. */
        Fake(Function<byte[], List<byte[]>> handler) throws IOException {
            this(0, (req, send) -> handler.apply(req).forEach(send));
        }

        /** A responder on loopback port port (0: any free one) answering through h. */
        Fake(int port, Handler h) throws IOException {
            sock = new DatagramSocket(port, InetAddress.getLoopbackAddress());
            addr = "127.0.0.1:" + sock.getLocalPort();
            Thread t = new Thread(() -> {
                byte[] b = new byte[2048];
                for (;;) {
                    DatagramPacket p = new DatagramPacket(b, b.length);
                    try {
                        sock.receive(p);
                        if (p.getLength() < 24) continue;
                        java.net.SocketAddress from = p.getSocketAddress();
                        h.handle(java.util.Arrays.copyOf(b, p.getLength()), d -> {
                            try {
                                sock.send(new DatagramPacket(d, d.length, from));
                            } catch (IOException e) {
                                // closed or unreachable: the client sees silence
                            }
                        });
                    } catch (SocketException e) {
                        return;
                    } catch (IOException e) {
                        // keep serving
                    }
                }
            });
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() {
            sock.close();
        }
    }

    static byte[] reply(int op, long tag, int status, int worker, long... ids) {
        boolean info = op == Wire.OP_INFO && status == 0;
        ByteBuffer b = ByteBuffer.allocate(24 + 8 * ids.length + (info ? 32 : 0));
        b.putShort((short) Wire.MAGIC).put((byte) 1).put((byte) (op | 0x80)).put((byte) status).put((byte) 0);
        b.putShort((short) (status != 0 ? 0 : info ? 1 : ids.length)).putLong(tag).putShort((short) 0)
                .putShort((short) worker).putInt(0);
        for (long id : ids) b.putLong(id);
        if (info) b.putLong(Layout.DEFAULT_EPOCH_MS).put(new byte[] {41, 0, 10, 12, 1, 1, 0, (byte) 181, 0, 16, 0, 4});
        return b.array();
    }

    static long mkId(int worker, int seq) {
        return (System.currentTimeMillis() - Layout.DEFAULT_EPOCH_MS) << 22 | (long) worker << 12 | seq;
    }

    static Client.Options opts() {
        Client.Options o = new Client.Options();
        o.timeoutMs = 300;
        o.retries = 0;
        return o;
    }

    @Test
    void parseServer() {
        assertEquals(new Client.HostPort("10.0.0.1", 99), Client.parseServer("10.0.0.1:99"));
        assertEquals(new Client.HostPort("10.0.0.1", 4242), Client.parseServer("10.0.0.1"));
        assertEquals(new Client.HostPort("::1", 4243), Client.parseServer("[::1]:4243"));
        assertEquals(new Client.HostPort("fe80::1", 4242), Client.parseServer("[fe80::1]"));
        assertEquals(new Client.HostPort("fe80::1", 4242), Client.parseServer("fe80::1"));
        for (String bad : new String[] {"[::1", "[::1]x", "h:0", "h:65536", "h:x", ":1", "", "[::1]:"}) {
            assertThrows(IllegalArgumentException.class, () -> Client.parseServer(bad), bad);
        }
    }

    @Test
    void straysIgnored() throws IOException {
        try (Fake f = new Fake((op, tag) -> op == Wire.OP_INFO ? List.of(reply(op, tag, 0, 7))
                : List.of("junk".getBytes(), reply(op, tag ^ 1, 0, 7, mkId(7, 0)), reply(Wire.OP_LIST, tag, 0, 7, mkId(7, 0)),
                        reply(op, tag, 0, 7, mkId(7, 0))));
                Client c = new Client(List.of(f.addr), opts())) {
            assertEquals(7, Layout.DEFAULT.decode(c.get()).worker());
            assertEquals(3, c.stats.stray.get());
        }
    }

    @Test
    void invalidIdsRejected() throws IOException {
        for (long id : new long[] {mkId(8, 0), Long.MIN_VALUE | mkId(7, 0), 1000L << 22 | 7 << 12}) {
            try (Fake f = new Fake((op, tag) -> List.of(op == Wire.OP_INFO ? reply(op, tag, 0, 7) : reply(op, tag, 0, 7, id)));
                    Client c = new Client(List.of(f.addr), opts())) {
                assertThrows(InvalidReplyException.class, c::get);
            }
        }
    }

    @Test
    void failoverOnNoLeaseAndClockUnsafe() throws IOException {
        for (int st : new int[] {Wire.ST_NO_LEASE, Wire.ST_CLOCK_UNSAFE}) {
            try (Fake a = new Fake((op, tag) -> List.of(reply(op, tag, st, 1)));
                    Fake b = new Fake((op, tag) -> List.of(op == Wire.OP_INFO ? reply(op, tag, 0, 9) : reply(op, tag, 0, 9, mkId(9, 0))))) {
                try (Client c = new Client(List.of(a.addr, b.addr), opts())) {
                    assertEquals(9, Layout.DEFAULT.decode(c.get()).worker());
                    assertTrue(c.stats.failovers.get() >= 1);
                }
                // Alone, the responder is asked again (every 10 ms) until the deadline, whose error names what it
                // answered (before the contract's "Statuses": a StatusException at once).
                try (Client c = new Client(List.of(a.addr), opts())) {
                    NoResponseException e = assertThrows(NoResponseException.class, c::get);
                    assertEquals(List.of(a.addr + ": answered " + Wire.statusName(st).toUpperCase(java.util.Locale.ROOT)
                            .replace('-', '_')), e.tried);
                }
            }
        }
    }

    @Test
    void noResponderTimesOut() throws IOException {
        Client.Options o = opts();
        o.timeoutMs = 20;
        try (Fake f = new Fake((op, tag) -> new ArrayList<>()); Client c = new Client(List.of(f.addr), o)) {
            assertThrows(NoResponseException.class, c::next);
        }
    }

    static List<byte[]> answering(int op, long tag) {
        if (op == Wire.OP_INFO) return List.of(reply(op, tag, 0, 7));
        if (op == Wire.OP_ID) return List.of(reply(op, tag, 0, 7, mkId(7, 0)));
        return List.of(reply(op, tag, 0, 7, mkId(7, 0), mkId(7, 1), mkId(7, 2)));
    }

    /** A loopback port nothing listens on, below the ephemeral range. */
    static String deadPort() throws IOException {
        for (int p = 20000 + (int) (System.nanoTime() % 10000); p < 32768; p++) {
            try {
                new DatagramSocket(p, InetAddress.getLoopbackAddress()).close();
                return "127.0.0.1:" + p;
            } catch (SocketException e) {
                // taken: the next one
            }
        }
        throw new IOException("no free port");
    }

    /**
     * An ID buffered longer than maxAgeMs is not handed out: after 100 ms the next ID comes from a later request, not
     * from the 2 IDs left of the first reply (before issue 37, next() handed those out however old).
     */
    @Test
    void maxAgeDropsOldIds() throws Exception {
        java.util.concurrent.atomic.AtomicInteger seq = new java.util.concurrent.atomic.AtomicInteger(),
                lists = new java.util.concurrent.atomic.AtomicInteger();
        try (Fake f = new Fake((op, tag) -> {
            if (op == Wire.OP_INFO) return List.of(reply(op, tag, 0, 7));
            lists.incrementAndGet();
            int s = seq.getAndAdd(3);
            return List.of(reply(op, tag, 0, 7, mkId(7, s), mkId(7, s + 1), mkId(7, s + 2)));
        })) {
            Client.Options o = opts();
            o.useRange = false;
            o.prefetch = 3;
            o.lowWater = 0;
            o.maxAgeMs = 9;
            assertThrows(IllegalArgumentException.class, () -> new Client(List.of(f.addr), o));
            o.maxAgeMs = 20;
            try (Client c = new Client(List.of(f.addr), o)) {
                long a = c.next();
                assertEquals(1, lists.get());
                Thread.sleep(100);
                long b = c.next();
                assertTrue(lists.get() >= 2, "requests: " + lists.get());
                assertTrue(b > a && (b & 0xfff) >= 3, b + " after " + a);
            }
        }
    }

    /** A worker's IDs in a layout as a responder hands them out: each range within one ms, never back in time. */
    static final class IdSource {
        final Layout l;
        final int worker;
        long ms, seq;

        IdSource(Layout l, int worker) {
            this.l = l;
            this.worker = worker;
        }

        /** Up to n consecutive IDs (those left in the current ms): {first, n}. */
        synchronized long[] take(long n) {
            long now = System.currentTimeMillis() - l.epochMs();
            if (now > ms) {
                ms = now;
                seq = 0;
            }
            long per = 1L << l.seqBits();
            n = Math.min(n, per - seq);
            long first = ms << (l.dcBits() + l.workerBits() + l.seqBits()) | (long) worker << l.seqBits() | seq;
            seq += n;
            if (seq == per) {
                ms++;
                seq = 0;
            }
            return new long[] {first, n};
        }

        /** The reply to an INFO (this layout), LIST or RANGE request. */
        byte[] answer(byte[] req) {
            ByteBuffer q = ByteBuffer.wrap(req);
            int op = req[3] & 0xFF, count = q.getShort(6) & 0xFFFF;
            long tag = q.getLong(8);
            if (op == Wire.OP_INFO) {
                byte[] b = reply(op, tag, 0, worker);
                b[24 + 8] = (byte) l.timeBits();
                b[24 + 9] = (byte) l.dcBits();
                b[24 + 10] = (byte) l.workerBits();
                b[24 + 11] = (byte) l.seqBits();
                return b;
            }
            if (op == Wire.OP_LIST) {
                long[] ids = new long[count];
                for (int i = 0; i < count; i++) ids[i] = take(1)[0];
                return reply(op, tag, 0, worker, ids);
            }
            ByteBuffer body = ByteBuffer.allocate(12 * Wire.RANGES_MAX);
            int k = 0;
            for (long left = count; left > 0 && k < Wire.RANGES_MAX; k++) {
                long[] r = take(left);
                body.putLong(r[0]).putInt((int) r[1]);
                left -= r[1];
            }
            ByteBuffer b = ByteBuffer.wrap(java.util.Arrays.copyOf(reply(op, tag, 0, worker), 24 + 12 * k));
            b.putShort(6, (short) k).position(24);
            b.put(body.array(), 0, 12 * k);
            return b.array();
        }
    }

    /**
     * IDs held in a thread's own share are not handed out past maxAgeMs either. Four threads wait out a first refill
     * the responder holds for 6 x maxAgeMs, long enough for the ticker that ages shares to end idle; each then holds a
     * share of 100 IDs, waits 4 x maxAgeMs, and must get an ID at most 2 x maxAgeMs old (a late tick), from a new
     * request. Before commit 2136f1c the ticker was not restarted when the waiters took their shares: the epoch stood
     * still, and each share went on handing out its old IDs.
     */
    @Test
    void maxAgeReachesThreadShares() throws Exception {
        final long maxAge = 100, wait = 4 * maxAge;
        AtomicInteger lists = new AtomicInteger();
        IdSource g = new IdSource(Layout.DEFAULT, 7);
        try (Fake f = new Fake(req -> {
            if (req[3] == Wire.OP_LIST && lists.incrementAndGet() == 1) {
                try {
                    Thread.sleep(6 * maxAge);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return List.of(g.answer(req));
        })) {
            Client.Options o = opts();
            o.timeoutMs = 5000; // the held reply is waited for, never asked again
            o.useRange = false;
            o.prefetch = 800;
            o.lowWater = 0;
            o.maxAgeMs = maxAge;
            try (Client c = new Client(List.of(f.addr), o)) {
                final int callers = 4;
                CountDownLatch taken = new CountDownLatch(callers), resume = new CountDownLatch(1);
                AtomicLong waitFrom = new AtomicLong();
                List<String> errs = java.util.Collections.synchronizedList(new ArrayList<>());
                List<Thread> ts = new ArrayList<>();
                for (int i = 0; i < callers; i++) {
                    final int who = i;
                    Thread t = new Thread(() -> {
                        try {
                            long a;
                            try {
                                a = c.next();
                            } finally {
                                taken.countDown();
                            }
                            resume.await();
                            long b = c.next(), issued = Layout.DEFAULT.decode(b).unixMs();
                            if (issued < waitFrom.get() + wait - 2 * maxAge)
                                errs.add("caller " + who + ": after a wait of " + wait + " ms: ID " + b + " issued "
                                        + (waitFrom.get() + wait - issued) + " ms before the wait ended (the first was "
                                        + a + ")");
                        } catch (Exception e) {
                            errs.add("caller " + who + ": " + e);
                        }
                    });
                    t.start();
                    ts.add(t);
                }
                taken.await();
                int sentBefore = lists.get();
                waitFrom.set(System.currentTimeMillis());
                Thread.sleep(wait);
                resume.countDown();
                for (Thread t : ts) t.join(10_000);
                for (Thread t : ts) assertTrue(!t.isAlive(), "a caller still waits");
                assertEquals(List.of(), errs);
                assertTrue(lists.get() > sentBefore, "no request after the wait: " + lists.get() + " in all");
            }
        }
    }

    /**
     * Refills grow while a caller drains the pool, up to 1024 x prefetch and 16 ms of one worker's IDs (2^seqBits a
     * ms, from INFO), and no further: with lowWater 0 every refill starts on an empty pool, so each doubles the last
     * until the cap. The fake notes the largest RANGE asked.
     */
    @Test
    void refillGrowsToTheCap() throws Exception {
        // {seqBits, prefetch, cap}: 1024 x 2 (16 << 12 is larger); 16 << 8 (1024 x 16 is larger)
        for (int[] tc : new int[][] {{12, 2, 1024 * 2}, {8, 16, 16 << 8}}) {
            AtomicLong ranges = new AtomicLong(), biggest = new AtomicLong(), over = new AtomicLong();
            IdSource g = new IdSource(new Layout(Layout.DEFAULT_EPOCH_MS, 41, 0, 22 - tc[0], tc[0]), 7);
            try (Fake f = new Fake(req -> {
                if (req[3] == Wire.OP_RANGE) {
                    long n = ByteBuffer.wrap(req).getShort(6) & 0xFFFF;
                    ranges.incrementAndGet();
                    biggest.accumulateAndGet(n, Math::max);
                    if (n > tc[2]) over.incrementAndGet();
                }
                return List.of(g.answer(req));
            })) {
                Client.Options o = opts();
                o.timeoutMs = 5000;
                o.prefetch = tc[1];
                o.lowWater = 0;
                try (Client c = new Client(List.of(f.addr), o)) {
                    long prev = 0;
                    // Past the cap (2 x cap, a refill of each size below it) and 8 refills at it.
                    for (int i = 0; i < 10 * tc[2]; i++) {
                        long id = c.next();
                        assertTrue(id > prev, id + " after " + prev);
                        prev = id;
                    }
                }
                assertEquals(0, over.get(), "cap " + tc[2] + ": RANGE requests over it, largest " + biggest.get());
                assertEquals(tc[2], biggest.get(), "cap " + tc[2] + ": the largest RANGE asked (growth), of "
                        + ranges.get());
            }
        }
    }

    @Test
    void closeEndsHandOuts() throws Exception {
        try (Fake f = new Fake(ClientTest::answering)) {
            Client.Options o = opts();
            o.useRange = false;
            o.prefetch = 3;
            o.lowWater = 0;
            Client c = new Client(List.of(f.addr), o);
            c.next();
            c.close();
            assertThrows(ClosedException.class, c::next);
            assertThrows(ClosedException.class, c::get);
            assertThrows(ClosedException.class, c::nextUuid7);
        }
    }

    @Test
    void refusedFailsOverAtOnce() throws Exception {
        try (Fake f = new Fake(ClientTest::answering)) {
            Client.Options o = opts().timeout(java.time.Duration.ofSeconds(2));
            o.retries = 3;
            try (Client c = new Client(List.of(deadPort(), f.addr), o)) {
                long t = System.nanoTime();
                assertTrue(c.getAsync().get() > 0);
                // a timeout would cost 2 s; ICMP port unreachable a round trip
                assertTrue(System.nanoTime() - t < 1_000_000_000L);
                assertTrue(c.stats.refused.get() >= 1 && c.stats.timeouts.get() == 0);
            }
        }
    }

    @Test
    void noResponseNamesEachServer() throws Exception {
        try (Fake f = new Fake((op, tag) -> List.of())) {
            String dead = deadPort();
            Client.Options o = opts().timeout(java.time.Duration.ofMillis(20));
            try (Client c = new Client(List.of(f.addr, dead), o)) {
                NoResponseException e = assertThrows(NoResponseException.class, c::get);
                // issue 49: what each responder did in the call, as doc/clients.md spells it
                assertEquals(2, e.tried.size(), e.tried.toString());
                assertTrue(e.tried.get(0).matches(java.util.regex.Pattern.quote(f.addr) + ": no reply in [0-9]+ ms"),
                        e.tried.get(0));
                assertEquals(dead + ": refused", e.tried.get(1));
            }
        }
    }

    @Test
    void errorClasses() {
        assertThrows(IllegalArgumentException.class, () -> new Client(List.of("h:0"), null));
        ResolveException e = assertThrows(ResolveException.class,
                () -> new Client(List.of("no-such-host.invalid:4242"), null));
        assertTrue(e instanceof IOException && e.getCause() != null);
    }

    /**
     * A call is not interruptible (as with the blocking sockets before issue 49): an interrupted caller still gets its
     * ID, keeps its interrupt status, and the client's sockets stay open (NIO closes a channel on interrupt).
     */
    @Test
    void interruptedCallerKeepsTheClient() throws Exception {
        try (Fake f = new Fake(ClientTest::answering); Client c = new Client(List.of(f.addr), opts())) {
            for (int i = 0; i < 3; i++) {
                Thread.currentThread().interrupt();
                try {
                    assertEquals(7, c.info().worker());
                } finally {
                    assertTrue(Thread.interrupted(), "the interrupt status was lost");
                }
            }
            assertEquals(7, c.info().worker(), "the client's socket did not survive the interrupts");
        }
    }

    @Test
    void layoutBeforeAnyId() throws Exception {
        try (Fake f = new Fake(ClientTest::answering); Client c = new Client(List.of(f.addr), opts())) {
            assertEquals(Layout.DEFAULT, c.layout());
        }
    }
}

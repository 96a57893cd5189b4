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
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/** The client's own rules against a scripted fake responder on loopback. */
class ClientTest {
    /** Answers each request with handler(op, tag) datagrams. */
    static final class Fake implements AutoCloseable {
        final DatagramSocket sock;
        final String addr;

        Fake(BiFunction<Integer, Long, List<byte[]>> handler) throws IOException {
            sock = new DatagramSocket(0, InetAddress.getLoopbackAddress());
            addr = "127.0.0.1:" + sock.getLocalPort();
            Thread t = new Thread(() -> {
                byte[] b = new byte[2048];
                for (;;) {
                    DatagramPacket p = new DatagramPacket(b, b.length);
                    try {
                        sock.receive(p);
                        ByteBuffer v = ByteBuffer.wrap(b);
                        for (byte[] d : handler.apply(b[3] & 0xFF, v.getLong(8))) {
                            sock.send(new DatagramPacket(d, d.length, p.getSocketAddress()));
                        }
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
                try (Client c = new Client(List.of(a.addr), opts())) {
                    StatusException e = assertThrows(StatusException.class, c::get);
                    assertEquals(st, e.status);
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
                assertEquals(List.of(f.addr + ": no reply in 20 ms", dead + ": refused (ICMP port unreachable)"), e.tried);
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

    @Test
    void layoutBeforeAnyId() throws Exception {
        try (Fake f = new Fake(ClientTest::answering); Client c = new Client(List.of(f.addr), opts())) {
            assertEquals(Layout.DEFAULT, c.layout());
        }
    }
}

// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A client for the flakewire Snowflake ID responders (UDP, protocol version 1), standard library only. It behaves as
 * the C client (lib/client/fw_client.h) does:
 * <ul>
 * <li>every request carries a fresh random 64-bit tag; a reply is accepted only when its tag, op and source address
 * match, so stale, foreign and garbled datagrams are ignored and the wait goes on;</li>
 * <li>requests are padded as PROTOCOL.md section 6 says (unless {@link Options#trusted}), so a responder that does
 * not trust this host still answers in full;</li>
 * <li>a call (one get, one refill of next(), one INFO) has a deadline, {@link Options#timeoutMs} after it started,
 * not an attempt count; it follows the availability contract of doc/clients.md, section "Availability: deadlines,
 * hedging, health" (the class Responders): a closed port (ICMP port unreachable on the responder's connected socket),
 * CLOCK_UNSAFE, NO_LEASE, REFUSED and RETRY_AFTER move the call to the next responder at once; BAD_REQUEST and
 * BAD_VERSION (another responder would say the same), and REFUSED from every responder, end it at once with a
 * {@link StatusException}; a hedged request goes to the next responder after a delay learnt from this client's
 * round trips, under a budget; a responder that refused, answered CLOCK_UNSAFE, NO_LEASE or REFUSED, or stayed
 * silent is remembered as unhealthy, skipped while others are healthy, and probed with INFO every 100 ms until it
 * answers (after a status, from 1 s after it on: it answers INFO while it cannot issue); RETRY_AFTER holds a
 * responder off for its hint; with one responder, refusals, CLOCK_UNSAFE, NO_LEASE
 * (every 10 ms) and RETRY_AFTER are retried until the deadline;</li>
 * <li>every ID is checked before it is handed out: positive, strictly increasing within a reply and above the last
 * one seen from that worker, no more than asked, carrying the datacenter and worker the reply names (the layout is
 * learnt with an INFO request first) and a time within {@link Options#maxSkewMs} of this host's clock.</li>
 * </ul>
 * Thread safe: {@link #next()} hands out buffered IDs without waiting for a refill in flight (refills run on a
 * daemon thread), each thread from its own share of the buffer: no lock and no write shared between threads per
 * call. Errors are checked {@link FlakewireException}s ({@link ResolveException},
 * {@link NoResponseException}, {@link StatusException}, {@link InvalidReplyException}, {@link ClosedException});
 * {@link IllegalArgumentException} only for malformed input. After {@link #close()} every call throws
 * {@link ClosedException}, buffered IDs included.
 */
public final class Client implements AutoCloseable {
    /** Longest hold-off a RETRY_AFTER hint sets on a responder, microseconds (a larger hint counts as this). */
    public static final long RETRY_AFTER_MAX_US = 1_000_000;
    private static final int WORKERS_TRACKED = 64;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** Client options; the defaults are set on construction. */
    public static final class Options {
        /**
         * A call's deadline in ms (1..60000): a call (one get, one refill of next(), one INFO) returns or fails at most
         * this long after it started, whatever the responders do.
         */
        public int timeoutMs = 1000;

        /** Sets timeoutMs from a Duration (whole milliseconds). */
        public Options timeout(java.time.Duration d) {
            timeoutMs = (int) Math.min(Integer.MAX_VALUE, d.toMillis());
            return this;
        }
        /** No longer used: the deadline ({@link #timeoutMs}) bounds a call. Accepted and ignored. */
        public int retries = 3;
        /** The hedge delay's floor in microseconds (0..100000): a hedge never goes out sooner after a send. */
        public int hedgeMinUs = 2000;
        /** Share of calls that may send a hedged request, percent (0..100); 0 turns hedging off. */
        public int hedgeBudgetPct = 5;
        /** IDs fetched per refill by next() (1..2^20). */
        public int prefetch = 1024;
        /** next() refills in the background below this many (0..2^20). */
        public int lowWater = 256;
        /** Do not pad requests (a source the responder trusts). */
        public boolean trusted = false;
        /** Prefetch with RANGE requests, else LIST. */
        public boolean useRange = true;
        /** Reject IDs further than this from the local clock, ms; 0 turns the check off. */
        public long maxSkewMs = 300_000;
        /**
         * Longest next() keeps a prefetched ID, ms (10..3600000). An ID's time is when it was issued: older IDs are
         * dropped (wasted, never reused), so a buffer filled long ago never hands out old times.
         */
        public long maxAgeMs = 1000;
    }

    /** What the client did. */
    public static final class Stats {
        public final AtomicLong requests = new AtomicLong(), timeouts = new AtomicLong(),
                retryAfter = new AtomicLong(), failovers = new AtomicLong(), stray = new AtomicLong(),
                refused = new AtomicLong(), // ICMP port unreachable: failed over at once
                hedges = new AtomicLong(), // hedged requests sent (each took a budget token)
                probes = new AtomicLong(); // background INFO requests to unhealthy responders
    }

    public final Stats stats = new Stats();
    private final Options o;
    private Responders resp;

    private volatile boolean closed;
    private final ReentrantLock net = new ReentrantLock(); // one call at a time; guards the fields below
    private volatile Layout layout;
    private boolean infoDone;
    private final LinkedHashMap<Integer, Long> seen = new LinkedHashMap<>();
    private volatile Wire.Reply lastReply;
    private final java.util.HashMap<Integer, UUID> lastUuid = new java.util.HashMap<>();

    /*
     * Maximum age: IDs fetched at epoch e are handed out while the epoch is below e + AGE_TICKS; the ticker advances it
     * every maxAgeMs / AGE_TICKS while next() is used and stops after IDLE_TICKS ticks without a take from the pool
     * (every buffered ID has expired by then). Refills grow up to GROW_MAX x prefetch while callers drain the pool.
     */
    private static final int AGE_TICKS = 4, IDLE_TICKS = 2 * AGE_TICKS, SLOT_RANGES = 8;
    /*
     * Refills grow up to GROW_MAX x prefetch; with RANGE and a known layout up to GROW_MAX_RANGE x prefetch and
     * GROW_SEQ_MS of one worker's IDs (2^seqBits a ms; never over 2^20): fewer, larger refills leave the CPU to callers
     * taking over a hundred million a second, and with the default 12 sequence bits no refill is larger than before.
     */
    private static final int GROW_MAX = 64, GROW_MAX_RANGE = 1024, GROW_SEQ_MS = 16;

    /* Read by every next(), written rarely: padded to cache lines of their own (superclass fields come first). */
    private static class HotPad0 {
        long p0, p1, p2, p3, p4, p5, p6, p7;
    }

    private static class HotFields extends HotPad0 {
        volatile long epoch;
        volatile boolean closed;
    }

    private static final class Hot extends HotFields {
        long q0, q1, q2, q3, q4, q5, q6, q7;
    }

    /** One thread's share of the pool, handed out without a lock. */
    private static final class Slot {
        final long[] first = new long[SLOT_RANGES], n = new long[SLOT_RANGES];
        int head, len;
        long epoch;

        long take() {
            long id = first[head]++;
            if (--n[head] == 0) {
                head++;
                len--;
            }
            return id;
        }
    }

    private final Hot hot = new Hot();
    private final ThreadLocal<Slot> slots = ThreadLocal.withInitial(Slot::new);

    private final ReentrantLock buf = new ReentrantLock(); // guards the pool and the fields below
    private final Condition changed = buf.newCondition();
    private final ArrayDeque<long[]> runs = new ArrayDeque<>(); // {first, n, epoch, nanoTime}
    private long count;
    private boolean ticking, starved;
    private int idleTicks;
    private long takes, takesSeen, lastRefillNs;
    private int want, low; // IDs per refill and the low-water mark now (adaptive)
    private boolean refilling;
    private int refillWant; // IDs the refiller thread is to fetch next (0: none asked)
    private boolean refillerRunning;
    private final Condition refillAsked = buf.newCondition();
    private long gen;
    private IOException refillErr;
    private final ArrayDeque<UUID> uuids = new ArrayDeque<>();

    /** A host and port parsed from "HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare IPv6 address. */
    public record HostPort(String host, int port) {}

    /** Parses a responder address; the port defaults to 4242. IllegalArgumentException when malformed. */
    public static HostPort parseServer(String s) {
        String host = s, p = null;
        if (s.startsWith("[")) {
            int end = s.indexOf(']');
            if (end < 0) throw new IllegalArgumentException("server \"" + s + "\": '[' without ']'");
            host = s.substring(1, end);
            String rest = s.substring(end + 1);
            if (rest.startsWith(":")) p = rest.substring(1);
            else if (!rest.isEmpty()) throw new IllegalArgumentException("server \"" + s + "\": unexpected \"" + rest + "\"");
        } else if (s.indexOf(':') >= 0 && s.indexOf(':') == s.lastIndexOf(':')) {
            host = s.substring(0, s.indexOf(':'));
            p = s.substring(s.indexOf(':') + 1);
        }
        if (host.isEmpty()) throw new IllegalArgumentException("server \"" + s + "\": empty host");
        int port = Wire.DEFAULT_PORT;
        if (p != null) {
            if (!p.matches("[0-9]{1,5}") || Integer.parseInt(p) < 1 || Integer.parseInt(p) > 65535) {
                throw new IllegalArgumentException("server \"" + s + "\": port \"" + p + "\" not in 1..65535");
            }
            port = Integer.parseInt(p);
        }
        return new HostPort(host, port);
    }

    private static void check(String name, long v, long lo, long hi) {
        if (v < lo || v > hi) throw new IllegalArgumentException(name + " = " + v + " not in " + lo + ".." + hi);
    }

    /**
     * Creates a client for responders tried in the order given; opts null for the defaults.
     *
     * @throws IllegalArgumentException a bad option or address
     * @throws IOException a socket could not be opened or a name resolved
     */
    public Client(List<String> servers, Options opts) throws IOException {
        o = opts != null ? opts : new Options();
        if (servers.isEmpty()) throw new IllegalArgumentException("servers: at least one responder is needed");
        check("timeoutMs", o.timeoutMs, 1, 60000);
        check("hedgeMinUs", o.hedgeMinUs, 0, 100_000);
        check("hedgeBudgetPct", o.hedgeBudgetPct, 0, 100);
        check("prefetch", o.prefetch, 1, 1 << 20);
        check("lowWater", o.lowWater, 0, 1 << 20);
        check("maxSkewMs", o.maxSkewMs, 0, 1L << 40);
        check("maxAgeMs", o.maxAgeMs, 10, 3_600_000);
        want = o.prefetch;
        low = o.lowWater;
        List<InetSocketAddress> addrs = new ArrayList<>();
        for (String s : servers) {
            HostPort hp = parseServer(s);
            InetAddress a;
            try {
                a = InetAddress.getByName(hp.host());
            } catch (UnknownHostException e) {
                throw new ResolveException("flakewire: server \"" + s + "\" does not resolve: " + hp.host(), e);
            }
            addrs.add(new InetSocketAddress(a, hp.port()));
        }
        resp = new Responders(servers, addrs, o.hedgeMinUs, o.hedgeBudgetPct, !o.trusted, stats);
    }

    /** Responder state for the package's tests. */
    Responders responders() {
        return resp;
    }

    /** Closes the sockets: every later call throws {@link ClosedException}, buffered IDs included. */
    @Override
    public void close() {
        closed = true;
        hot.closed = true;
        if (resp != null) resp.close();
        buf.lock();
        try {
            runs.clear();
            count = 0;
            uuids.clear();
            changed.signalAll();
            refillAsked.signalAll();
        } finally {
            buf.unlock();
        }
    }

    /**
     * The responders' layout (for {@link Layout#decode} and {@link Layout#readUuid}), asked with an INFO request if no
     * request has learnt it yet; {@link Layout#DEFAULT} when the responder's INFO carries none. Never null.
     */
    public Layout layout() throws IOException {
        long deadline = deadline();
        lockNet(deadline);
        try {
            ensureLayout(deadline);
            Layout l = layout;
            return l != null ? l : Layout.DEFAULT;
        } finally {
            net.unlock();
        }
    }

    private static final java.util.concurrent.ExecutorService ASYNC =
            java.util.concurrent.Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "flakewire-async");
                t.setDaemon(true);
                return t;
            });

    /** An I/O call as a future. */
    interface Call<T> {
        T run() throws IOException;
    }

    private <T> java.util.concurrent.CompletableFuture<T> async(Call<T> c) {
        java.util.concurrent.CompletableFuture<T> f = new java.util.concurrent.CompletableFuture<>();
        ASYNC.execute(() -> {
            try {
                f.complete(c.run());
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    /** {@link #next()} without blocking the caller: completes at once while IDs are buffered. */
    public java.util.concurrent.CompletableFuture<Long> nextAsync() {
        // This thread's share first, so its IDs keep their order whichever call it makes.
        Slot s = slots.get();
        if (s.len > 0 && s.epoch + AGE_TICKS > hot.epoch && !hot.closed)
            return java.util.concurrent.CompletableFuture.completedFuture(s.take());
        buf.lock();
        try {
            if (!closed) dropExpired(System.nanoTime());
            if (!closed && count > 0) {
                fill(s);
                if (count < low && !refilling) startRefill();
                return java.util.concurrent.CompletableFuture.completedFuture(s.take());
            }
        } finally {
            buf.unlock();
        }
        // The pool is empty: wait for the refill on another thread, with a share of its own
        // (newer than any share handed out before).
        return async(() -> nextSlow(new Slot()));
    }

    /** {@link #get()} on a daemon thread of this library, as a future. */
    public java.util.concurrent.CompletableFuture<Long> getAsync() {
        return async(this::get);
    }

    /** The last reply accepted. */
    public Wire.Reply lastReply() {
        return lastReply;
    }

    /** The deadline of a call starting now (System.nanoTime). */
    private long deadline() {
        return System.nanoTime() + o.timeoutMs * 1_000_000L;
    }

    /**
     * Takes net, one call at a time, waiting at most until deadline (then the no-response error); not interruptible,
     * as a call is not (the interrupt status is set again).
     */
    private void lockNet(long deadline) throws IOException {
        if (closed) throw new ClosedException();
        boolean interrupted = false;
        try {
            for (;;) {
                try {
                    if (net.tryLock(deadline - System.nanoTime(), java.util.concurrent.TimeUnit.NANOSECONDS)) return;
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
        if (closed) throw new ClosedException();
        throw resp.waited("another call of this client held it until this call's deadline");
    }

    /** One request as one call of the availability contract (Responders.call); holds net. */
    private Wire.Reply exchange(int op, int count, long deadline) throws IOException {
        if (closed) throw new ClosedException();
        long tag = RANDOM.nextLong();
        // RANGE pads for 2^seqBits IDs per range once INFO gave the layout.
        Layout l = layout;
        byte[] req = Wire.encodeRequest(op, count, tag, !o.trusted, l != null ? l.seqBits() : 12);
        try {
            Wire.Reply r = resp.call(op, req, tag, deadline);
            lastReply = r;
            return r;
        } catch (StatusException e) {
            lastReply = e.reply;
            throw e;
        }
    }

    private void adoptInfo(Wire.Reply r) {
        Wire.Info i = r.info();
        Layout l = new Layout(i.epochMs(), i.timeBits(), i.dcBits(), i.workerBits(), i.seqBits());
        try {
            l.validate();
            if (layout == null) layout = l;
        } catch (IllegalArgumentException e) {
            // not a layout IDs can be checked against
        }
        infoDone = true;
    }

    /* INFO first (the call's deadline covers it); an error status leaves the IDs unchecked against a layout. */
    private void ensureLayout(long deadline) throws IOException {
        if (infoDone) return;
        try {
            adoptInfo(exchange(Wire.OP_INFO, 0, deadline));
        } catch (StatusException e) {
            // BAD_REQUEST, BAD_VERSION, or REFUSED from every responder: the ID request says what follows
        }
        infoDone = true;
    }

    private void checkId(long id, Wire.Reply r, long nowMs) throws InvalidReplyException {
        Layout l = layout;
        if (l == null) return;
        Layout.Parts p = l.decode(id);
        if (p.datacenter() != r.datacenter() || p.worker() != r.worker()) {
            throw new InvalidReplyException("ID " + id + " names worker " + p.datacenter() + "/" + p.worker()
                    + ", the reply " + r.datacenter() + "/" + r.worker());
        }
        if (o.maxSkewMs > 0 && Math.abs(p.unixMs() - nowMs) > o.maxSkewMs) {
            throw new InvalidReplyException("ID " + id + " is " + (p.unixMs() - nowMs) + " ms from this clock");
        }
    }

    private void validate(Wire.Reply r, List<Wire.Range> rs, long asked) throws InvalidReplyException {
        long nowMs = System.currentTimeMillis();
        long total = 0, prev = -1;
        if (rs.isEmpty()) throw new InvalidReplyException("OK reply without IDs");
        for (Wire.Range x : rs) {
            if (x.n() < 1 || x.first() < 1 || x.n() - 1 > Long.MAX_VALUE - x.first()) {
                throw new InvalidReplyException("ID run " + Long.toUnsignedString(x.first()) + "+" + x.n()
                        + " is not positive int64");
            }
            long last = x.first() + x.n() - 1;
            if (x.first() <= prev) throw new InvalidReplyException("IDs of a reply do not increase");
            checkId(x.first(), r, nowMs);
            checkId(last, r, nowMs);
            prev = last;
            total += x.n();
        }
        if (total > asked) throw new InvalidReplyException(total + " IDs for " + asked + " asked");
        int key = r.datacenter() << 16 | r.worker();
        Long last = seen.remove(key);
        if (last != null && rs.get(0).first() <= last) {
            seen.put(key, last);
            throw new InvalidReplyException("ID " + rs.get(0).first() + " not above " + last + " from the same worker");
        }
        seen.put(key, prev);
        if (seen.size() > WORKERS_TRACKED) seen.remove(seen.keySet().iterator().next());
    }

    private List<Wire.Range> fetch(boolean useRange, int want, long deadline) throws IOException {
        ensureLayout(deadline);
        Wire.Reply r = exchange(useRange ? Wire.OP_RANGE : Wire.OP_LIST, want, deadline);
        List<Wire.Range> rs = r.ranges();
        if (!useRange) {
            rs = new ArrayList<>(r.ids().size());
            for (long id : r.ids()) rs.add(new Wire.Range(id, 1));
        }
        validate(r, rs, want);
        return rs;
    }

    /** One ID with one ID request (one round trip). */
    public long get() throws IOException {
        long deadline = deadline();
        lockNet(deadline);
        try {
            ensureLayout(deadline);
            Wire.Reply r = exchange(Wire.OP_ID, 1, deadline);
            validate(r, List.of(new Wire.Range(r.ids().get(0), 1)), 1);
            return r.ids().get(0);
        } finally {
            net.unlock();
        }
    }

    /**
     * n IDs with LIST requests of at most 181 each, asking again while a responder answers PARTIAL; each request is a
     * call with a deadline of its own.
     */
    public long[] getN(int n) throws IOException {
        check("n", n, 0, 1 << 30);
        long[] out = new long[n];
        int got = 0;
        long deadline = deadline();
        lockNet(deadline);
        try {
            for (; got < n; deadline = deadline()) {
                for (Wire.Range x : fetch(false, Math.min(n - got, Wire.LIST_MAX), deadline)) out[got++] = x.first();
            }
        } finally {
            net.unlock();
        }
        return out;
    }

    /** Up to want (1..65535) IDs as runs of consecutive IDs, one RANGE request; the responder may give fewer. */
    public List<Wire.Range> getRange(int want) throws IOException {
        check("want", want, 1, Wire.RANGE_IDS_MAX);
        long deadline = deadline();
        lockNet(deadline);
        try {
            return fetch(true, want, deadline);
        } finally {
            net.unlock();
        }
    }

    /** The current responder's INFO reply (info() holds the record); its layout is adopted if none was known. */
    public Wire.Reply info() throws IOException {
        long deadline = deadline();
        lockNet(deadline);
        try {
            Wire.Reply r = exchange(Wire.OP_INFO, 0, deadline);
            adoptInfo(r);
            return r;
        } finally {
            net.unlock();
        }
    }

    /**
     * Up to n (1..90) UUIDv7 with one UUID7 request (a responder may give fewer: PARTIAL), checked as the C client
     * does: version 7, the RFC variant, strictly increasing and above the last UUID seen from that worker, a time near
     * this clock, and, with the layout, flakewire's tag and the datacenter and worker the reply names.
     */
    public List<UUID> uuid7(int n) throws IOException {
        check("n", n, 1, Wire.UUID7_MAX);
        long deadline = deadline();
        lockNet(deadline);
        try {
            ensureLayout(deadline);
            Wire.Reply r = exchange(Wire.OP_UUID7, n, deadline);
            if (r.uuids().isEmpty() || r.uuids().size() > n) {
                throw new InvalidReplyException(r.uuids().size() + " UUIDs for " + n + " asked");
            }
            long now = System.currentTimeMillis();
            Layout l = layout;
            List<UUID> out = new ArrayList<>();
            for (byte[] b : r.uuids()) {
                ByteBuffer v = ByteBuffer.wrap(b);
                UUID u = new UUID(v.getLong(), v.getLong());
                Layout.UuidParts p = (l != null ? l : Layout.DEFAULT).readUuid(u);
                if (!p.isV7()) throw new InvalidReplyException(u + " is not a UUIDv7");
                if (l != null && (!p.flakewire() || p.datacenter() != r.datacenter() || p.worker() != r.worker())) {
                    throw new InvalidReplyException(u + " does not carry worker " + r.datacenter() + "/" + r.worker());
                }
                if (!out.isEmpty() && compareUuid(out.get(out.size() - 1), u) >= 0) {
                    throw new InvalidReplyException("UUIDs of a reply do not increase");
                }
                if (o.maxSkewMs > 0 && Math.abs(p.unixMs() - now) > o.maxSkewMs) {
                    throw new InvalidReplyException("UUID " + u + " is " + (p.unixMs() - now) + " ms from this clock");
                }
                out.add(u);
            }
            int key = r.datacenter() << 16 | r.worker();
            UUID last = lastUuid.get(key);
            if (last != null && compareUuid(last, out.get(0)) >= 0) {
                throw new InvalidReplyException("UUID not above the last one from that worker");
            }
            if (lastUuid.size() >= WORKERS_TRACKED) lastUuid.clear();
            lastUuid.put(key, out.get(out.size() - 1));
            return out;
        } finally {
            net.unlock();
        }
    }

    /** Compares UUIDs as 128-bit unsigned big-endian numbers (the order of their text; UUID.compareTo is signed). */
    public static int compareUuid(UUID a, UUID b) {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    }

    /** One UUIDv7 from a small local buffer refilled 90 at a time. */
    public UUID nextUuid7() throws IOException {
        buf.lock();
        try {
            if (closed) throw new ClosedException();
            if (!uuids.isEmpty()) return uuids.poll();
        } finally {
            buf.unlock();
        }
        List<UUID> got = uuid7(Wire.UUID7_MAX);
        buf.lock();
        try {
            uuids.addAll(got.subList(1, got.size()));
        } finally {
            buf.unlock();
        }
        return got.get(0);
    }

    private void refill(int want) {
        int per = o.useRange ? Wire.RANGE_IDS_MAX : Wire.LIST_MAX;
        IOException err = null;
        try {
            for (long fetched = 0; fetched < want;) {
                List<Wire.Range> got;
                long deadline = deadline(); // each request of a refill is a call
                lockNet(deadline);
                try {
                    got = fetch(o.useRange, (int) Math.min(want - fetched, per), deadline);
                } finally {
                    net.unlock();
                }
                buf.lock();
                try {
                    if (closed) throw new ClosedException();
                    long e = hot.epoch, now = System.nanoTime();
                    for (Wire.Range x : got) {
                        long[] tail = runs.peekLast();
                        if (tail != null && tail[2] == e && tail[0] + tail[1] == x.first()) tail[1] += x.n();
                        else runs.add(new long[] {x.first(), x.n(), e, now});
                        count += x.n();
                        fetched += x.n();
                    }
                    changed.signalAll();
                } finally {
                    buf.unlock();
                }
            }
        } catch (IOException e) {
            err = e;
        } catch (RuntimeException e) {
            err = new FlakewireException("flakewire: refill failed: " + e);
        }
        buf.lock();
        try {
            // after a failed refill the next may start at once: the responders' health makes it fast
            refillErr = err;
            refilling = false;
            gen++;
            changed.signalAll();
        } finally {
            buf.unlock();
        }
    }

    /*
     * Sizes the next refill as Leaf sizes its segments: doubled (up to the top the GROW_ constants give) when a caller
     * found the pool empty since the last one, halved (down to prefetch) when the last one lasted more than half of
     * maxAgeMs; at the largest size the low-water mark doubles instead (up to two refills), so one refill is always in flight. Under buf.
     */
    private void startRefill() {
        long cap = (long) o.prefetch * GROW_MAX;
        Layout l = layout;
        if (o.useRange && l != null)
            cap = Math.max(cap, Math.min((long) o.prefetch * GROW_MAX_RANGE, (long) GROW_SEQ_MS << l.seqBits()));
        int top = (int) Math.max(Math.min(cap, 1 << 20), o.prefetch);
        long now = System.nanoTime();
        if (gen > 0 && starved && want < top) {
            want = Math.min(2 * want, top);
            low = (int) ((long) want * o.lowWater / o.prefetch);
        } else if (gen > 0 && starved) {
            low = (int) Math.min(Math.max(2L * low, 1), 2L * want);
        } else if (gen > 0 && now - lastRefillNs > o.maxAgeMs * 500_000L) {
            want = Math.max(want / 2, o.prefetch);
            low = (int) ((long) want * o.lowWater / o.prefetch);
        }
        lastRefillNs = now;
        starved = false;
        refilling = true;
        // Whole RANGE requests: 65,536 IDs would take a second round trip for one.
        refillWant = o.useRange && want > Wire.RANGE_IDS_MAX ? want - want % Wire.RANGE_IDS_MAX : want;
        if (refillerRunning) {
            refillAsked.signal();
            return;
        }
        refillerRunning = true;
        Thread t = new Thread(this::refiller, "flakewire-refill");
        t.setDaemon(true);
        t.start();
    }

    /*
     * The refiller thread: runs the refills startRefill asks for (one thread for many refills: starting a thread per
     * refill cost more than the refill), and ends after two maximum ages without one, or at close.
     */
    private void refiller() {
        boolean interrupted = false;
        try {
            for (;;) {
                int n;
                buf.lock();
                try {
                    long idleNs = o.maxAgeMs * 2_000_000L;
                    while (refillWant == 0 && !closed && idleNs > 0) {
                        try {
                            idleNs = refillAsked.awaitNanos(idleNs);
                        } catch (InterruptedException e) {
                            interrupted = true; // our own thread: an interrupt is no stop, a refill may be owed
                        }
                    }
                    if (refillWant == 0 || closed) {
                        refillerRunning = false;
                        return;
                    }
                    n = refillWant;
                    refillWant = 0;
                } finally {
                    buf.unlock();
                }
                try {
                    refill(n);
                } catch (Error e) {
                    // the refill owed to waiting callers will not come: wake them with an error
                    buf.lock();
                    try {
                        refillerRunning = false;
                        refilling = false;
                        refillErr = new IOException("flakewire: the refiller thread failed: " + e, e);
                        gen++;
                        changed.signalAll();
                    } finally {
                        buf.unlock();
                    }
                    throw e;
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /** Drops the pool's IDs older than maxAgeMs. Under buf. */
    private void dropExpired(long now) {
        long e = hot.epoch;
        for (long[] h; (h = runs.peekFirst()) != null; runs.pollFirst()) {
            if (h[2] + AGE_TICKS > e && now - h[3] < o.maxAgeMs * 1_000_000L) break;
            count -= h[1];
        }
    }

    /** Advances the epoch while next() is used, keeps the pool fresh and full, ends when idle. */
    private void tick() {
        long period = o.maxAgeMs * 1_000_000L / AGE_TICKS;
        for (;;) {
            java.util.concurrent.locks.LockSupport.parkNanos(period);
            buf.lock();
            try {
                hot.epoch = hot.epoch + 1;
                if (takes == takesSeen) idleTicks++;
                else idleTicks = 0;
                takesSeen = takes;
                long now = System.nanoTime();
                dropExpired(now);
                if (closed || idleTicks >= IDLE_TICKS) {
                    ticking = false;
                    return;
                }
                if (count < low && !refilling) startRefill();
            } finally {
                buf.unlock();
            }
        }
    }

    /**
     * One ID from this thread's share of the prefetch buffer (no lock); an empty or expired share takes the next one
     * (an eighth of a refill) from the pool under a lock. Below lowWater a refill of prefetch IDs (grown while callers
     * drain the pool faster) starts on a daemon thread; callers wait only when the pool is empty, and then get the
     * refill's error if it fails, waiting at most timeoutMs. A thread's own IDs increase while its refills are answered
     * by one responder worker (a hedged refill may come from another worker: a hedge or failover can step down); IDs of
     * different threads are not ordered within the maxAgeMs window, since each holds its own share. They are unique in
     * any case.
     */
    public long next() throws IOException {
        Slot s = slots.get();
        if (s.len > 0 && s.epoch + AGE_TICKS > hot.epoch && !hot.closed) return s.take();
        return nextSlow(s);
    }

    private long nextSlow(Slot s) throws IOException {
        s.len = 0; // empty or expired: these IDs are wasted, never reused
        long deadline = deadline();
        boolean interrupted = false;
        buf.lock();
        try {
            takes++;
            ensureTicking();
            boolean waited = false;
            long g = 0;
            for (;;) {
                if (closed) throw new ClosedException();
                dropExpired(System.nanoTime());
                if (count > 0) {
                    // the ticker may have ended idle while this caller waited out a long refill:
                    // without it the epoch stands still and the share would never expire
                    ensureTicking();
                    fill(s);
                    long id = s.take();
                    if (count < low && !refilling) startRefill();
                    return id;
                }
                if (waited && gen != g && refillErr != null) throw refillErr;
                starved = true;
                if (!refilling) startRefill();
                g = gen;
                waited = true;
                long left = deadline - System.nanoTime();
                if (left <= 0) throw resp.waited("no refill brought IDs within this call's deadline");
                try {
                    changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    interrupted = true; // as before: a caller of next() waits on; the flag is kept
                }
            }
        } finally {
            buf.unlock();
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /** Starts the ticker (the epoch that ages shares, the pool's upkeep) unless it runs. Under buf. */
    private void ensureTicking() {
        if (ticking) return;
        ticking = true;
        idleTicks = 0;
        Thread t = new Thread(this::tick, "flakewire-ticker");
        t.setDaemon(true);
        t.start();
    }

    /** Moves one caller's share of the pool to s. Under buf. */
    private void fill(Slot s) {
        long n = Math.max(1, Math.min(want / 8, Wire.RANGE_IDS_MAX));
        s.head = 0;
        s.len = 0;
        s.epoch = Long.MAX_VALUE;
        for (long[] h; n > 0 && s.len < SLOT_RANGES && (h = runs.peekFirst()) != null;) {
            long k = Math.min(n, h[1]);
            s.first[s.len] = h[0];
            s.n[s.len++] = k;
            s.epoch = Math.min(s.epoch, h[2]);
            h[0] += k;
            h[1] -= k;
            count -= k;
            n -= k;
            if (h[1] == 0) runs.pollFirst();
        }
    }

    /** next() as a decimal string (for JSON and JavaScript consumers). */
    public String nextString() throws IOException {
        return Long.toString(next());
    }
}

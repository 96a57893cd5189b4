// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.PortUnreachableException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The responder choice of one client: the availability contract of doc/clients.md, section "Availability: deadlines,
 * hedging, health". It holds each responder's health and RETRY_AFTER hold-off (shared by every call of the client),
 * the hedge delay learnt from the client's own round trips, the hedge budget, and the background probe of unhealthy
 * responders, and runs one call's sends against its deadline ({@link #call}).
 * <p>
 * Threading: calls are serialised by the client (one call at a time reads the call sockets; the RTT window and the
 * budget are touched by calls only). The health fields are shared with the probe thread and guarded by this object's
 * monitor, held briefly. The probe thread has sockets of its own, so a probe never blocks a call. A call is not
 * interruptible (as with the blocking sockets before): an interrupt neither ends it nor is lost (the caller's interrupt
 * status is set again when the call returns), and a socket an interrupt closed is opened again.
 */
final class Responders implements AutoCloseable {
    private static final long MS = 1_000_000L;
    /** An unhealthy responder is asked INFO this often. */
    static final long PROBE_EVERY_NS = 100 * MS;
    /**
     * A responder unhealthy for a status (NO_LEASE, CLOCK_UNSAFE, REFUSED) is not probed before this has passed since
     * its last such status: it answers INFO, so a probe would make it healthy again at once, and every call would ask
     * it first only to hear the status again.
     */
    static final long STATUS_HOLD_NS = 1000 * MS;
    /**
     * A responder that refused or answered NO_LEASE, CLOCK_UNSAFE or REFUSED is asked again at most this often within
     * a call (a restart refuses until it binds).
     */
    static final long REFUSED_RESEND_NS = 10 * MS;
    /** The resend after a timeout waits max(4 x hedge delay, this), doubling. */
    static final long RESEND_MIN_NS = 50 * MS;
    /** The hedge delay before 16 round trips are known, and its ceiling. */
    static final long HEDGE_COLD_NS = 10 * MS, HEDGE_MAX_NS = 100 * MS;
    /** A RETRY_AFTER hint shorter than this holds the responder off this long (the contract's 1 ms..1 s clamp). */
    static final long HOLD_MIN_NS = MS;
    private static final int RTT_RING = 256, RTT_MIN = 16, RTT_EVERY = 64;
    private static final double TOKENS_MAX = 10;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** One responder: its call socket and the health every call shares. */
    static final class Peer {
        final String spec;
        final InetSocketAddress addr;
        volatile DatagramChannel ch; // reopened by the call thread when an interrupt closed it
        final int index;
        // guarded by the Responders' monitor
        boolean healthy = true;
        long holdUntilNs;
        long probeAfterNs; // its last status + STATUS_HOLD_NS: not probed before
        String reason = "";

        Peer(String spec, InetSocketAddress addr, int index, long now) throws IOException {
            this.spec = spec;
            this.addr = addr;
            this.index = index;
            this.holdUntilNs = now;
            this.probeAfterNs = now;
            ch = DatagramChannel.open();
        }
    }

    /** What each responder did in one call; read by callers waiting on the call (a refill) under its monitor. */
    private static final class Call {
        final int[] sends;
        final long[] lastSendNs, pendingSinceNs, refusedNs;
        final boolean[] pending, refused, excluded, policy; // policy: answered REFUSED
        final boolean[] hinted; // answered RETRY_AFTER in this call and not sent to since
        final String[] what;
        long endNs;
        boolean ended;
        /** The send owed: 0 none, 1 the first, 2 a failover (after refused, RETRY_AFTER, a bad status), 3 a resend. */
        int owed = 1;

        Call(int n) {
            sends = new int[n];
            lastSendNs = new long[n];
            pendingSinceNs = new long[n];
            refusedNs = new long[n];
            pending = new boolean[n];
            refused = new boolean[n];
            excluded = new boolean[n];
            policy = new boolean[n];
            hinted = new boolean[n];
            what = new String[n];
        }
    }

    private record Pick(Peer peer, long atNs) {}

    private final List<Peer> peers = new ArrayList<>();
    private final Client.Stats stats;
    private final long hedgeMinNs;
    private final double tokensPerCall;
    private final boolean pad;
    private final Selector sel;
    private final ByteBuffer rx = ByteBuffer.allocate(2048);
    private volatile boolean closed;
    private volatile Call current;
    private boolean interrupted; // the call thread's interrupt, set again when the call returns
    private boolean probing; // guarded by this
    private volatile Selector probeSel;

    // Calls only (serialised by the client).
    private final int[] rtt = new int[RTT_RING];
    private long rttCount, rttP99Ns = HEDGE_COLD_NS;
    private double tokens = TOKENS_MAX;

    /**
     * Opens a connected non-blocking socket per responder (a closed port then reports ICMP port unreachable).
     *
     * @param specs the responders as configured; addrs their resolved addresses, in the same order
     * @param hedgeMinUs the hedge delay's floor; hedgeBudgetPct the share of calls that may hedge (0: none)
     * @throws IOException a socket could not be opened (every socket opened is closed again)
     */
    Responders(List<String> specs, List<InetSocketAddress> addrs, long hedgeMinUs, int hedgeBudgetPct, boolean pad,
            Client.Stats stats) throws IOException {
        this.stats = stats;
        this.hedgeMinNs = hedgeMinUs * 1000;
        this.tokensPerCall = hedgeBudgetPct / 100.0;
        this.pad = pad;
        long now = System.nanoTime();
        Selector s = null;
        try {
            s = Selector.open();
            for (int i = 0; i < specs.size(); i++) {
                Peer p = new Peer(specs.get(i), addrs.get(i), i, now);
                peers.add(p);
                p.ch.configureBlocking(false);
                p.ch.connect(p.addr);
                p.ch.register(s, SelectionKey.OP_READ, p);
            }
        } catch (IOException | RuntimeException e) {
            for (Peer p : peers) closeQuietly(p.ch);
            if (s != null) s.close();
            throw e;
        }
        sel = s;
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            // closing: nothing to report
        }
    }

    /* Opens p's call socket again after an interrupt closed it (NIO channels close on interrupt). Call thread. */
    private void reopen(Peer p) throws IOException {
        DatagramChannel ch = DatagramChannel.open();
        try {
            ch.configureBlocking(false);
            ch.connect(p.addr);
            ch.register(sel, SelectionKey.OP_READ, p);
        } catch (IOException | RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
        p.ch = ch;
        if (closed) closeQuietly(ch);
    }

    /** Closes the sockets and ends the probe thread; a call in progress throws {@link ClosedException}. */
    @Override
    public void close() {
        closed = true;
        Selector ps = probeSel;
        if (ps != null) ps.wakeup();
        for (Peer p : peers) closeQuietly(p.ch);
        closeQuietly(sel);
    }

    /** The hedge delay now: the p99 of the last 256 round trips within [hedge floor, 100 ms]; 10 ms before 16. */
    long hedgeDelayNs() {
        long d = rttCount < RTT_MIN ? HEDGE_COLD_NS : rttP99Ns;
        return Math.min(HEDGE_MAX_NS, Math.max(hedgeMinNs, d));
    }

    /* The p99 is recomputed at the 16th sample and every 64th: one sort of 256 ints per 64 calls. */
    private void addRtt(long ns) {
        rtt[(int) (rttCount % RTT_RING)] = (int) Math.min(Integer.MAX_VALUE, Math.max(0, ns / 1000));
        rttCount++;
        if (rttCount == RTT_MIN || rttCount % RTT_EVERY == 0) {
            int n = (int) Math.min(rttCount, RTT_RING);
            int[] s = Arrays.copyOf(rtt, n);
            Arrays.sort(s);
            rttP99Ns = s[(int) Math.ceil(n * 0.99) - 1] * 1000L;
        }
    }

    /**
     * Where the call sends next, a round through the order (doc/clients.md, "One call"): the responder sent fewest
     * times in this call first; among those the eligible ones (healthy, not held off) in configured order, then the
     * held-off ones (earliest end of hint first), then the unhealthy ones. One held off by RETRY_AFTER, or whose hint
     * given in this call has ended and which was not asked since, counts as not sent: it is asked again when its hint
     * ends, before the unhealthy ones, even though this call asked it already. A held-off one is sent to when its hint
     * ends, one that refused or answered a status in this call at most every 10 ms. Null when every responder's
     * socket failed in this call.
     */
    private synchronized Pick pick(Call c, long now) {
        Peer best = null;
        int bestSends = 0, bestRank = 0;
        long bestAt = 0;
        for (Peer p : peers) {
            int i = p.index;
            if (c.excluded[i]) continue;
            boolean held = p.holdUntilNs - now > 0;
            int rank = !p.healthy ? 2 : held ? 1 : 0;
            int sends = held || c.hinted[i] ? 0 : c.sends[i];
            long at = held ? p.holdUntilNs : now;
            if (c.refused[i] && c.refusedNs[i] + REFUSED_RESEND_NS - at > 0) at = c.refusedNs[i] + REFUSED_RESEND_NS;
            if (best == null || sends < bestSends || sends == bestSends && (rank < bestRank
                    || rank == bestRank && rank == 1 && at - bestAt < 0)) {
                best = p;
                bestSends = sends;
                bestRank = rank;
                bestAt = at;
            }
        }
        return best == null ? null : new Pick(best, bestAt);
    }

    private synchronized void markUnhealthy(Peer p, String reason) {
        p.healthy = false;
        p.reason = reason;
        if (probing || closed) return;
        probing = true;
        Thread t = new Thread(this::probeLoop, "flakewire-probe");
        t.setDaemon(true);
        t.start();
    }

    /* p answered a status at now (NO_LEASE, CLOCK_UNSAFE, REFUSED): unhealthy, not probed before now + STATUS_HOLD_NS. */
    private synchronized void markStatus(Peer p, String reason, long now) {
        p.probeAfterNs = now + STATUS_HOLD_NS;
        markUnhealthy(p, reason);
    }

    /* p answered OK: healthy, and an older status no longer holds its probe. */
    private synchronized void markHealthy(Peer p) {
        p.healthy = true;
        p.probeAfterNs = System.nanoTime();
    }

    /* A valid INFO reply to a probe: healthy, unless a status p answered since holds it. */
    private synchronized void probeAnswered(Peer p) {
        if (p.probeAfterNs - System.nanoTime() <= 0) p.healthy = true;
    }

    private synchronized void hold(Peer p, long untilNs) {
        p.holdUntilNs = untilNs;
    }

    /** Is the responder healthy now (tests). */
    synchronized boolean healthy(int index) {
        return peers.get(index).healthy;
    }

    private static String ms(long ns) {
        return Math.round(ns / 1e6) + " ms";
    }

    /* "SPEC: what it did" for each responder of call c, in configured order. */
    private List<String> describe(Call c, long now) {
        List<String> out = new ArrayList<>();
        synchronized (c) {
            long end = c.ended ? c.endNs : now;
            for (Peer p : peers) {
                int i = p.index;
                String w;
                // Silence unless it answered and was asked again less than 50 ms ago (a lone responder's NO_LEASE,
                // resent every 10 ms, stays "answered NO_LEASE").
                if (c.pending[i] && (c.what[i] == null || end - c.pendingSinceNs[i] >= RESEND_MIN_NS)) {
                    w = "no reply in " + ms(end - c.pendingSinceNs[i]);
                } else if (c.what[i] != null) w = c.what[i];
                else {
                    synchronized (this) {
                        w = "not tried (" + (p.holdUntilNs - now > 0 ? "held off by RETRY_AFTER"
                                : p.healthy ? "no time left" : "unhealthy: " + p.reason) + ")";
                    }
                }
                out.add(p.spec + ": " + w);
            }
        }
        return out;
    }

    /**
     * The no-response error of a caller that waited for another call (a refill, or the client's lock) until its own
     * deadline: what each responder did in the client's latest call, or has done before.
     */
    NoResponseException waited(String why) {
        Call c = current;
        List<String> tried = new ArrayList<>();
        if (c != null) tried.addAll(describe(c, System.nanoTime()));
        else for (Peer p : peers) tried.add(p.spec + ": not tried");
        tried.add("(" + why + ")");
        return new NoResponseException(tried);
    }

    /* Sends req to p; false when the socket reports the port refused at once (recorded as a refusal). */
    private boolean send(Call c, Peer p, byte[] req, long now) throws IOException {
        int i = p.index;
        synchronized (c) {
            c.sends[i]++;
            c.hinted[i] = false;
            c.lastSendNs[i] = now;
            if (!c.pending[i]) c.pendingSinceNs[i] = now;
            c.pending[i] = true;
        }
        stats.requests.incrementAndGet();
        try {
            p.ch.write(ByteBuffer.wrap(req));
            return true;
        } catch (PortUnreachableException e) {
            refused(c, p, now);
            return false;
        } catch (ClosedByInterruptException e) {
            if (closed) throw new ClosedException();
            interrupted = true;
            Thread.interrupted();
            reopen(p); // this send is lost: the call's timers resend
            return true;
        } catch (IOException e) {
            if (closed) throw new ClosedException();
            failed(c, p, e.toString());
            return false;
        }
    }

    private void refused(Call c, Peer p, long now) {
        int i = p.index;
        stats.refused.incrementAndGet();
        synchronized (c) {
            c.pending[i] = false;
            c.refused[i] = true;
            c.refusedNs[i] = now;
            c.what[i] = "refused";
            c.owed = 2;
        }
        markUnhealthy(p, "refused");
    }

    private void failed(Call c, Peer p, String what) {
        synchronized (c) {
            c.pending[p.index] = false;
            c.excluded[p.index] = true;
            c.what[p.index] = what;
            c.owed = 2;
        }
        markUnhealthy(p, what);
    }

    /*
     * Reads p's datagrams; the OK reply of this call if one came, null otherwise (events recorded in c). Throws the
     * StatusException of BAD_REQUEST or BAD_VERSION, or of the REFUSED that makes every responder's (the contract's
     * "Statuses").
     */
    private Wire.Reply drain(Call c, Peer p, int op, long tag) throws IOException {
        for (int k = 0; k < 256; k++) {
            rx.clear();
            int len;
            try {
                len = p.ch.read(rx);
            } catch (PortUnreachableException e) {
                refused(c, p, System.nanoTime());
                continue;
            } catch (ClosedByInterruptException e) {
                if (closed) throw new ClosedException();
                interrupted = true;
                Thread.interrupted();
                reopen(p); // a reply queued on the closed socket is lost: the call's timers resend
                return null;
            } catch (IOException e) {
                if (closed) throw new ClosedException();
                failed(c, p, e.toString());
                return null;
            }
            if (len <= 0) return null;
            long now = System.nanoTime();
            Wire.Reply r;
            try {
                r = Wire.parseReply(rx.array(), len);
            } catch (Wire.WireException e) {
                if (e.reason.equals("version") && e.tag == tag) {
                    r = new Wire.Reply(op | Wire.OP_REPLY, Wire.ST_BAD_VERSION, 0, 0, tag, 0, 0, 0, List.of(),
                            List.of(), null, List.of());
                } else {
                    stats.stray.incrementAndGet();
                    continue;
                }
            }
            if (r.tag() != tag || r.requestOp() != op) {
                stats.stray.incrementAndGet();
                continue;
            }
            int i = p.index;
            if (r.status() == Wire.ST_OK) {
                addRtt(now - c.lastSendNs[i]);
                synchronized (c) {
                    c.pending[i] = false;
                    c.what[i] = "answered";
                }
                markHealthy(p);
                return r;
            }
            if (r.status() == Wire.ST_RETRY_AFTER) {
                stats.retryAfter.incrementAndGet();
                long h = Math.min(r.retryAfterUs(), Client.RETRY_AFTER_MAX_US) * 1000;
                hold(p, now + Math.max(h, HOLD_MIN_NS));
                synchronized (c) {
                    c.pending[i] = false;
                    c.hinted[i] = true;
                    c.what[i] = "RETRY_AFTER " + (r.retryAfterUs() >= 1000 ? r.retryAfterUs() / 1000 + " ms"
                            : r.retryAfterUs() + " us");
                    c.owed = 2;
                }
                continue;
            }
            // BAD_REQUEST, BAD_VERSION: another responder would say the same: the call ends, p stays healthy.
            // NO_LEASE, CLOCK_UNSAFE, REFUSED: p is unhealthy, the call moves on (back to p at most every 10 ms).
            int st = r.status();
            boolean fatal = st == Wire.ST_BAD_REQUEST || st == Wire.ST_BAD_VERSION, allRefused = true;
            String what = "answered " + Wire.statusName(st).toUpperCase(java.util.Locale.ROOT).replace('-', '_');
            synchronized (c) {
                c.pending[i] = false;
                c.what[i] = what;
                if (!fatal) {
                    c.refused[i] = true;
                    c.refusedNs[i] = now;
                    c.owed = 2;
                }
                c.policy[i] |= st == Wire.ST_REFUSED;
                for (boolean x : c.policy) allRefused &= x;
            }
            if (fatal) throw new StatusException(r);
            markStatus(p, what, now);
            if (allRefused) throw new StatusException(r);
        }
        return null;
    }

    /* Ends call c at now: responders sent to and silent since are unhealthy (rule 3). */
    private void end(Call c, long now) {
        List<Peer> silent = new ArrayList<>();
        synchronized (c) {
            for (Peer p : peers) if (c.pending[p.index]) silent.add(p);
            c.endNs = now;
            c.ended = true;
        }
        for (Peer p : silent) markUnhealthy(p, "no reply in " + ms(now - c.pendingSinceNs[p.index]));
    }

    /**
     * One call: sends req (whose tag is tag, operation op) to the responders as the contract says (failover at once on
     * refused, RETRY_AFTER, NO_LEASE, CLOCK_UNSAFE and REFUSED; a hedge after the hedge delay while the budget has a
     * token; a resend after max(4 x delay, 50 ms), doubling) until an OK reply or the deadline.
     *
     * @return the OK reply (tag, op and source checked)
     * @throws NoResponseException at the deadline, naming what each responder did (or when every socket failed)
     * @throws StatusException at once: a responder answered BAD_REQUEST or BAD_VERSION, or every responder answered
     *         REFUSED in this call
     * @throws ClosedException the client was closed
     */
    Wire.Reply call(int op, byte[] req, long tag, long deadlineNs) throws IOException {
        if (closed) throw new ClosedException();
        Call c = new Call(peers.size());
        current = c;
        if (tokensPerCall > 0) tokens = Math.min(TOKENS_MAX, tokens + tokensPerCall);
        long d = hedgeDelayNs(), t = Math.max(4 * d, RESEND_MIN_NS), lastSend = System.nanoTime();
        boolean hedgeArmed = false;
        interrupted = Thread.interrupted();
        try {
            for (;;) {
                if (closed) throw new ClosedException();
                if (Thread.interrupted()) interrupted = true; // else select returns at once and I/O closes sockets
                long now = System.nanoTime();
                if (now - deadlineNs >= 0) {
                    stats.timeouts.incrementAndGet();
                    end(c, now);
                    throw new NoResponseException(describe(c, now));
                }
                long wake = deadlineNs;
                int owed;
                synchronized (c) {
                    owed = c.owed;
                }
                if (owed != 0) {
                    Pick p = pick(c, now);
                    if (p == null) { // every responder's socket failed
                        end(c, now);
                        throw new NoResponseException(describe(c, now));
                    }
                    if (p.atNs - now > 0) {
                        wake = p.atNs - wake < 0 ? p.atNs : wake;
                    } else {
                        if (owed == 2) {
                            stats.failovers.incrementAndGet();
                            t = Math.min(2 * t, 3600_000 * MS);
                        }
                        synchronized (c) {
                            c.owed = 0;
                        }
                        lastSend = now;
                        hedgeArmed = tokensPerCall > 0;
                        send(c, p.peer, req, now);
                        continue;
                    }
                } else {
                    long hedgeAt = lastSend + d, resendAt = lastSend + t;
                    if (hedgeArmed && hedgeAt - now <= 0) {
                        hedgeArmed = false;
                        Pick p = pick(c, now);
                        if (p != null && p.atNs - now <= 0 && tokens >= 1) {
                            tokens -= 1;
                            stats.hedges.incrementAndGet();
                            lastSend = now;
                            hedgeArmed = true;
                            send(c, p.peer, req, now);
                            continue;
                        }
                    } else if (hedgeArmed && hedgeAt - wake < 0) {
                        wake = hedgeAt;
                    }
                    if (resendAt - now <= 0) {
                        stats.timeouts.incrementAndGet();
                        t = Math.min(2 * t, 3600_000 * MS);
                        Pick p = pick(c, now);
                        if (p != null && p.atNs - now <= 0) {
                            lastSend = now;
                            hedgeArmed = tokensPerCall > 0;
                            send(c, p.peer, req, now);
                        } else {
                            synchronized (c) {
                                c.owed = 3;
                            }
                        }
                        continue;
                    }
                    if (resendAt - wake < 0) wake = resendAt;
                }
                long left = wake - now;
                if (left >= MS) sel.select((left + MS - 1) / MS);
                else if (left > 0) sel.select(1);
                else sel.selectNow();
                try {
                    for (SelectionKey k : sel.selectedKeys()) {
                        Wire.Reply r = drain(c, (Peer) k.attachment(), op, tag);
                        if (r != null) {
                            end(c, System.nanoTime());
                            return r;
                        }
                    }
                } finally {
                    sel.selectedKeys().clear();
                }
            }
        } catch (ClosedSelectorException | ClosedChannelException e) {
            if (closed) throw new ClosedException();
            throw e;
        } finally {
            if (!c.ended) end(c, System.nanoTime());
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /*
     * The probe thread: every 100 ms an INFO request to each unhealthy responder from a socket of its own, but not to
     * one held by its status (probeAfterNs); the first valid INFO reply marks that responder healthy. Ends when none
     * is unhealthy, or at close.
     */
    private void probeLoop() {
        Map<Peer, DatagramChannel> open = new HashMap<>();
        Map<Peer, long[]> tags = new HashMap<>();
        ByteBuffer b = ByteBuffer.allocate(2048);
        Selector ps = null;
        boolean done = false;
        try {
            ps = Selector.open();
            probeSel = ps;
            for (;;) {
                List<Peer> todo = new ArrayList<>();
                synchronized (this) {
                    long now = System.nanoTime();
                    boolean any = false;
                    for (Peer p : peers) {
                        if (p.healthy) continue;
                        any = true;
                        if (p.probeAfterNs - now <= 0) todo.add(p); // else held: looked at again next round
                    }
                    if (closed || !any) {
                        probing = false;
                        done = true;
                        return;
                    }
                }
                for (Map.Entry<Peer, DatagramChannel> e : new ArrayList<>(open.entrySet())) {
                    if (!todo.contains(e.getKey())) closeQuietly(open.remove(e.getKey()));
                }
                long tick = System.nanoTime() + PROBE_EVERY_NS;
                for (Peer p : todo) {
                    long tg = RANDOM.nextLong();
                    long[] tt = tags.computeIfAbsent(p, k -> new long[2]);
                    tt[1] = tt[0];
                    tt[0] = tg;
                    try {
                        DatagramChannel ch = open.get(p);
                        if (ch == null) {
                            ch = DatagramChannel.open();
                            open.put(p, ch);
                            ch.configureBlocking(false);
                            ch.connect(p.addr);
                            ch.register(ps, SelectionKey.OP_READ, p);
                        }
                        stats.probes.incrementAndGet();
                        ch.write(ByteBuffer.wrap(Wire.encodeRequest(Wire.OP_INFO, 0, tg, pad, 12)));
                    } catch (IOException e) {
                        // refused or unreachable: asked again next round
                    }
                }
                for (long left; (left = tick - System.nanoTime()) > 0;) {
                    ps.select(Math.max(1, (left + MS - 1) / MS));
                    if (closed) return;
                    for (SelectionKey k : ps.selectedKeys()) {
                        Peer p = (Peer) k.attachment();
                        DatagramChannel ch = (DatagramChannel) k.channel();
                        if (probeReplied(ch, b, tags.get(p))) {
                            probeAnswered(p);
                            closeQuietly(open.remove(p));
                        }
                    }
                    ps.selectedKeys().clear();
                }
            }
        } catch (IOException | ClosedSelectorException e) {
            // the probe ends here; the next responder marked unhealthy starts another
        } finally {
            for (DatagramChannel ch : open.values()) closeQuietly(ch);
            if (ps != null) closeQuietly(ps);
            if (!done) {
                synchronized (this) {
                    probing = false;
                }
            }
        }
    }

    /* Reads ch's datagrams: true when one is a valid INFO reply to one of the last two probes (tags). */
    private static boolean probeReplied(DatagramChannel ch, ByteBuffer b, long[] tags) {
        for (int k = 0; k < 64; k++) {
            b.clear();
            int len;
            try {
                len = ch.read(b);
            } catch (PortUnreachableException e) {
                continue;
            } catch (IOException e) {
                return false;
            }
            if (len <= 0) return false;
            try {
                Wire.Reply r = Wire.parseReply(b.array(), len);
                if (r.status() == Wire.ST_OK && r.requestOp() == Wire.OP_INFO && tags != null
                        && (r.tag() == tags[0] || r.tag() == tags[1])) {
                    return true;
                }
            } catch (Wire.WireException e) {
                // not a reply: ignored
            }
        }
        return false;
    }
}

// SPDX-License-Identifier: BSD-3-Clause
// The flakewire client for Node.js: IDs from one or more responders over
// UDP, no runtime dependencies. It behaves as the C client
// (lib/client/fw_client.h) does:
// - every request carries a fresh random 64-bit tag; a reply is accepted
//   only when its tag, op and source address match, so stale, foreign and
//   garbled datagrams are ignored and the wait goes on;
// - requests are padded as PROTOCOL.md section 6 says (unless trusted), so a
//   responder that does not trust this host still answers in full;
// - a call (one get(), one refill of next(), one INFO) ends at most
//   timeoutMs (1 s) after it started, with IDs or an error, whatever the
//   responders do (doc/clients.md, "Availability: deadlines, hedging,
//   health"; avail.ts): it asks the first responder of the order (healthy
//   ones in the order given, then those holding off after RETRY_AFTER, then
//   unhealthy ones); a refusal (ICMP port unreachable on the connected
//   socket), CLOCK_UNSAFE, NO_LEASE, REFUSED or RETRY_AFTER move it to the
//   next one at once; after a delay learnt from the client's round trips it
//   hedges to the next healthy one, under a budget (hedgeBudgetPct of
//   calls); with no answer it asks again (50 ms, doubling); a lone
//   responder is asked until the deadline (every 10 ms while it refuses or
//   answers NO_LEASE or CLOCK_UNSAFE); BAD_REQUEST, BAD_VERSION, and
//   REFUSED from every responder end the call at once with a StatusError;
// - the client remembers refused, silent, CLOCK_UNSAFE, NO_LEASE and
//   REFUSED responders as unhealthy, skips them while others answer and
//   probes them with INFO every 100 ms (an unref'd timer) until they answer
//   again (after a status, from 1 s after it on);
// - every ID is checked before it is handed out: positive, strictly
//   increasing within a reply and above the last one seen from that worker,
//   no more than asked, carrying the datacenter and worker the reply names
//   (the layout is learnt with an INFO request first) and a time within
//   maxSkewMs of this host's clock.
// Calls run one at a time (a promise queue; a call waiting behind another
// waits at most its own deadline); next() resolves at once
// from the prefetch buffer while a refill is in flight. Errors are the six
// FlakewireError subclasses (a code each: doc/clients.md); after close()
// every call rejects with ClosedError, buffered IDs included.

import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import dns from "node:dns/promises";
import net from "node:net";

import {
  Budget, Event, PROBE_EVERY_MS, Pending, RESEND_MIN_MS, RETRY_AFTER_MIN_MS, RttWindow,
  SICK_RESEND_GAP_MS, STATUS_HOLD_MS, statusWord,
} from "./avail.js";
import { DEFAULT_LAYOUT, INT64_MAX, Layout, readUUID } from "./layout.js";
import * as wire from "./wire.js";

/** The longest RETRY_AFTER hold-off honoured: a responder is not asked
 * again before its hint passes (at most this), unless no other one is eligible. */
export const RETRY_AFTER_MAX_US = 1_000_000;
const WORKERS_TRACKED = 64;

/** The six errors every flakewire client has (doc/clients.md), by `code`. */
export type ErrorCode = "BAD_ADDRESS" | "RESOLVE" | "NO_RESPONSE" | "STATUS" | "INVALID_REPLY" | "CLOSED";

export class FlakewireError extends Error {
  constructor(msg: string, readonly code: ErrorCode, options?: { cause?: unknown }) {
    super(msg, options);
    this.name = new.target.name;
  }
}

/** A server string that cannot be parsed (or no server at all). */
export class AddressError extends FlakewireError {
  constructor(msg: string) { super(msg, "BAD_ADDRESS"); }
}

/** A host name that does not resolve (cause: Node's getaddrinfo error). */
export class ResolveError extends FlakewireError {
  constructor(msg: string, cause: unknown) { super(msg, "RESOLVE", { cause }); }
}

/** No responder answered by the call's deadline; `tried` names each server
 * asked, in the order first asked, and what it did last ("127.0.0.1:4243:
 * no reply in 80 ms", "127.0.0.1:4244: RETRY_AFTER 900 ms",
 * "127.0.0.1:4245: refused", "...: answered NO_LEASE"). Empty: the call waited its
 * whole deadline behind another call of this client. */
export class NoResponseError extends FlakewireError {
  constructor(readonly tried: string[]) {
    super(tried.length ? `flakewire: no responder answered: ${tried.join("; ")}`
      : "flakewire: no responder answered: the deadline passed behind another call", "NO_RESPONSE");
  }
}

/** The client was closed; buffered IDs are no longer handed out. */
export class ClosedError extends FlakewireError {
  constructor() { super("flakewire: client closed", "CLOSED"); }
}

/** A responder answered BAD_REQUEST or BAD_VERSION (another responder would
 * say the same: the call ends at once), or every responder answered REFUSED
 * in the call (at once, not at the deadline; reply is the last one's).
 * RETRY_AFTER, CLOCK_UNSAFE, NO_LEASE and a REFUSED while another responder
 * can still be asked move the call on; at the deadline they are named in a
 * NoResponseError ("answered NO_LEASE"). */
export class StatusError extends FlakewireError {
  readonly status: number;
  readonly statusName: string;
  constructor(readonly reply: wire.Reply) {
    super(`flakewire: responder answered ${wire.statusName(reply.status)} (status ${reply.status})`, "STATUS");
    this.status = reply.status;
    this.statusName = wire.statusName(reply.status);
  }
}

/** A reply failed validation; none of its IDs were used. */
export class InvalidReplyError extends FlakewireError {
  constructor(msg: string) { super(msg, "INVALID_REPLY"); }
}

export interface Options {
  /** A call's deadline in ms (1..60000): a call (one get(), one refill of
   * next(), one INFO, one request of getN()) resolves or rejects at most
   * this long after it started. Default 1000. */
  timeoutMs?: number;
  /** The floor of the hedge delay in µs (0..100000): a call asks the next
   * responder too when the first has not answered within the 99th
   * percentile of the client's last 256 round trips (10 ms before 16 of
   * them), at least this, at most 100 ms. Default 2000. */
  hedgeMinUs?: number;
  /** Hedges allowed, in % of calls (0..100; 0: no hedging); a bucket of 10
   * hedges, full at create(). Default 5. */
  hedgeBudgetPct?: number;
  /** No longer used: the deadline bounds a call. Accepted, ignored. */
  retries?: number;
  /** IDs fetched per refill by next() (1..2^20). Default 1024. */
  prefetch?: number;
  /** next() refills in the background below this many (0..2^20). Default 256. */
  lowWater?: number;
  /** Do not pad requests (a source the responder trusts). Default false. */
  trusted?: boolean;
  /** Prefetch with RANGE, else LIST. Default true. */
  useRange?: boolean;
  /** Reject IDs further than this from the local clock (0: off). Default 300000. */
  maxSkewMs?: number;
  /** Longest next() keeps a prefetched ID, ms (10..3600000). An ID's time is when it was
   * issued: older IDs are dropped (wasted, never reused). Default 1000. */
  maxAgeMs?: number;
}

/* Maximum age: IDs fetched at epoch e are handed out while the epoch is below
 * e + AGE_TICKS; a timer advances it every maxAgeMs / AGE_TICKS while next() is
 * used and stops after IDLE_TICKS ticks without a call. Refills grow up to
 * GROW_MAX x prefetch while callers drain the pool. */
const AGE_TICKS = 4;
const IDLE_TICKS = 2 * AGE_TICKS;
const GROW_MAX = 64;

export interface Stats {
  /** Requests sent, hedges and resends included. */
  requests: number;
  /** Resends after a timeout (T). */
  timeouts: number;
  retryAfter: number;
  /** Moves to the next responder after a refusal or a status. */
  failovers: number;
  stray: number;
  /** ICMP port unreachable (ECONNREFUSED): failed over at once. */
  refused: number;
  /** The same request sent to another responder after the hedge delay. */
  hedges: number;
  /** INFO requests to unhealthy responders. */
  probes: number;
}

/** Splits "HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare IPv6 address. */
export function parseServer(s: string): { host: string; port: number } {
  let host = s;
  let p: string | undefined;
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    if (end < 0) throw new AddressError(`server "${s}": '[' without ']'`);
    host = s.slice(1, end);
    const rest = s.slice(end + 1);
    if (rest.startsWith(":")) p = rest.slice(1);
    else if (rest !== "") throw new AddressError(`server "${s}": unexpected "${rest}" after ']'`);
  } else if (s.split(":").length === 2) {
    [host, p] = s.split(":");
  }
  if (host === "") throw new AddressError(`server "${s}": empty host`);
  let port = wire.DEFAULT_PORT;
  if (p !== undefined) {
    if (!/^[0-9]+$/.test(p) || Number(p) < 1 || Number(p) > 65535) {
      throw new AddressError(`server "${s}": port "${p}" not in 1..65535`);
    }
    port = Number(p);
  }
  return { host, port };
}

interface Server {
  spec: string;
  address: string;
  port: number;
  sock: dgram.Socket;
  // Shared by every call (doc/clients.md, "Availability"):
  sick: boolean; // refused, a bad status, or silent while another answered (or to the deadline)
  holdUntil: number; // RETRY_AFTER: not asked before (performance.now()), unless nothing else is eligible
  probeAfter: number; // its last status + STATUS_HOLD_MS: not probed before
  probeTag?: bigint; // the probe in flight
}

/** What one call did with one responder. */
interface CallSrv {
  sends: number;
  first: number; // its first send in this call
  waiting: number; // its first send since its last answer; -1: none outstanding
  answered: boolean; // any valid reply in this call
  lastSent: number;
  what: string; // the last thing it did ("refused", "RETRY_AFTER 900 ms", "answered NO_LEASE")
  refused: boolean; // answered REFUSED in this call
}

function check(name: string, v: number, lo: number, hi: number): void {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new RangeError(`${name} = ${v} not in ${lo}..${hi}`);
}

export class Client {
  readonly stats: Stats = {
    requests: 0, timeouts: 0, retryAfter: 0, failovers: 0, stray: 0, refused: 0, hedges: 0, probes: 0,
  };
  /** The layout learnt from INFO, undefined before; getLayout() never is. */
  layout?: Layout;
  /** The last reply accepted. */
  lastReply?: wire.Reply;

  private readonly o: Required<Options>;
  private closed = false;
  private readonly pends = new Map<bigint, Pending>();
  private readonly rtt: RttWindow;
  private readonly budget: Budget;
  private prober: NodeJS.Timeout | null = null;
  private infoDone = false;
  private seen = new Map<number, bigint>();
  private queue: Promise<unknown> = Promise.resolve();
  private runs: (wire.Range & { epoch: number })[] = [];
  private count = 0;
  private epoch = 0;
  private ticking = false;
  private idleTicks = 0;
  private takes = 0;
  private takesSeen = 0;
  private starved = false;
  private want = 0;
  private low = 0;
  private lastRefill = 0;
  private gen = 0;
  private refilling: Promise<void> | null = null;
  private refillErr: unknown = null;
  private uuidBuf: string[] = [];
  private lastUUID = new Map<number, string>();

  private constructor(private readonly srv: Server[], o: Options) {
    this.o = {
      timeoutMs: 1000, hedgeMinUs: 2000, hedgeBudgetPct: 5, retries: 3, prefetch: 1024, lowWater: 256,
      trusted: false, useRange: true, maxSkewMs: 300_000, maxAgeMs: 1000, ...o,
    };
    this.want = this.o.prefetch;
    this.low = this.o.lowWater;
    this.rtt = new RttWindow(this.o.hedgeMinUs / 1000);
    this.budget = new Budget(this.o.hedgeBudgetPct);
  }

  /** Resolves the responders (tried in the order given) and opens one
   * socket each. Rejects with RangeError on a bad option or address. */
  static async create(servers: string[], opts: Options = {}): Promise<Client> {
    if (!servers.length) throw new AddressError("servers: at least one responder is needed");
    const o = opts;
    check("timeoutMs", o.timeoutMs ?? 1000, 1, 60000);
    check("hedgeMinUs", o.hedgeMinUs ?? 2000, 0, 100_000);
    check("hedgeBudgetPct", o.hedgeBudgetPct ?? 5, 0, 100);
    check("prefetch", o.prefetch ?? 1024, 1, 1 << 20);
    check("lowWater", o.lowWater ?? 256, 0, 1 << 20);
    check("maxSkewMs", o.maxSkewMs ?? 300000, 0, 2 ** 40);
    check("maxAgeMs", o.maxAgeMs ?? 1000, 10, 3_600_000);
    const list: Server[] = [];
    for (const spec of servers) {
      const { host, port } = parseServer(spec);
      let address = host;
      if (!net.isIP(host)) {
        try {
          address = (await dns.lookup(host)).address;
        } catch (e) {
          for (const s of list) s.sock.close();
          throw new ResolveError(`flakewire: server "${spec}" does not resolve: ${(e as Error).message}`, e);
        }
      }
      const sock = dgram.createSocket(net.isIPv6(address) ? "udp6" : "udp4");
      // Connected: the kernel reports ICMP port unreachable as ECONNREFUSED.
      await new Promise<void>((resolve, reject) => {
        sock.once("error", reject);
        sock.connect(port, address, () => { sock.off("error", reject); resolve(); });
      });
      // An idle client does not keep the process alive; a wait's timer does.
      sock.unref();
      list.push({ spec, address, port, sock, sick: false, holdUntil: 0, probeAfter: 0 });
    }
    const c = new Client(list, o);
    list.forEach((s, i) => {
      s.sock.on("message", (b, rinfo) => c.onMessage(i, b, rinfo));
      s.sock.on("error", (e: NodeJS.ErrnoException) => {
        if (e.code === "ECONNREFUSED") c.refused(i);
      });
    });
    return c;
  }

  /** Closes the sockets: every later call rejects with ClosedError, and
   * the IDs still buffered are dropped. */
  close(): void {
    this.closed = true;
    this.runs = [];
    this.count = 0;
    this.uuidBuf = [];
    if (this.prober) clearInterval(this.prober);
    this.prober = null;
    for (const p of this.pends.values()) p.interrupt();
    for (const s of this.srv) {
      try { s.sock.close(); } catch { /* already closed */ }
    }
  }

  /** Whether the client holds responder i (in the order given to create())
   * healthy: not refused, not silent while another answered, no bad status
   * since its last valid INFO reply to a probe. A responder unhealthy for a
   * status (NO_LEASE, CLOCK_UNSAFE, REFUSED) is first probed 1 s after it. */
  healthy(i: number): boolean {
    return !this.srv[i].sick;
  }

  /** The responders' layout (for decode and readUUID), asked with an INFO
   * request if no request has learnt it yet; DEFAULT_LAYOUT when the
   * responder's INFO carries none. */
  getLayout(): Promise<Layout> {
    const deadline = performance.now() + this.o.timeoutMs;
    return this.serial(deadline, async () => {
      await this.ensureLayout(deadline);
      return this.layout ?? DEFAULT_LAYOUT;
    });
  }

  private onMessage(i: number, b: Buffer, rinfo: dgram.RemoteInfo): void {
    const s = this.srv[i];
    const at = performance.now();
    if (rinfo.address !== s.address || rinfo.port !== s.port) {
      this.stats.stray++;
      return;
    }
    let r: wire.Reply;
    try {
      r = wire.parseReply(b);
    } catch (e) {
      const p = e instanceof wire.WireError && e.reason === "version" ? this.pends.get(e.tag!) : undefined;
      if (p?.sent[i]) {
        p.push({
          srv: i, at, reply: {
            op: p.op | wire.OP_REPLY, status: wire.ST_BAD_VERSION, flags: 0, count: 0, tag: (e as wire.WireError).tag!,
            datacenter: 0, worker: 0, retryAfterUs: 0, ids: [], ranges: [], uuids: [],
          },
        });
        return;
      }
      this.stats.stray++;
      return;
    }
    const p = this.pends.get(r.tag);
    if (!p || !p.sent[i] || (r.op & 0x7f) !== p.op) {
      this.stats.stray++;
      return;
    }
    p.push({ srv: i, reply: r, at });
  }

  /** Responder i's socket reported ICMP port unreachable: every request sent there hears it. */
  private refused(i: number): void {
    const at = performance.now();
    for (const p of this.pends.values()) if (p.sent[i]) p.push({ srv: i, reply: null, at });
  }

  /** Sends req to responder i for p; a failed send is an event of p. */
  private sendTo(i: number, p: Pending, req: Uint8Array): void {
    p.sent[i] = true;
    const ev = (e: NodeJS.ErrnoException) => p.push({
      srv: i, reply: null, at: performance.now(), err: e.code === "ECONNREFUSED" ? undefined : e.message,
    });
    try {
      this.srv[i].sock.send(req, (e) => { if (e) ev(e); });
    } catch (e) {
      if (!this.closed) ev(e as NodeJS.ErrnoException);
    }
  }

  /** Eligible responders (healthy, no hold-off) in configured order, then
   * held-off ones (earliest hold_until first), then unhealthy ones. */
  private order(now: number): number[] {
    const idx = this.srv.map((_, i) => i);
    const held = idx.filter((i) => !this.srv[i].sick && this.srv[i].holdUntil > now);
    held.sort((a, b) => this.srv[a].holdUntil - this.srv[b].holdUntil);
    return [
      ...idx.filter((i) => !this.srv[i].sick && this.srv[i].holdUntil <= now), ...held,
      ...idx.filter((i) => this.srv[i].sick),
    ];
  }

  private eligible(i: number, now: number): boolean {
    return !this.srv[i].sick && this.srv[i].holdUntil <= now;
  }

  /** Healthy, held off by RETRY_AFTER at now. */
  private heldOff(i: number, now: number): boolean {
    return !this.srv[i].sick && this.srv[i].holdUntil > now;
  }

  /** Notes responder i unhealthy for a status it answered at (NO_LEASE,
   * CLOCK_UNSAFE, REFUSED): not probed before at + STATUS_HOLD_MS. */
  private markStatus(i: number, at: number): void {
    this.srv[i].probeAfter = at + STATUS_HOLD_MS;
    this.markSick(i);
  }

  /** Notes responder i unhealthy; the probe timer runs while one is. */
  private markSick(i: number): void {
    this.srv[i].sick = true;
    if (!this.prober && !this.closed) {
      this.prober = setInterval(() => this.probe(), PROBE_EVERY_MS);
      this.prober.unref();
    }
  }

  /** Asks each unhealthy responder INFO (the last probe's reply no longer
   * counts), but not one held by its status; a valid reply marks it healthy
   * unless a status it answered since holds it. Never waits for a call. */
  private probe(): void {
    let any = false;
    const now = performance.now();
    this.srv.forEach((s, i) => {
      if (s.probeTag !== undefined) this.pends.delete(s.probeTag);
      s.probeTag = undefined;
      if (!s.sick || this.closed) return;
      any = true;
      if (s.probeAfter > now) return;
      const tag = randomBytes(8).readBigUInt64BE();
      const p = new Pending(wire.OP_INFO, this.srv.length, (ev) => {
        if (ev.reply?.status === wire.ST_OK && ev.reply.info && s.probeAfter <= performance.now()) s.sick = false;
      });
      this.pends.set(tag, p);
      s.probeTag = tag;
      this.stats.probes++;
      this.sendTo(i, p, wire.encodeRequest(wire.OP_INFO, 0, tag, !this.o.trusted));
    });
    if (!any && this.prober) {
      clearInterval(this.prober);
      this.prober = null;
    }
  }

  /** Runs fn after every call queued before it (one at a time); rejects with
   * a NoResponseError naming no responder when deadline passes first. */
  private serial<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
    const prev = this.queue;
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    this.queue = prev.then(() => mine);
    return (async () => {
      try {
        let t: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((r) => { t = setTimeout(() => r(false), Math.max(0, deadline - performance.now())); });
        const turn = await Promise.race([prev.then(() => true), late]);
        clearTimeout(t);
        if (!turn) throw new NoResponseError([]);
        return await fn();
      } finally {
        release();
      }
    })();
  }

  /** One call's request (the contract's "One call"): the first responder in
   * the order, a failover at once on a refusal, NO_LEASE, CLOCK_UNSAFE,
   * REFUSED or RETRY_AFTER, a hedge after d under the budget, a resend after
   * T; an error at the deadline naming what each responder did. A
   * StatusError at once on BAD_REQUEST or BAD_VERSION, or when every
   * responder answered REFUSED (the contract's "Statuses"). */
  private async exchange(op: number, count: number, deadline: number): Promise<wire.Reply> {
    if (this.closed) throw new ClosedError();
    const tag = randomBytes(8).readBigUInt64BE();
    // RANGE pads for 2^seqBits IDs per range once INFO gave the layout.
    const req = wire.encodeRequest(op, count, tag, !this.o.trusted, this.layout?.seqBits ?? 12);
    const n = this.srv.length;
    const p = new Pending(op, n);
    this.pends.set(tag, p);
    try {
      this.budget.call();
      const d = this.rtt.delayMs();
      let T = Math.max(4 * d, RESEND_MIN_MS);
      const st: CallSrv[] = Array.from({ length: n }, () => ({
        sends: 0, first: 0, waiting: -1, answered: false, lastSent: 0, what: "", refused: false,
      }));
      const tried: number[] = []; // in the order of their first send
      const cycle = new Array<boolean>(n).fill(false); // sent in the current round of the order
      let last = 0; // the last send
      let plan = -1, planAt = 0;
      // The next responder of the order (recomputed) not yet sent in this round,
      // or one held off by RETRY_AFTER even if this round asked it (a RETRY_AFTER
      // also takes it out of the round: asked again when its hint ends, before
      // the unhealthy ones, not after a silent one's resend timer); a new round
      // when every one was.
      const next = (now: number): number => {
        const o = this.order(now);
        const i = o.find((k) => !cycle[k] || this.heldOff(k, now));
        if (i !== undefined) return i;
        cycle.fill(false);
        return o[0];
      };
      const hedgeTo = (now: number): number =>
        this.order(now).find((k) => !cycle[k] && this.eligible(k, now)) ?? -1;
      // Sends to i now, or when its hold-off ends (nothing else is eligible), or
      // SICK_RESEND_GAP_MS after the call's last send to it when it is unhealthy.
      const schedule = (i: number, now: number) => {
        const s = this.srv[i];
        let at = Math.max(now, s.holdUntil);
        if (s.sick && st[i].sends > 0) at = Math.max(at, st[i].lastSent + SICK_RESEND_GAP_MS);
        cycle[i] = true;
        plan = i;
        planAt = at;
      };
      const send = (i: number, now: number) => {
        const s = st[i];
        if (s.sends === 0) {
          s.first = now;
          tried.push(i);
        }
        s.sends++;
        s.lastSent = last = now;
        if (s.waiting < 0) s.waiting = now;
        cycle[i] = true;
        this.stats.requests++;
        this.sendTo(i, p, req);
      };
      const failover = (now: number) => {
        this.stats.failovers++;
        schedule(next(now), now);
        if (T < this.o.timeoutMs) T *= 2;
      };

      schedule(this.order(performance.now())[0], performance.now());
      for (;;) {
        if (this.closed) throw new ClosedError();
        const now = performance.now();
        if (plan >= 0 && now >= planAt && now < deadline) {
          send(plan, now);
          plan = -1;
          continue;
        }
        if (now >= deadline) {
          if (plan >= 0 && st[plan].sends === 0) { // held off past the deadline, never asked
            tried.push(plan);
            st[plan].what = "held off by RETRY_AFTER past the deadline";
          }
          throw this.noResponse(st, tried, deadline);
        }
        let wake = deadline;
        if (plan >= 0) {
          wake = Math.min(wake, planAt);
        } else {
          if (this.budget.has()) {
            if (now >= last + d) {
              const i = hedgeTo(now);
              if (i >= 0) {
                this.budget.take();
                this.stats.hedges++;
                send(i, now);
                continue;
              }
            } else if (hedgeTo(now) >= 0) {
              wake = Math.min(wake, last + d);
            }
          }
          if (now >= last + T) {
            this.stats.timeouts++;
            schedule(next(now), now);
            if (T < this.o.timeoutMs) T *= 2;
            continue;
          }
          wake = Math.min(wake, last + T);
        }
        const ev: Event | null = await p.next(wake - now);
        if (this.closed) throw new ClosedError();
        if (!ev) continue;
        const s = st[ev.srv];
        s.waiting = -1;
        const r = ev.reply;
        if (!r) {
          if (ev.err !== undefined) {
            s.what = `send failed: ${ev.err}`;
          } else {
            this.stats.refused++;
            s.what = "refused";
          }
          this.markSick(ev.srv);
          if (plan < 0) failover(ev.at);
          continue;
        }
        s.answered = true;
        this.lastReply = r;
        if (r.status === wire.ST_OK) {
          this.srv[ev.srv].sick = false;
          this.srv[ev.srv].probeAfter = 0; // it issues: an older status no longer holds
          if (s.sends === 1) this.rtt.note(ev.at - s.first); // Karn: only when the send it answers is known
          st.forEach((x, i) => { if (x.sends > 0 && !x.answered && i !== ev.srv) this.markSick(i); });
          return r;
        }
        if (r.status === wire.ST_RETRY_AFTER) {
          this.stats.retryAfter++;
          this.srv[ev.srv].sick = false;
          const h = Math.min(Math.max(r.retryAfterUs / 1000, RETRY_AFTER_MIN_MS), RETRY_AFTER_MAX_US / 1000);
          this.srv[ev.srv].holdUntil = ev.at + h;
          cycle[ev.srv] = false; // out of this round (see next)
          s.what = `RETRY_AFTER ${Math.round(r.retryAfterUs / 1000)} ms`;
          if (plan < 0 || plan === ev.srv) failover(ev.at);
          continue;
        }
        if (r.status === wire.ST_CLOCK_UNSAFE || r.status === wire.ST_NO_LEASE || r.status === wire.ST_REFUSED) {
          this.markStatus(ev.srv, ev.at);
          s.what = `answered ${statusWord(r.status)}`;
          s.refused ||= r.status === wire.ST_REFUSED;
          if (st.every((x) => x.refused)) throw new StatusError(r);
          if (plan < 0 || plan === ev.srv) failover(ev.at);
          continue;
        }
        throw new StatusError(r); // BAD_REQUEST, BAD_VERSION: another responder would say the same
      }
    } finally {
      this.pends.delete(tag);
    }
  }

  /** The deadline's error: what each responder did, in the order first
   * asked; those still silent are marked unhealthy. */
  private noResponse(st: CallSrv[], tried: number[], deadline: number): NoResponseError {
    return new NoResponseError(tried.map((i) => {
      const s = st[i];
      let what = s.what;
      // Silence is what it did unless it answered, refused or failed a send and
      // was asked again less than RESEND_MIN_MS ago (a lone responder's
      // NO_LEASE, resent every 10 ms, stays "answered NO_LEASE").
      const quiet = deadline - s.waiting;
      if (s.waiting >= 0 && (what === "" || quiet >= RESEND_MIN_MS)) what = `no reply in ${Math.round(quiet)} ms`;
      if (s.waiting >= 0 && !s.answered) this.markSick(i);
      return `${this.srv[i].spec}: ${what}`;
    }));
  }

  private adoptInfo(r: wire.Reply): void {
    const i = r.info!;
    const l = new Layout(i.epochMs, i.timeBits, i.dcBits, i.workerBits, i.seqBits);
    try {
      l.validate();
      this.layout ??= l;
    } catch { /* not a layout we can check IDs against */ }
    this.infoDone = true;
  }

  /** Learns the layout with an INFO request (once), within the caller's deadline. */
  private async ensureLayout(deadline: number): Promise<void> {
    if (this.infoDone) return;
    try {
      this.adoptInfo(await this.exchange(wire.OP_INFO, 0, deadline));
    } catch (e) {
      if (!(e instanceof StatusError) || e.status === wire.ST_RETRY_AFTER) throw e;
    }
    this.infoDone = true;
  }

  private checkId(id: bigint, r: wire.Reply, nowMs: bigint): void {
    if (!this.layout) return;
    const p = this.layout.decode(id);
    if (p.datacenter !== r.datacenter || p.worker !== r.worker) {
      throw new InvalidReplyError(`ID ${id} names worker ${p.datacenter}/${p.worker}, the reply ${r.datacenter}/${r.worker}`);
    }
    const skew = p.unixMs - nowMs;
    const max = BigInt(this.o.maxSkewMs);
    if (max > 0n && (skew > max || -skew > max)) {
      throw new InvalidReplyError(`ID ${id} is ${skew} ms from this clock`);
    }
  }

  private validate(r: wire.Reply, runs: wire.Range[], asked: number): void {
    const nowMs = BigInt(Date.now());
    let total = 0;
    let prev = -1n;
    if (!runs.length) throw new InvalidReplyError("OK reply without IDs");
    for (const x of runs) {
      const last = x.first + BigInt(x.n) - 1n;
      if (x.n < 1 || x.first < 1n || last > INT64_MAX) {
        throw new InvalidReplyError(`ID run ${x.first}+${x.n} is not positive int64`);
      }
      if (x.first <= prev) throw new InvalidReplyError("IDs of a reply do not increase");
      if (x.first > INT64_MAX) throw new InvalidReplyError(`ID ${x.first} is negative as int64`);
      this.checkId(x.first, r, nowMs);
      this.checkId(last, r, nowMs);
      prev = last;
      total += x.n;
    }
    if (total > asked) throw new InvalidReplyError(`${total} IDs for ${asked} asked`);
    const key = r.datacenter * 65536 + r.worker;
    const seen = this.seen.get(key);
    if (seen !== undefined && runs[0].first <= seen) {
      throw new InvalidReplyError(`ID ${runs[0].first} not above ${seen} from the same worker`);
    }
    this.seen.delete(key);
    this.seen.set(key, prev);
    if (this.seen.size > WORKERS_TRACKED) this.seen.delete(this.seen.keys().next().value!);
  }

  private async fetch(useRange: boolean, want: number, deadline: number): Promise<wire.Range[]> {
    await this.ensureLayout(deadline);
    const r = await this.exchange(useRange ? wire.OP_RANGE : wire.OP_LIST, want, deadline);
    const runs = useRange ? r.ranges : r.ids.map((first) => ({ first, n: 1 }));
    this.validate(r, runs, want);
    return runs;
  }

  /** One ID with one ID request (one round trip). */
  get(): Promise<bigint> {
    const deadline = performance.now() + this.o.timeoutMs;
    return this.serial(deadline, async () => {
      await this.ensureLayout(deadline);
      const r = await this.exchange(wire.OP_ID, 1, deadline);
      this.validate(r, [{ first: r.ids[0], n: 1 }], 1);
      return r.ids[0];
    });
  }

  /** n IDs with LIST requests of at most 181 each, asking again while a
   * responder answers PARTIAL; each request has its own deadline (timeoutMs). */
  getN(n: number): Promise<bigint[]> {
    check("n", n, 0, 2 ** 30);
    return this.serial(performance.now() + this.o.timeoutMs, async () => {
      const out: bigint[] = [];
      while (out.length < n) {
        const want = Math.min(n - out.length, wire.LIST_MAX);
        for (const x of await this.fetch(false, want, performance.now() + this.o.timeoutMs)) out.push(x.first);
      }
      return out;
    });
  }

  /** Up to want (1..65535) IDs as runs of consecutive IDs, one RANGE
   * request; the responder may give fewer (PARTIAL). */
  getRange(want: number): Promise<wire.Range[]> {
    check("want", want, 1, wire.RANGE_IDS_MAX);
    const deadline = performance.now() + this.o.timeoutMs;
    return this.serial(deadline, () => this.fetch(true, want, deadline));
  }

  /** The INFO reply of the first responder of the order (.info holds the
   * record); its layout is adopted for the ID checks if none was known. */
  info(): Promise<wire.Reply> {
    const deadline = performance.now() + this.o.timeoutMs;
    return this.serial(deadline, async () => {
      const r = await this.exchange(wire.OP_INFO, 0, deadline);
      this.adoptInfo(r);
      return r;
    });
  }

  /** Up to n (1..90) UUIDv7 in canonical text with one UUID7 request (a
   * responder may give fewer: PARTIAL), checked as the C client does:
   * version 7, the RFC variant, strictly increasing and above the last UUID
   * seen from that worker, a time near this clock, and, with the layout,
   * flakewire's tag and the datacenter and worker the reply names. */
  uuid7(n = 1): Promise<string[]> {
    check("n", n, 1, wire.UUID7_MAX);
    const deadline = performance.now() + this.o.timeoutMs;
    return this.serial(deadline, async () => {
      await this.ensureLayout(deadline);
      const r = await this.exchange(wire.OP_UUID7, n, deadline);
      if (!r.uuids.length || r.uuids.length > n) throw new InvalidReplyError(`${r.uuids.length} UUIDs for ${n} asked`);
      const now = BigInt(Date.now());
      const max = BigInt(this.o.maxSkewMs);
      const out = r.uuids.map(wire.formatUUID);
      r.uuids.forEach((u, i) => {
        const p = readUUID(u, this.layout ?? DEFAULT_LAYOUT);
        if (!p.isV7) throw new InvalidReplyError(`${out[i]} is not a UUIDv7`);
        if (this.layout && (!p.flakewire || p.datacenter !== r.datacenter || p.worker !== r.worker)) {
          throw new InvalidReplyError(`${out[i]} does not carry worker ${r.datacenter}/${r.worker}`);
        }
        if (i > 0 && out[i] <= out[i - 1]) throw new InvalidReplyError("UUIDs of a reply do not increase");
        if (max > 0n && (p.unixMs - now > max || now - p.unixMs > max)) {
          throw new InvalidReplyError(`UUID ${out[i]} is ${p.unixMs - now} ms from this clock`);
        }
      });
      const key = r.datacenter * 65536 + r.worker;
      const last = this.lastUUID.get(key);
      if (last !== undefined && out[0] <= last) throw new InvalidReplyError("UUID not above the last one from that worker");
      if (this.lastUUID.size >= WORKERS_TRACKED) this.lastUUID.clear();
      this.lastUUID.set(key, out[out.length - 1]);
      return out;
    });
  }

  /** One UUIDv7 from a small local buffer refilled 90 at a time. */
  async nextUUID7(): Promise<string> {
    if (this.closed) throw new ClosedError();
    if (!this.uuidBuf.length) this.uuidBuf.push(...(await this.uuid7(wire.UUID7_MAX)));
    return this.uuidBuf.shift()!;
  }

  /** One call: all its requests within one deadline. */
  private async refill(want: number): Promise<void> {
    const per = this.o.useRange ? wire.RANGE_IDS_MAX : wire.LIST_MAX;
    const deadline = performance.now() + this.o.timeoutMs;
    let fetched = 0;
    try {
      while (fetched < want) {
        const n = Math.min(want - fetched, per);
        const runs = await this.serial(deadline, () => this.fetch(this.o.useRange, n, deadline));
        if (this.closed) throw new ClosedError();
        for (const x of runs) {
          const tail = this.runs[this.runs.length - 1];
          if (tail && tail.epoch === this.epoch && tail.first + BigInt(tail.n) === x.first) tail.n += x.n;
          else this.runs.push({ ...x, epoch: this.epoch });
          this.count += x.n;
          fetched += x.n;
        }
      }
      this.refillErr = null;
    } catch (e) {
      // The next refill may start at once: the health memory makes it fast.
      this.refillErr = e;
    }
    this.gen++;
  }

  /* Sized as Leaf sizes its segments: doubled (up to GROW_MAX x prefetch) when a
   * caller found the pool empty since the last refill, halved (down to prefetch)
   * when the last one lasted more than half of maxAgeMs; at the largest size the
   * low-water mark doubles instead (up to two refills). */
  private startRefill(): Promise<void> {
    if (!this.refilling) {
      const top = Math.min(this.o.prefetch * GROW_MAX, Math.max(1 << 20, this.o.prefetch));
      const now = Date.now();
      if (this.gen > 0 && this.starved && this.want < top) {
        this.want = Math.min(2 * this.want, top);
        this.low = Math.floor(this.want * this.o.lowWater / this.o.prefetch);
      } else if (this.gen > 0 && this.starved) {
        this.low = Math.min(Math.max(2 * this.low, 1), 2 * this.want);
      } else if (this.gen > 0 && now - this.lastRefill > this.o.maxAgeMs / 2) {
        this.want = Math.max(Math.floor(this.want / 2), this.o.prefetch);
        this.low = Math.floor(this.want * this.o.lowWater / this.o.prefetch);
      }
      this.lastRefill = now;
      this.starved = false;
      this.refilling = this.refill(this.want).finally(() => { this.refilling = null; });
    }
    return this.refilling;
  }

  /** Advances the epoch while next() is used; stops when idle (unref'd: never keeps the process alive). */
  private tick(): void {
    this.epoch++;
    this.idleTicks = this.takes === this.takesSeen ? this.idleTicks + 1 : 0;
    this.takesSeen = this.takes;
    this.dropExpired();
    if (this.closed || this.idleTicks >= IDLE_TICKS) {
      this.ticking = false;
      return;
    }
    if (this.count < this.low && !this.refilling) void this.startRefill();
    setTimeout(() => this.tick(), this.o.maxAgeMs / AGE_TICKS).unref();
  }

  private dropExpired(): void {
    while (this.runs.length && this.runs[0].epoch + AGE_TICKS <= this.epoch) {
      this.count -= this.runs[0].n;
      this.runs.shift();
    }
  }

  private take(): bigint {
    const h = this.runs[0];
    const id = h.first;
    h.first++;
    if (--h.n === 0) this.runs.shift();
    this.count--;
    this.takes++;
    if (this.count < this.low && !this.refilling) void this.startRefill();
    return id;
  }

  /** One ID from the prefetch buffer: resolves at once while IDs are
   * buffered; below lowWater a refill of prefetch IDs (grown while callers
   * drain the buffer faster than a round trip) runs in the background, so
   * many concurrent callers on one event loop share one refill in flight.
   * IDs older than maxAgeMs are dropped. All callers take from one buffer
   * in turn: the IDs increase in the order the calls run. Rejects only when
   * the buffer is empty and a refill fails. */
  async next(): Promise<bigint> {
    this.ensureTicking();
    for (;;) {
      if (this.closed) throw new ClosedError();
      if (this.count > 0 && this.runs[0].epoch + AGE_TICKS > this.epoch) return this.take();
      this.dropExpired();
      if (this.count > 0) continue;
      this.starved = true;
      await this.startRefill();
      // The ticker may have ended idle while this caller waited out a long refill:
      // without it the epoch stands still and the refill's IDs never expire.
      this.ensureTicking();
      if (this.count === 0 && this.refillErr) throw this.refillErr;
    }
  }

  /** Starts the ticker (the epoch that ages the buffer) unless it runs. */
  private ensureTicking(): void {
    if (this.ticking) return;
    this.ticking = true;
    this.idleTicks = 0;
    setTimeout(() => this.tick(), this.o.maxAgeMs / AGE_TICKS).unref();
  }

  /** next() as a decimal string: JavaScript numbers keep only 53 bits. */
  async nextString(): Promise<string> {
    return (await this.next()).toString();
  }
}

// SPDX-License-Identifier: BSD-3-Clause
// The flakewire client for Node.js: IDs from one or more responders over
// UDP, no runtime dependencies. It behaves as the C client
// (lib/client/fw_client.h) does:
// - every request carries a fresh random 64-bit tag; a reply is accepted
//   only when its tag, op and source address match, so stale, foreign and
//   garbled datagrams are ignored and the wait goes on;
// - requests are padded as PROTOCOL.md section 6 says (unless trusted), so a
//   responder that does not trust this host still answers in full;
// - each responder has a connected UDP socket, so a closed port (ICMP port
//   unreachable: ECONNREFUSED) moves to the next responder at once;
// - a silent responder is asked again (timeout, 2x, 4x, ...: 3 s with the
//   defaults), then the next one, round robin; CLOCK_UNSAFE and NO_LEASE
//   move to the next responder at once; RETRY_AFTER waits as told (at most
//   1 s) and counts as an attempt;
// - every ID is checked before it is handed out: positive, strictly
//   increasing within a reply and above the last one seen from that worker,
//   no more than asked, carrying the datacenter and worker the reply names
//   (the layout is learnt with an INFO request first) and a time within
//   maxSkewMs of this host's clock.
// Exchanges run one at a time (a promise queue); next() resolves at once
// from the prefetch buffer while a refill is in flight. Errors are the six
// FlakewireError subclasses (a code each: doc/clients.md); after close()
// every call rejects with ClosedError, buffered IDs included.

import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import dns from "node:dns/promises";
import net from "node:net";

import { DEFAULT_LAYOUT, INT64_MAX, Layout, readUUID } from "./layout.js";
import * as wire from "./wire.js";

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

/** No responder answered within its attempts; `tried` says, per server,
 * what happened ("no reply in 3000 ms", "refused (ICMP port unreachable)"). */
export class NoResponseError extends FlakewireError {
  constructor(readonly tried: string[]) {
    super(`flakewire: no responder answered: ${tried.join("; ")}`, "NO_RESPONSE");
  }
}

/** The client was closed; buffered IDs are no longer handed out. */
export class ClosedError extends FlakewireError {
  constructor() { super("flakewire: client closed", "CLOSED"); }
}

/** A responder answered with an error status, or every responder kept
 * answering RETRY_AFTER, CLOCK_UNSAFE or NO_LEASE. */
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
  /** First attempt's wait in ms (1..60000), doubled per retry. Default 200. */
  timeoutMs?: number;
  /** Resends per responder (0..10). Default 3. */
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
  requests: number;
  timeouts: number;
  retryAfter: number;
  failovers: number;
  stray: number;
  /** ICMP port unreachable (ECONNREFUSED): failed over at once. */
  refused: number;
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

interface Waiter {
  op: number;
  tag: bigint;
  resolve: (r: wire.Reply | null | "refused") => void;
}

interface Server {
  spec: string;
  address: string;
  port: number;
  sock: dgram.Socket;
  waiter?: Waiter;
}

function check(name: string, v: number, lo: number, hi: number): void {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new RangeError(`${name} = ${v} not in ${lo}..${hi}`);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Client {
  readonly stats: Stats = { requests: 0, timeouts: 0, retryAfter: 0, failovers: 0, stray: 0, refused: 0 };
  /** The layout learnt from INFO, undefined before; getLayout() never is. */
  layout?: Layout;
  /** The last reply accepted. */
  lastReply?: wire.Reply;

  private readonly o: Required<Options>;
  private cur = 0;
  private closed = false;
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
  private holdUntil = 0;
  private uuidBuf: string[] = [];
  private lastUUID = new Map<number, string>();

  private constructor(private readonly srv: Server[], o: Options) {
    this.o = {
      timeoutMs: 200, retries: 3, prefetch: 1024, lowWater: 256, trusted: false, useRange: true,
      maxSkewMs: 300_000, maxAgeMs: 1000, ...o,
    };
    this.want = this.o.prefetch;
    this.low = this.o.lowWater;
  }

  /** Resolves the responders (tried in the order given) and opens one
   * socket each. Rejects with RangeError on a bad option or address. */
  static async create(servers: string[], opts: Options = {}): Promise<Client> {
    if (!servers.length) throw new AddressError("servers: at least one responder is needed");
    const o = opts;
    check("timeoutMs", o.timeoutMs ?? 200, 1, 60000);
    check("retries", o.retries ?? 3, 0, 10);
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
      list.push({ spec, address, port, sock });
    }
    const c = new Client(list, o);
    for (const s of list) {
      s.sock.on("message", (b, rinfo) => c.onMessage(s, b, rinfo));
      s.sock.on("error", (e: NodeJS.ErrnoException) => {
        if (e.code === "ECONNREFUSED" && s.waiter) {
          const w = s.waiter;
          s.waiter = undefined;
          w.resolve("refused");
        }
      });
    }
    return c;
  }

  /** Closes the sockets: every later call rejects with ClosedError, and
   * the IDs still buffered are dropped. */
  close(): void {
    this.closed = true;
    this.runs = [];
    this.count = 0;
    this.uuidBuf = [];
    for (const s of this.srv) {
      const w = s.waiter;
      s.waiter = undefined;
      w?.resolve(null);
      try { s.sock.close(); } catch { /* already closed */ }
    }
  }

  /** The responders' layout (for decode and readUUID), asked with an INFO
   * request if no request has learnt it yet; DEFAULT_LAYOUT when the
   * responder's INFO carries none. */
  getLayout(): Promise<Layout> {
    return this.serial(async () => {
      await this.ensureLayout();
      return this.layout ?? DEFAULT_LAYOUT;
    });
  }

  private onMessage(s: Server, b: Buffer, rinfo: dgram.RemoteInfo): void {
    const w = s.waiter;
    if (rinfo.address !== s.address || rinfo.port !== s.port || !w) {
      this.stats.stray++;
      return;
    }
    let r: wire.Reply;
    try {
      r = wire.parseReply(b);
    } catch (e) {
      if (e instanceof wire.WireError && e.reason === "version" && e.tag === w.tag) {
        s.waiter = undefined;
        w.resolve({
          op: w.op | wire.OP_REPLY, status: wire.ST_BAD_VERSION, flags: 0, count: 0, tag: w.tag,
          datacenter: 0, worker: 0, retryAfterUs: 0, ids: [], ranges: [], uuids: [],
        });
        return;
      }
      this.stats.stray++;
      return;
    }
    if (r.tag !== w.tag || (r.op & 0x7f) !== w.op) {
      this.stats.stray++;
      return;
    }
    s.waiter = undefined;
    w.resolve(r);
  }

  private wait(s: Server, op: number, tag: bigint, ms: number): Promise<wire.Reply | null | "refused"> {
    return new Promise((resolve) => {
      // Timers run before I/O in an event loop turn: a reply that arrived
      // while callers kept the loop busy is read before the wait expires.
      const w: Waiter = {
        op, tag, resolve: (r) => {
          clearTimeout(t);
          resolve(r);
        },
      };
      const t = setTimeout(() => setImmediate(() => {
        if (s.waiter !== w) return;
        s.waiter = undefined;
        resolve(null);
      }), ms);
      s.waiter = w;
    });
  }

  private send(s: Server, b: Uint8Array): Promise<boolean> {
    return new Promise((resolve) => {
      try {
        s.sock.send(b, (err) => resolve(!err));
      } catch {
        resolve(false); // closed
      }
    });
  }

  /** Runs fn after every exchange queued before it (one at a time). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.queue.then(fn, fn);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private async exchange(op: number, count: number): Promise<wire.Reply> {
    if (this.closed) throw new ClosedError();
    const tag = randomBytes(8).readBigUInt64BE();
    // RANGE pads for 2^seqBits IDs per range once INFO gave the layout.
    const req = wire.encodeRequest(op, count, tag, !this.o.trusted, this.layout?.seqBits ?? 12);
    let retryAfter: wire.Reply | undefined;
    let moved: wire.Reply | undefined;
    const tried: string[] = [];
    for (let i = 0; i < this.srv.length; i++) {
      const s = this.srv[this.cur];
      let what = "", waited = 0;
      for (let a = 0; a <= this.o.retries; a++) {
        const waiting = this.wait(s, op, tag, this.o.timeoutMs * 2 ** a);
        if (!(await this.send(s, req))) {
          s.waiter?.resolve(null);
          await waiting;
          if (this.closed) throw new ClosedError();
          what = "send failed";
          break;
        }
        this.stats.requests++;
        const r = await waiting;
        if (this.closed) throw new ClosedError();
        if (r === "refused") {
          this.stats.refused++;
          what = "refused (ICMP port unreachable)";
          break;
        }
        if (!r) {
          this.stats.timeouts++;
          waited += this.o.timeoutMs * 2 ** a;
          what = `no reply in ${waited} ms`;
          continue;
        }
        this.lastReply = r;
        if (r.status === wire.ST_OK) return r;
        if (r.status === wire.ST_RETRY_AFTER) {
          this.stats.retryAfter++;
          retryAfter = r;
          await sleep(Math.min(r.retryAfterUs, RETRY_AFTER_MAX_US) / 1000);
          continue;
        }
        if (r.status === wire.ST_CLOCK_UNSAFE || r.status === wire.ST_NO_LEASE) {
          moved = r;
          break;
        }
        throw new StatusError(r);
      }
      tried.push(`${s.spec}: ${what}`);
      this.cur = (this.cur + 1) % this.srv.length;
      this.stats.failovers++;
    }
    if (moved) throw new StatusError(moved);
    if (retryAfter) throw new StatusError(retryAfter);
    throw new NoResponseError(tried);
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

  private async ensureLayout(): Promise<void> {
    if (this.infoDone) return;
    try {
      this.adoptInfo(await this.exchange(wire.OP_INFO, 0));
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

  private async fetch(useRange: boolean, want: number): Promise<wire.Range[]> {
    await this.ensureLayout();
    const r = await this.exchange(useRange ? wire.OP_RANGE : wire.OP_LIST, want);
    const runs = useRange ? r.ranges : r.ids.map((first) => ({ first, n: 1 }));
    this.validate(r, runs, want);
    return runs;
  }

  /** One ID with one ID request (one round trip). */
  get(): Promise<bigint> {
    return this.serial(async () => {
      await this.ensureLayout();
      const r = await this.exchange(wire.OP_ID, 1);
      this.validate(r, [{ first: r.ids[0], n: 1 }], 1);
      return r.ids[0];
    });
  }

  /** n IDs with LIST requests of at most 181 each, asking again while a
   * responder answers PARTIAL. */
  getN(n: number): Promise<bigint[]> {
    check("n", n, 0, 2 ** 30);
    return this.serial(async () => {
      const out: bigint[] = [];
      while (out.length < n) {
        for (const x of await this.fetch(false, Math.min(n - out.length, wire.LIST_MAX))) out.push(x.first);
      }
      return out;
    });
  }

  /** Up to want (1..65535) IDs as runs of consecutive IDs, one RANGE
   * request; the responder may give fewer (PARTIAL). */
  getRange(want: number): Promise<wire.Range[]> {
    check("want", want, 1, wire.RANGE_IDS_MAX);
    return this.serial(() => this.fetch(true, want));
  }

  /** The current responder's INFO reply (.info holds the record); its
   * layout is adopted for the ID checks if none was known. */
  info(): Promise<wire.Reply> {
    return this.serial(async () => {
      const r = await this.exchange(wire.OP_INFO, 0);
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
    return this.serial(async () => {
      await this.ensureLayout();
      const r = await this.exchange(wire.OP_UUID7, n);
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

  private async refill(want: number): Promise<void> {
    const per = this.o.useRange ? wire.RANGE_IDS_MAX : wire.LIST_MAX;
    let fetched = 0;
    try {
      while (fetched < want) {
        const n = Math.min(want - fetched, per);
        const runs = await this.serial(() => this.fetch(this.o.useRange, n));
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
      this.refillErr = e;
      this.holdUntil = Date.now() + this.o.timeoutMs * 2 ** this.o.retries;
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
    if (this.count < this.low && !this.refilling && Date.now() >= this.holdUntil) void this.startRefill();
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
    if (this.count < this.low && !this.refilling && Date.now() >= this.holdUntil) {
      void this.startRefill();
    }
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

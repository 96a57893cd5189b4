// SPDX-License-Identifier: BSD-3-Clause
// The availability contract's state (doc/clients.md, "Availability:
// deadlines, hedging, health"): the round trips that give the hedge delay,
// the hedge budget, and a pending request's events. client.ts decides with
// them; nothing here touches a socket.

import * as wire from "./wire.js";

export const PROBE_EVERY_MS = 100; // an unhealthy responder is asked INFO this often
// A responder unhealthy for a status (NO_LEASE, CLOCK_UNSAFE, REFUSED) is not
// probed before this has passed since its last such status: it answers INFO,
// so a probe would make it healthy again at once, and every call would ask it
// first only to hear the status again.
export const STATUS_HOLD_MS = 1000;
export const SICK_RESEND_GAP_MS = 10; // resends to a responder not healthy, at most this often
export const RESEND_MIN_MS = 50; // T = max(4 d, 50 ms)
export const RETRY_AFTER_MIN_MS = 1;
const HEDGE_COLD_MS = 10; // d before RTT_MIN round trips
const HEDGE_MAX_MS = 100;
const RTT_WINDOW = 256;
const RTT_MIN = 16;
const RTT_EVERY = 64; // the 99th percentile is recomputed every RTT_EVERY samples
const BUDGET_CAP = 10_000; // thousandths of a hedge
const HEDGE_COST = 1000;

/** The hedge delay d: the 99th percentile of the last 256 successful round
 * trips, in hedgeMin..100 ms; 10 ms before 16. Recomputed every 64
 * samples: never a sort per call. */
export class RttWindow {
  private readonly ring = new Uint32Array(RTT_WINDOW); // µs
  private n = 0;
  private d = HEDGE_COLD_MS;
  constructor(private readonly minMs: number) {}

  delayMs(): number {
    return this.n < RTT_MIN ? HEDGE_COLD_MS : this.d;
  }

  note(ms: number): void {
    this.ring[this.n % RTT_WINDOW] = Math.min(Math.max(Math.round(ms * 1000), 0), 2 ** 31);
    this.n++;
    if (this.n !== RTT_MIN && this.n % RTT_EVERY !== 0) return;
    const w = this.ring.slice(0, Math.min(this.n, RTT_WINDOW)).sort();
    const p99 = w[Math.ceil(0.99 * w.length) - 1] / 1000;
    this.d = Math.min(Math.max(p99, this.minMs), HEDGE_MAX_MS);
  }
}

/** The hedge budget: a bucket of 10 hedges, full at first, each call adding pct/100. */
export class Budget {
  private tokens = BUDGET_CAP;
  constructor(private readonly pct: number) {}

  get enabled(): boolean {
    return this.pct > 0;
  }

  /** One call started. */
  call(): void {
    this.tokens = Math.min(this.tokens + 10 * this.pct, BUDGET_CAP);
  }

  has(): boolean {
    return this.pct > 0 && this.tokens >= HEDGE_COST;
  }

  take(): void {
    this.tokens -= HEDGE_COST;
  }
}

/** What happened to a pending request at responder srv: a reply, or
 * (reply null) a refusal (ICMP port unreachable) or, err set, a failed send. */
export interface Event {
  srv: number;
  reply: wire.Reply | null;
  at: number; // performance.now()
  err?: string;
}

/** A request in flight under one tag (a call's or a probe's): the
 * responders it was sent to, and its events, queued until read. */
export class Pending {
  readonly sent: boolean[];
  private readonly events: Event[] = [];
  private wake: (() => void) | null = null;
  constructor(readonly op: number, n: number, private readonly onEvent?: (ev: Event) => void) {
    this.sent = new Array<boolean>(n).fill(false);
  }

  push(ev: Event): void {
    if (this.onEvent) {
      this.onEvent(ev);
      return;
    }
    this.events.push(ev);
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Wakes a waiting next() with nothing (close()). */
  interrupt(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** The next event, or null once ms have passed (or on interrupt()). */
  next(ms: number): Promise<Event | null> {
    if (this.events.length) return Promise.resolve(this.events.shift()!);
    return new Promise((resolve) => {
      const w = () => {
        clearTimeout(t);
        resolve(this.events.shift() ?? null);
      };
      // Timers run before I/O in an event loop turn: a reply that arrived
      // while callers kept the loop busy is read before the wait expires.
      const t = setTimeout(() => setImmediate(() => {
        if (this.wake !== w) return;
        this.wake = null;
        resolve(this.events.shift() ?? null);
      }), Math.max(0, ms));
      this.wake = w;
    });
  }
}

/** A status in the error text: "NO_LEASE". */
export function statusWord(st: number): string {
  return wire.statusName(st).toUpperCase().replace(/-/g, "_");
}

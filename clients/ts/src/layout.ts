// SPDX-License-Identifier: BSD-3-Clause
// The Snowflake ID layout: 1 sign bit, then time, datacenter, worker and
// sequence fields whose widths add up to 63 (PROTOCOL.md section 2).

export const DEFAULT_EPOCH_MS = 1767225600000n; // 2026-01-01T00:00:00Z
export const INT64_MAX = (1n << 63n) - 1n;

export interface Parts {
  ms: bigint; // ms since the layout's epoch
  unixMs: bigint; // ms since 1970-01-01T00:00:00Z
  time: Date; // unixMs as a Date
  datacenter: number;
  worker: number;
  sequence: number;
}

export class Layout {
  constructor(public readonly epochMs = DEFAULT_EPOCH_MS, public readonly timeBits = 41,
    public readonly dcBits = 0, public readonly workerBits = 10, public readonly seqBits = 12) {}

  /** Throws RangeError naming the field when this is not a layout
   * flakewire can issue (the bounds of fw_layout_validate). */
  validate(): void {
    if (this.seqBits < 1 || this.seqBits > 22) throw new RangeError(`seqBits ${this.seqBits} not in 1..22`);
    if (this.dcBits < 0 || this.dcBits > 10) throw new RangeError(`dcBits ${this.dcBits} not in 0..10`);
    if (this.workerBits < 0 || this.workerBits > 16) throw new RangeError(`workerBits ${this.workerBits} not in 0..16`);
    if (this.timeBits < 32) throw new RangeError(`timeBits ${this.timeBits} below 32`);
    if (this.timeBits + this.dcBits + this.workerBits + this.seqBits !== 63) {
      throw new RangeError("field widths do not add up to 63");
    }
    if (this.epochMs < 0n || this.epochMs >= 1n << 42n) throw new RangeError(`epochMs ${this.epochMs} out of range`);
  }

  /** Takes an ID (bigint, or its decimal string) apart. */
  decode(id: bigint | string): Parts {
    const x = typeof id === "string" ? BigInt(id) : id;
    if (x < 0n || x > INT64_MAX) throw new RangeError(`ID ${x} is not a positive int64`);
    const s = BigInt(this.seqBits), w = BigInt(this.workerBits), d = BigInt(this.dcBits);
    const ms = x >> (s + w + d);
    return {
      ms, unixMs: ms + this.epochMs, time: new Date(Number(ms + this.epochMs)),
      datacenter: Number((x >> (s + w)) & ((1n << d) - 1n)),
      worker: Number((x >> s) & ((1n << w) - 1n)),
      sequence: Number(x & ((1n << s) - 1n)),
    };
  }
}

export const DEFAULT_LAYOUT = new Layout();

/** The unix_ts_ms of a UUIDv7 (16 bytes); throws when it is not version 7
 * with the RFC 9562 variant. */
export function uuid7UnixMs(u: Uint8Array): bigint {
  if (u.length !== 16 || u[6] >> 4 !== 7 || u[8] >> 6 !== 2) throw new RangeError("not a UUIDv7");
  let ms = 0n;
  for (let i = 0; i < 6; i++) ms = (ms << 8n) | BigInt(u[i]);
  return ms;
}

export const UUID7_TAG = 0xf7;

export interface UUIDParts {
  version: number;
  /** RFC 9562 variant code: 0 (0xx), 2 (10x), 6 (110), 7 (111). */
  variant: number;
  /** Version 7 and variant 2. */
  isV7: boolean;
  /** When isV7. */
  unixMs: bigint;
  /** unixMs as a Date. */
  time: Date;
  /** isV7 and the tag 0xF7 sits where the layout puts it. */
  flakewire: boolean;
  /** These three when flakewire. */
  counter: number;
  datacenter: number;
  worker: number;
}

/** Parses canonical UUID text (8-4-4-4-12 hex digits) into 16 bytes. */
export function parseUUID(text: string): Uint8Array {
  if (!/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(text)) {
    throw new RangeError(`"${text}" is not a UUID in canonical text`);
  }
  return Uint8Array.from(Buffer.from(text.replace(/-/g, ""), "hex"));
}

/** Reads any UUID (16 bytes or canonical text); for a UUIDv7 made by
 * flakewire in layout also its counter, datacenter and worker (PROTOCOL.md,
 * "UUID7 reply body"). */
export function readUUID(u: Uint8Array | string, layout: Layout = DEFAULT_LAYOUT): UUIDParts {
  const b = typeof u === "string" ? parseUUID(u) : u;
  let x = 0n;
  for (const byte of b) x = (x << 8n) | BigInt(byte);
  const version = Number((x >> 76n) & 0xfn);
  const top = Number((x >> 61n) & 7n);
  const variant = top < 4 ? 0 : top < 6 ? 2 : top;
  const p: UUIDParts = { version, variant, isV7: false, unixMs: 0n, time: new Date(0), flakewire: false, counter: 0, datacenter: 0, worker: 0 };
  if (version !== 7 || variant !== 2) return p;
  p.isV7 = true;
  p.unixMs = x >> 80n;
  p.time = new Date(Number(p.unixMs));
  const P = (((x >> 64n) & 0xfffn) << 62n) | (x & ((1n << 62n) - 1n)); // rand_a | rand_b, 74 bits
  const s = BigInt(layout.seqBits), d = BigInt(layout.dcBits), w = BigInt(layout.workerBits);
  if (Number((P >> (74n - s - d - w - 8n)) & 0xffn) !== UUID7_TAG) return p;
  p.flakewire = true;
  p.counter = Number(P >> (74n - s));
  p.datacenter = Number((P >> (74n - s - d)) & ((1n << d) - 1n));
  p.worker = Number((P >> (74n - s - d - w)) & ((1n << w) - 1n));
  return p;
}

// SPDX-License-Identifier: BSD-3-Clause
// The Snowflake ID layout: 1 sign bit, then time, datacenter, worker and
// sequence fields whose widths add up to 63 (PROTOCOL.md section 2).

export const DEFAULT_EPOCH_MS = 1767225600000n; // 2026-01-01T00:00:00Z
export const INT64_MAX = (1n << 63n) - 1n;

export interface Parts {
  ms: bigint; // ms since the layout's epoch
  unixMs: bigint; // ms since 1970-01-01T00:00:00Z
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
      ms, unixMs: ms + this.epochMs,
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

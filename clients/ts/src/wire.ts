// SPDX-License-Identifier: BSD-3-Clause
// The flakewire wire protocol, version 1 (lib/wire/PROTOCOL.md): requests
// and replies as bytes. No I/O. IDs and tags are bigint: no bits are lost.

export const MAGIC = 0x464b;
export const VERSION = 1;
export const HDR_LEN = 24;
export const DEFAULT_PORT = 4242;

export const OP_ID = 1;
export const OP_LIST = 2;
export const OP_RANGE = 3;
export const OP_INFO = 4;
export const OP_UUID7 = 5;
export const OP_REPLY = 0x80;

export const ST_OK = 0;
export const ST_BAD_REQUEST = 1;
export const ST_BAD_VERSION = 2;
export const ST_RETRY_AFTER = 3;
export const ST_REFUSED = 4;
export const ST_CLOCK_UNSAFE = 5;
export const ST_NO_LEASE = 6;
const STATUS_NAMES = ["ok", "bad-request", "bad-version", "retry-after", "refused",
  "clock-unsafe", "no-lease"];

export const F_BORROWED = 0x01;
export const F_BACKSTEP = 0x02;
export const F_UNSAFE = 0x04;
export const F_PARTIAL = 0x08;
export const F_SLEWING = 0x10;
export const INFO_F_UUID7 = 0x1;

export const LIST_MAX = 181; // (1472 - 24) / 8
export const RANGES_MAX = 16;
export const RANGE_IDS_MAX = 65535;
export const UUID7_MAX = 90; // (1472 - 24) / 16
const RANGE_IDS_PER_MS = 4096;

/** A datagram that is not a valid reply: reason "short", "magic",
 * "version" or "bad" (PROTOCOL.md section 9); tag set for "version". */
export class WireError extends Error {
  constructor(public readonly reason: "short" | "magic" | "version" | "bad",
    public readonly tag?: bigint) {
    super(`flakewire: invalid reply: ${reason}`);
    this.name = "WireError";
  }
}

export interface Info {
  epochMs: bigint;
  timeBits: number;
  dcBits: number;
  workerBits: number;
  seqBits: number;
  versionMin: number;
  versionMax: number;
  listMax: number;
  rangesMax: number;
  maxBorrowMs: number;
  features: number;
  clockOffsetNs: bigint;
}

/** IDs first, first + 1, ..., first + n - 1. */
export interface Range {
  first: bigint;
  n: number;
}

export interface Reply {
  op: number; // reply bit included
  status: number;
  flags: number;
  count: number;
  tag: bigint;
  datacenter: number;
  worker: number;
  retryAfterUs: number;
  ids: bigint[];
  ranges: Range[];
  info?: Info;
  uuids: Uint8Array[];
}

export function statusName(st: number): string {
  return STATUS_NAMES[st] ?? "unknown";
}

/** Bytes a request is padded to so that a full reply is no larger
 * (PROTOCOL.md section 6), for a responder with seqBits sequence bits
 * (RANGE: 2^seqBits IDs per range; 12 before its INFO is known); 0 for an
 * unknown op. */
export function requestSize(op: number, count: number, seqBits = 12): number {
  let n: number;
  const per = seqBits >= 1 && seqBits <= 22 ? 2 ** seqBits : RANGE_IDS_PER_MS;
  switch (op) {
    case OP_ID: n = HDR_LEN + 8; break;
    case OP_LIST: n = HDR_LEN + 8 * count; break;
    case OP_INFO: n = HDR_LEN + 32; break;
    case OP_UUID7: n = HDR_LEN + 16 * count; break;
    case OP_RANGE:
      n = HDR_LEN + 12 * Math.min(Math.ceil(count / per) + 1, RANGES_MAX);
      break;
    default: return 0;
  }
  return Math.max(n, HDR_LEN);
}

/** The request datagram, zero-padded to requestSize(op, count, seqBits)
 * when pad is true. */
export function encodeRequest(op: number, count: number, tag: bigint, pad = true, seqBits = 12): Uint8Array {
  if (!Number.isInteger(op) || op < 0 || op > 0x7f || !Number.isInteger(count) || count < 0 ||
    count > 0xffff || tag < 0n || tag >= 1n << 64n) {
    throw new RangeError(`op ${op}, count ${count} or tag ${tag} out of range`);
  }
  const b = new Uint8Array(pad ? Math.max(HDR_LEN, requestSize(op, count, seqBits)) : HDR_LEN);
  const v = new DataView(b.buffer);
  v.setUint16(0, MAGIC);
  b[2] = VERSION;
  b[3] = op;
  v.setUint16(6, count);
  v.setBigUint64(8, tag);
  return b;
}

const REPLY_MAX: Record<number, [number, number]> = {
  [OP_ID]: [1, 8], [OP_LIST]: [LIST_MAX, 8], [OP_RANGE]: [RANGES_MAX, 12], [OP_INFO]: [1, 32],
  [OP_UUID7]: [UUID7_MAX, 16],
};

/** Parses one reply datagram; throws WireError in the order and with the
 * reasons of fw_wire_parse_reply. */
export function parseReply(b: Uint8Array): Reply {
  if (b.length < HDR_LEN) throw new WireError("short");
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint16(0) !== MAGIC) throw new WireError("magic");
  const r: Reply = {
    op: b[3], status: b[4], flags: b[5], count: v.getUint16(6), tag: v.getBigUint64(8),
    datacenter: v.getUint16(16), worker: v.getUint16(18), retryAfterUs: v.getUint32(20),
    ids: [], ranges: [], uuids: [],
  };
  if (b[2] !== VERSION) throw new WireError("version", r.tag);
  if (!(r.op & OP_REPLY) || r.status >= STATUS_NAMES.length) throw new WireError("bad");
  const op = r.op & 0x7f;
  const lim = REPLY_MAX[op];
  if (!lim) throw new WireError("bad");
  let need = 0;
  if (r.status !== ST_OK) need = r.count === 0 ? HDR_LEN : 0;
  else if (r.count !== 0 && r.count <= lim[0]) need = HDR_LEN + lim[1] * r.count;
  if (need === 0) throw new WireError("bad");
  if (b.length < need) throw new WireError("short");
  if (b.length > need) throw new WireError("bad");
  if (r.status !== ST_OK) return r;
  switch (op) {
    case OP_ID:
    case OP_LIST:
      for (let i = 0; i < r.count; i++) r.ids.push(v.getBigUint64(HDR_LEN + 8 * i));
      break;
    case OP_RANGE:
      for (let i = 0; i < r.count; i++) {
        const n = v.getUint32(HDR_LEN + 12 * i + 8);
        if (n === 0) throw new WireError("bad");
        r.ranges.push({ first: v.getBigUint64(HDR_LEN + 12 * i), n });
      }
      break;
    case OP_INFO:
      r.info = {
        epochMs: v.getBigUint64(24), timeBits: b[32], dcBits: b[33], workerBits: b[34],
        seqBits: b[35], versionMin: b[36], versionMax: b[37], listMax: v.getUint16(38),
        rangesMax: v.getUint16(40), maxBorrowMs: v.getUint16(42), features: v.getUint32(44),
        clockOffsetNs: v.getBigInt64(48),
      };
      break;
    case OP_UUID7:
      for (let i = 0; i < r.count; i++) {
        r.uuids.push(b.slice(HDR_LEN + 16 * i, HDR_LEN + 16 * i + 16));
      }
      break;
  }
  return r;
}

/** A UUID in the canonical 36-character text form. */
export function formatUUID(u: Uint8Array): string {
  const h = Array.from(u, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

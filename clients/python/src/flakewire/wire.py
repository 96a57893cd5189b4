# SPDX-License-Identifier: BSD-3-Clause
"""The flakewire wire protocol, version 1 (lib/wire/PROTOCOL.md): requests
and replies as bytes. No I/O."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

MAGIC = 0x464B
VERSION = 1
HDR_LEN = 24
DEFAULT_PORT = 4242
MTU_PAYLOAD = 1472

OP_ID = 1
OP_LIST = 2
OP_RANGE = 3
OP_INFO = 4
OP_UUID7 = 5
OP_REPLY = 0x80

ST_OK = 0
ST_BAD_REQUEST = 1
ST_BAD_VERSION = 2
ST_RETRY_AFTER = 3
ST_REFUSED = 4
ST_CLOCK_UNSAFE = 5
ST_NO_LEASE = 6
STATUS_NAMES = ("ok", "bad-request", "bad-version", "retry-after", "refused",
                "clock-unsafe", "no-lease")

F_BORROWED = 0x01
F_BACKSTEP = 0x02
F_UNSAFE = 0x04
F_PARTIAL = 0x08
F_SLEWING = 0x10

INFO_F_UUID7 = 0x1

LIST_MAX = 181          # (1472 - 24) / 8
RANGES_MAX = 16
RANGE_IDS_MAX = 65535
UUID7_MAX = 90          # (1472 - 24) / 16
RANGE_IDS_PER_MS = 4096

_HDR = struct.Struct(">HBBBBHQHHI")
_INFO = struct.Struct(">QBBBBBBHHHIq")

# Most entries an OK reply of each op may carry; entry size in bytes.
_REPLY_MAX = {OP_ID: 1, OP_LIST: LIST_MAX, OP_RANGE: RANGES_MAX, OP_INFO: 1,
              OP_UUID7: UUID7_MAX}
_ENTRY_LEN = {OP_ID: 8, OP_LIST: 8, OP_RANGE: 12, OP_INFO: 32, OP_UUID7: 16}


class WireError(ValueError):
    """A datagram that is not a valid reply. reason is one of "short",
    "magic", "version", "bad" (PROTOCOL.md section 9); tag is set for
    "version" (the reply's tag)."""

    def __init__(self, reason: str, tag: Optional[int] = None):
        super().__init__(f"invalid reply: {reason}")
        self.reason = reason
        self.tag = tag


@dataclass
class Info:
    epoch_ms: int
    time_bits: int
    dc_bits: int
    worker_bits: int
    seq_bits: int
    version_min: int
    version_max: int
    list_max: int
    ranges_max: int
    max_borrow_ms: int
    features: int
    clock_offset_ns: int

    @property
    def supports_uuid7(self) -> bool:
        return bool(self.features & INFO_F_UUID7)


@dataclass
class Reply:
    op: int              # the reply's op byte, reply bit included
    status: int
    flags: int
    count: int
    tag: int
    datacenter: int
    worker: int
    retry_after_us: int
    ids: List[int] = field(default_factory=list)
    ranges: List[Tuple[int, int]] = field(default_factory=list)
    info: Optional[Info] = None
    uuids: List[uuid.UUID] = field(default_factory=list)

    @property
    def request_op(self) -> int:
        return self.op & ~OP_REPLY & 0xFF


def request_size(op: int, count: int, seq_bits: int = 12) -> int:
    """Bytes a request is padded to so that a full reply is no larger
    (PROTOCOL.md section 6), for a responder with seq_bits sequence bits
    (RANGE: 2^seq_bits IDs per range; 12 before its INFO is known). 0 for
    an unknown op."""
    per = 1 << seq_bits if 1 <= seq_bits <= 22 else RANGE_IDS_PER_MS
    if op == OP_ID:
        n = HDR_LEN + 8
    elif op == OP_LIST:
        n = HDR_LEN + 8 * count
    elif op == OP_INFO:
        n = HDR_LEN + 32
    elif op == OP_UUID7:
        n = HDR_LEN + 16 * count
    elif op == OP_RANGE:
        r = min((count + per - 1) // per + 1, RANGES_MAX)
        n = HDR_LEN + 12 * r
    else:
        return 0
    return max(n, HDR_LEN)


def encode_request(op: int, count: int, tag: int, pad: bool = True, seq_bits: int = 12) -> bytes:
    """The request datagram for op/count/tag, zero-padded to
    request_size(op, count, seq_bits) when pad is true."""
    if not 0 <= op <= 0x7F or not 0 <= count <= 0xFFFF or not 0 <= tag < 1 << 64:
        raise ValueError(f"op {op}, count {count} or tag {tag} out of range")
    hdr = _HDR.pack(MAGIC, VERSION, op, 0, 0, count, tag, 0, 0, 0)
    size = max(HDR_LEN, request_size(op, count, seq_bits)) if pad else HDR_LEN
    return hdr + bytes(size - HDR_LEN)


def parse_reply(buf: bytes) -> Reply:
    """Parses one reply datagram; raises WireError as PROTOCOL.md section 9
    says (the same order and reasons as fw_wire_parse_reply)."""
    n = len(buf)
    if n < HDR_LEN:
        raise WireError("short")
    magic, version, op, status, flags, count, tag, dc, worker, retry = _HDR.unpack_from(buf)
    if magic != MAGIC:
        raise WireError("magic")
    if version != VERSION:
        raise WireError("version", tag)
    if not op & OP_REPLY or status >= len(STATUS_NAMES):
        raise WireError("bad")
    rop = op & 0x7F
    cmax = _REPLY_MAX.get(rop)
    if cmax is None:
        raise WireError("bad")
    if status != ST_OK:
        need = HDR_LEN if count == 0 else 0
    elif count == 0 or count > cmax:
        need = 0
    else:
        need = HDR_LEN + _ENTRY_LEN[rop] * (1 if rop == OP_INFO else count)
    if need == 0:
        raise WireError("bad")
    if n < need:
        raise WireError("short")
    if n > need:
        raise WireError("bad")
    r = Reply(op, status, flags, count, tag, dc, worker, retry)
    if status != ST_OK:
        return r
    if rop in (OP_ID, OP_LIST):
        r.ids = list(struct.unpack_from(f">{count}Q", buf, HDR_LEN))
    elif rop == OP_RANGE:
        for i in range(count):
            first, cnt = struct.unpack_from(">QI", buf, HDR_LEN + 12 * i)
            if cnt == 0:
                raise WireError("bad")
            r.ranges.append((first, cnt))
    elif rop == OP_INFO:
        r.info = Info(*_INFO.unpack_from(buf, HDR_LEN))
    else:
        r.uuids = [uuid.UUID(bytes=bytes(buf[HDR_LEN + 16 * i:HDR_LEN + 16 * i + 16]))
                   for i in range(count)]
    return r


def status_name(status: int) -> str:
    return STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "unknown"

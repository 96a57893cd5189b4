# SPDX-License-Identifier: BSD-3-Clause
"""The Snowflake ID layout: 1 sign bit, then time, datacenter, worker and
sequence fields whose widths add up to 63 (PROTOCOL.md section 2)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

DEFAULT_EPOCH_MS = 1767225600000  # 2026-01-01T00:00:00Z
INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Parts:
    ms: int         # ms since the layout's epoch
    unix_ms: int    # ms since 1970-01-01T00:00:00Z
    datacenter: int
    worker: int
    sequence: int


@dataclass(frozen=True)
class Layout:
    epoch_ms: int = DEFAULT_EPOCH_MS
    time_bits: int = 41
    dc_bits: int = 0
    worker_bits: int = 10
    seq_bits: int = 12

    def validate(self) -> None:
        """Raises ValueError naming the field when the widths are not a
        layout flakewire can issue (the same bounds as fw_layout_validate)."""
        if not 1 <= self.seq_bits <= 22:
            raise ValueError(f"seq_bits {self.seq_bits} not in 1..22")
        if not 0 <= self.dc_bits <= 10 or not 0 <= self.worker_bits <= 16:
            raise ValueError(f"dc_bits {self.dc_bits} (0..10) or worker_bits "
                             f"{self.worker_bits} (0..16) out of range")
        if self.time_bits < 32:
            raise ValueError(f"time_bits {self.time_bits} below 32")
        if self.time_bits + self.dc_bits + self.worker_bits + self.seq_bits != 63:
            raise ValueError("the field widths do not add up to 63")
        if not 0 <= self.epoch_ms < 1 << 42:
            raise ValueError(f"epoch_ms {self.epoch_ms} out of range")

    def decode(self, id_: int) -> Parts:
        """Takes an ID apart; ValueError for a negative or over-wide one."""
        if not 0 <= id_ <= INT64_MAX:
            raise ValueError(f"ID {id_} is not a positive int64")
        s, w, d = self.seq_bits, self.worker_bits, self.dc_bits
        seq = id_ & ((1 << s) - 1)
        worker = (id_ >> s) & ((1 << w) - 1)
        dc = (id_ >> (s + w)) & ((1 << d) - 1)
        ms = id_ >> (s + w + d)
        return Parts(ms, ms + self.epoch_ms, dc, worker, seq)


DEFAULT = Layout()


def decode(id_: int, layout: Layout = DEFAULT) -> Parts:
    return layout.decode(id_)


UUID7_TAG = 0xF7


@dataclass(frozen=True)
class UUIDParts:
    version: int
    variant: int        # RFC 9562 variant code: 0 (0xx), 2 (10x), 6 (110), 7 (111)
    is_v7: bool         # version 7 and variant 2
    unix_ms: int        # when is_v7
    flakewire: bool     # is_v7 and the tag 0xF7 sits where the layout puts it
    counter: int        # these three when flakewire
    datacenter: int
    worker: int


def uuid7_parts(u: uuid.UUID, layout: "Layout" = None) -> UUIDParts:
    """Reads any UUID; for a UUIDv7 made by flakewire in layout (default:
    the default layout) also its counter, datacenter and worker
    (PROTOCOL.md, "UUID7 reply body")."""
    lay = layout or DEFAULT
    x = u.int
    ver = (x >> 76) & 0xF
    top = (x >> 61) & 0x7
    var = 0 if top < 4 else 2 if top < 6 else top
    if ver != 7 or var != 2:
        return UUIDParts(ver, var, False, 0, False, 0, 0, 0)
    p = ((x >> 64) & 0xFFF) << 62 | (x & ((1 << 62) - 1))  # rand_a | rand_b: 74 bits
    s, d, w = lay.seq_bits, lay.dc_bits, lay.worker_bits
    tag = (p >> (74 - s - d - w - 8)) & 0xFF
    if tag != UUID7_TAG:
        return UUIDParts(ver, var, True, x >> 80, False, 0, 0, 0)
    return UUIDParts(ver, var, True, x >> 80, True, p >> (74 - s),
                     (p >> (74 - s - d)) & ((1 << d) - 1), (p >> (74 - s - d - w)) & ((1 << w) - 1))


def uuid7_unix_ms(u: uuid.UUID) -> int:
    """The unix_ts_ms of a UUIDv7; ValueError when u is not version 7 with
    the RFC 9562 variant."""
    if u.version != 7 or u.variant != uuid.RFC_4122:
        raise ValueError(f"{u} is not a UUIDv7")
    return u.int >> 80

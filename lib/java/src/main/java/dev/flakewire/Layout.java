// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.util.UUID;

/**
 * The Snowflake ID layout: 1 sign bit, then time, datacenter, worker and sequence fields whose widths add up to 63.
 * IDs are positive {@code long}s.
 */
public record Layout(long epochMs, int timeBits, int dcBits, int workerBits, int seqBits) {
    /** 2026-01-01T00:00:00Z in Unix ms. */
    public static final long DEFAULT_EPOCH_MS = 1767225600000L;
    /** 41/0/10/12 from 2026-01-01. */
    public static final Layout DEFAULT = new Layout(DEFAULT_EPOCH_MS, 41, 0, 10, 12);

    /** An ID taken apart. */
    public record Parts(long ms, long unixMs, int datacenter, int worker, int sequence) {}

    /** Throws IllegalArgumentException naming the field when this is not a layout flakewire can issue. */
    public void validate() {
        if (seqBits < 1 || seqBits > 22) throw new IllegalArgumentException("seqBits " + seqBits + " not in 1..22");
        if (dcBits < 0 || dcBits > 10) throw new IllegalArgumentException("dcBits " + dcBits + " not in 0..10");
        if (workerBits < 0 || workerBits > 16) {
            throw new IllegalArgumentException("workerBits " + workerBits + " not in 0..16");
        }
        if (timeBits < 32) throw new IllegalArgumentException("timeBits " + timeBits + " below 32");
        if (timeBits + dcBits + workerBits + seqBits != 63) {
            throw new IllegalArgumentException("field widths do not add up to 63");
        }
        if (epochMs < 0 || epochMs >= 1L << 42) throw new IllegalArgumentException("epochMs " + epochMs + " out of range");
    }

    /** Takes an ID apart; IllegalArgumentException for a negative one. */
    public Parts decode(long id) {
        if (id < 0) throw new IllegalArgumentException("ID " + Long.toUnsignedString(id) + " is not a positive int64");
        long ms = id >>> (seqBits + workerBits + dcBits);
        return new Parts(ms, ms + epochMs, (int) ((id >>> (seqBits + workerBits)) & ((1L << dcBits) - 1)),
                (int) ((id >>> seqBits) & ((1L << workerBits) - 1)), (int) (id & ((1L << seqBits) - 1)));
    }

    /** The unix_ts_ms of a UUIDv7; IllegalArgumentException when it is not version 7 with the RFC 9562 variant. */
    public static long uuid7UnixMs(UUID u) {
        if (u.version() != 7 || u.variant() != 2) throw new IllegalArgumentException(u + " is not a UUIDv7");
        return u.getMostSignificantBits() >>> 16;
    }
}

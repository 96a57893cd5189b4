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

    /** The tag byte that marks a UUIDv7 made in flakewire's layout. */
    public static final int UUID7_TAG = 0xF7;

    /**
     * What {@link #readUuid} finds in a UUID: version, RFC 9562 variant code (0: 0xx, 2: 10x, 6: 110, 7: 111),
     * isV7 and unixMs; flakewire when the tag 0xF7 sits where the layout puts it, and then counter, datacenter and
     * worker.
     */
    public record UuidParts(int version, int variant, boolean isV7, long unixMs, boolean flakewire, int counter,
            int datacenter, int worker) {}

    /** Reads any UUID; for a UUIDv7 made by flakewire in this layout also its counter, datacenter and worker. */
    public UuidParts readUuid(UUID u) {
        long hi = u.getMostSignificantBits(), lo = u.getLeastSignificantBits();
        int version = (int) (hi >>> 12 & 0xF);
        int top = (int) (lo >>> 61);
        int variant = top < 4 ? 0 : top < 6 ? 2 : top;
        if (version != 7 || variant != 2) return new UuidParts(version, variant, false, 0, false, 0, 0, 0);
        long ms = hi >>> 16;
        // P: rand_a (12 bits) then rand_b (62 bits), 74 bits in all.
        java.math.BigInteger p = java.math.BigInteger.valueOf(hi & 0xFFF).shiftLeft(62)
                .or(java.math.BigInteger.valueOf(lo & ((1L << 62) - 1)));
        int s = seqBits, d = dcBits, w = workerBits;
        if ((p.shiftRight(74 - s - d - w - 8).intValue() & 0xFF) != UUID7_TAG) {
            return new UuidParts(version, variant, true, ms, false, 0, 0, 0);
        }
        return new UuidParts(version, variant, true, ms, true, p.shiftRight(74 - s).intValue(),
                p.shiftRight(74 - s - d).intValue() & ((1 << d) - 1), p.shiftRight(74 - s - d - w).intValue() & ((1 << w) - 1));
    }

    /** The unix_ts_ms of a UUIDv7; IllegalArgumentException when it is not version 7 with the RFC 9562 variant. */
    public static long uuid7UnixMs(UUID u) {
        if (u.version() != 7 || u.variant() != 2) throw new IllegalArgumentException(u + " is not a UUIDv7");
        return u.getMostSignificantBits() >>> 16;
    }
}

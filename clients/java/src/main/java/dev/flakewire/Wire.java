// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The flakewire wire protocol, version 1 (lib/wire/PROTOCOL.md): requests and replies as bytes. No I/O. */
public final class Wire {
    private Wire() {}

    public static final int MAGIC = 0x464B;
    public static final int VERSION = 1;
    public static final int HDR_LEN = 24;
    public static final int DEFAULT_PORT = 4242;

    public static final int OP_ID = 1;
    public static final int OP_LIST = 2;
    public static final int OP_RANGE = 3;
    public static final int OP_INFO = 4;
    public static final int OP_UUID7 = 5;
    public static final int OP_REPLY = 0x80;

    public static final int ST_OK = 0;
    public static final int ST_BAD_REQUEST = 1;
    public static final int ST_BAD_VERSION = 2;
    public static final int ST_RETRY_AFTER = 3;
    public static final int ST_REFUSED = 4;
    public static final int ST_CLOCK_UNSAFE = 5;
    public static final int ST_NO_LEASE = 6;
    private static final String[] STATUS_NAMES = {"ok", "bad-request", "bad-version", "retry-after",
        "refused", "clock-unsafe", "no-lease"};

    public static final int F_BORROWED = 0x01;
    public static final int F_BACKSTEP = 0x02;
    public static final int F_UNSAFE = 0x04;
    public static final int F_PARTIAL = 0x08;
    public static final int F_SLEWING = 0x10;
    public static final int INFO_F_UUID7 = 0x1;

    public static final int LIST_MAX = 181; // (1472 - 24) / 8
    public static final int RANGES_MAX = 16;
    public static final int RANGE_IDS_MAX = 65535;
    public static final int UUID7_MAX = 90; // (1472 - 24) / 16
    private static final int RANGE_IDS_PER_MS = 4096;

    /** Name of a status code ("retry-after"), "unknown" when it is not one. */
    public static String statusName(int st) {
        return st >= 0 && st < STATUS_NAMES.length ? STATUS_NAMES[st] : "unknown";
    }

    /** A datagram that is not a valid reply: reason "short", "magic", "version" or "bad" (PROTOCOL.md section 9). */
    public static final class WireException extends Exception {
        private static final long serialVersionUID = 1L;
        public final String reason;
        /** The reply's tag, for "version". */
        public final long tag;

        WireException(String reason, long tag) {
            super("flakewire: invalid reply: " + reason);
            this.reason = reason;
            this.tag = tag;
        }
    }

    /** The body of an INFO reply. epochMs is unsigned; features is a u32 bit set. */
    public record Info(long epochMs, int timeBits, int dcBits, int workerBits, int seqBits, int versionMin,
            int versionMax, int listMax, int rangesMax, int maxBorrowMs, int features, long clockOffsetNs) {
        public boolean supportsUuid7() {
            return (features & INFO_F_UUID7) != 0;
        }
    }

    /** The IDs first, first + 1, ..., first + n - 1 (first as sent: a set sign bit reads negative). */
    public record Range(long first, long n) {}

    /** A parsed reply; op carries the reply bit; tag is 64 bits (unsigned as sent). */
    public record Reply(int op, int status, int flags, int count, long tag, int datacenter, int worker,
            long retryAfterUs, List<Long> ids, List<Range> ranges, Info info, List<byte[]> uuids) {
        public int requestOp() {
            return op & 0x7F;
        }
    }

    /**
     * Bytes a request is padded to so that a full reply is no larger (PROTOCOL.md section 6), for a responder with
     * seqBits sequence bits (RANGE: 2^seqBits IDs per range; 12 before its INFO is known); 0 for an unknown op.
     */
    public static int requestSize(int op, int count, int seqBits) {
        int n;
        int per = seqBits >= 1 && seqBits <= 22 ? 1 << seqBits : RANGE_IDS_PER_MS;
        switch (op) {
            case OP_ID: n = HDR_LEN + 8; break;
            case OP_LIST: n = HDR_LEN + 8 * count; break;
            case OP_INFO: n = HDR_LEN + 32; break;
            case OP_UUID7: n = HDR_LEN + 16 * count; break;
            case OP_RANGE:
                n = HDR_LEN + 12 * Math.min((count + per - 1) / per + 1, RANGES_MAX);
                break;
            default: return 0;
        }
        return Math.max(n, HDR_LEN);
    }

    /** The request datagram, zero-padded to requestSize(op, count, seqBits) when pad is true (24 bytes otherwise). */
    public static byte[] encodeRequest(int op, int count, long tag, boolean pad, int seqBits) {
        if (op < 0 || op > 0x7F || count < 0 || count > 0xFFFF) {
            throw new IllegalArgumentException("op " + op + " or count " + count + " out of range");
        }
        byte[] b = new byte[pad ? Math.max(HDR_LEN, requestSize(op, count, seqBits)) : HDR_LEN];
        ByteBuffer.wrap(b).putShort((short) MAGIC).put((byte) VERSION).put((byte) op).put((byte) 0)
                .put((byte) 0).putShort((short) count).putLong(tag);
        return b;
    }

    private static int replyMax(int op) {
        switch (op) {
            case OP_ID: case OP_INFO: return 1;
            case OP_LIST: return LIST_MAX;
            case OP_RANGE: return RANGES_MAX;
            case OP_UUID7: return UUID7_MAX;
            default: return 0;
        }
    }

    private static int entryLen(int op) {
        switch (op) {
            case OP_ID: case OP_LIST: return 8;
            case OP_RANGE: return 12;
            case OP_INFO: return 32;
            default: return 16;
        }
    }

    /** Parses one reply datagram of len bytes; throws WireException in the order and with the reasons of fw_wire_parse_reply. */
    public static Reply parseReply(byte[] buf, int len) throws WireException {
        if (len < HDR_LEN) throw new WireException("short", 0);
        ByteBuffer v = ByteBuffer.wrap(buf, 0, len);
        if ((v.getShort(0) & 0xFFFF) != MAGIC) throw new WireException("magic", 0);
        int version = buf[2] & 0xFF, op = buf[3] & 0xFF, status = buf[4] & 0xFF, flags = buf[5] & 0xFF;
        int count = v.getShort(6) & 0xFFFF;
        long tag = v.getLong(8);
        int dc = v.getShort(16) & 0xFFFF, worker = v.getShort(18) & 0xFFFF;
        long retry = v.getInt(20) & 0xFFFFFFFFL;
        if (version != VERSION) throw new WireException("version", tag);
        if ((op & OP_REPLY) == 0 || status >= STATUS_NAMES.length) throw new WireException("bad", 0);
        int rop = op & 0x7F, max = replyMax(rop);
        if (max == 0) throw new WireException("bad", 0);
        int need = 0;
        if (status != ST_OK) need = count == 0 ? HDR_LEN : 0;
        else if (count != 0 && count <= max) need = HDR_LEN + entryLen(rop) * count;
        if (need == 0) throw new WireException("bad", 0);
        if (len < need) throw new WireException("short", 0);
        if (len > need) throw new WireException("bad", 0);
        List<Long> ids = Collections.emptyList();
        List<Range> ranges = Collections.emptyList();
        List<byte[]> uuids = Collections.emptyList();
        Info info = null;
        if (status == ST_OK) {
            switch (rop) {
                case OP_ID: case OP_LIST:
                    ids = new ArrayList<>(count);
                    for (int i = 0; i < count; i++) ids.add(v.getLong(HDR_LEN + 8 * i));
                    break;
                case OP_RANGE:
                    ranges = new ArrayList<>(count);
                    for (int i = 0; i < count; i++) {
                        long n = v.getInt(HDR_LEN + 12 * i + 8) & 0xFFFFFFFFL;
                        if (n == 0) throw new WireException("bad", 0);
                        ranges.add(new Range(v.getLong(HDR_LEN + 12 * i), n));
                    }
                    break;
                case OP_INFO:
                    info = new Info(v.getLong(24), buf[32] & 0xFF, buf[33] & 0xFF, buf[34] & 0xFF, buf[35] & 0xFF,
                            buf[36] & 0xFF, buf[37] & 0xFF, v.getShort(38) & 0xFFFF, v.getShort(40) & 0xFFFF,
                            v.getShort(42) & 0xFFFF, v.getInt(44), v.getLong(48));
                    break;
                default:
                    uuids = new ArrayList<>(count);
                    for (int i = 0; i < count; i++) {
                        byte[] u = new byte[16];
                        System.arraycopy(buf, HDR_LEN + 16 * i, u, 0, 16);
                        uuids.add(u);
                    }
            }
        }
        return new Reply(op, status, flags, count, tag, dc, worker, retry, ids, ranges, info, uuids);
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flakewire wire protocol, version 1: encoding and decoding.
 * PROTOCOL.md beside this file documents it byte by byte; this header is
 * the C contract. No allocation, no I/O; every read is bounded by the
 * datagram length through a cursor whose error sticks.
 *
 * Every message (request and reply) starts with the same 24-byte header,
 * all fields big-endian:
 *
 *   off size field
 *    0   2   magic           0x464B ("FK")
 *    2   1   version         1
 *    3   1   op              request: FW_WIRE_OP_*; reply: op | FW_WIRE_OP_REPLY
 *    4   1   status          reply: FW_WIRE_ST_*; request: 0
 *    5   1   flags           reply: FW_WIRE_F_*; request: 0
 *    6   2   count           request: IDs wanted; reply: IDs (ID, LIST) or ranges (RANGE)
 *    8   8   tag             chosen by the client, echoed in the reply
 *   16   2   datacenter      reply: datacenter of the worker that answered
 *   18   2   worker          reply: worker ID that answered
 *   20   4   retry_after_us  reply with FW_WIRE_ST_RETRY_AFTER: wait this long
 *
 * Request body: zero padding of any length (see "anti-amplification").
 * Reply bodies: ID and LIST: count x u64 ID; RANGE: count x {u64 first,
 * u32 n}; INFO: struct fw_wire_info (32 bytes); UUID7: count x 16-byte
 * RFC 9562 UUIDv7 (layout in PROTOCOL.md and fw_uuid.h); error statuses:
 * none.
 *
 * Anti-amplification: a reply to a source outside the trusted set is never
 * larger than its request. Clients pad requests to fw_wire_request_size();
 * a responder fits LIST and RANGE replies into the request's size (fewer
 * IDs, FW_WIRE_F_PARTIAL) and answers FW_WIRE_ST_REFUSED (24 bytes) when
 * not even one ID fits.
 *
 * Manual: doc/protocol.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"

#define FW_WIRE_MAGIC        0x464Bu
#define FW_WIRE_VERSION      1
#define FW_WIRE_HDR_LEN      24
#define FW_WIRE_ID_LEN       8
#define FW_WIRE_RANGE_LEN    12
#define FW_WIRE_INFO_LEN     32
#define FW_WIRE_UUID_LEN     16
#define FW_WIRE_DEFAULT_PORT 4242

/* Largest UDP payload in a 1500-byte MTU over IPv4: 1500 - 20 - 8. */
#define FW_WIRE_MTU_PAYLOAD              1472
/* IDs in one LIST reply that fit FW_WIRE_MTU_PAYLOAD: (1472 - 24) / 8. */
#define FW_WIRE_LIST_MAX                 181
/* Ranges in one RANGE reply. */
#define FW_WIRE_RANGES_MAX               16
/* IDs one RANGE request may ask for (the count field is 16 bits). */
#define FW_WIRE_RANGE_IDS_MAX            65535
/* UUIDs in one UUID7 reply that fit FW_WIRE_MTU_PAYLOAD: (1472 - 24) / 16. */
#define FW_WIRE_UUID7_MAX                90
/* IDs per range a client assumes before it knows the layout (12 sequence bits). */
#define FW_WIRE_RANGE_IDS_PER_MS_DEFAULT 4096u

enum fw_wire_op {
	FW_WIRE_OP_ID = 1,    /* one ID */
	FW_WIRE_OP_LIST = 2,  /* count IDs, listed */
	FW_WIRE_OP_RANGE = 3, /* count IDs as ranges (first, n) */
	FW_WIRE_OP_INFO = 4,  /* layout, epoch, worker, clock state */
	FW_WIRE_OP_UUID7 = 5, /* count RFC 9562 UUIDv7, listed */
};
#define FW_WIRE_OP_REPLY 0x80u

enum fw_wire_status {
	FW_WIRE_ST_OK = 0,
	FW_WIRE_ST_BAD_REQUEST = 1,  /* unknown op, count 0 or above the op's maximum */
	FW_WIRE_ST_BAD_VERSION = 2,  /* version not supported; header carries ours */
	FW_WIRE_ST_RETRY_AFTER = 3,  /* overloaded or mark not yet reserved: retry_after_us */
	FW_WIRE_ST_REFUSED = 4,      /* refused by policy (amplification, source, rate) */
	FW_WIRE_ST_CLOCK_UNSAFE = 5, /* clock went backwards too far: nothing issued */
	FW_WIRE_ST_NO_LEASE = 6,     /* no valid lease for this worker ID: ask another responder */
};
#define FW_WIRE_ST_COUNT 7

/* Reply flags: the responder's clock state when it answered. */
#define FW_WIRE_F_BORROWED 0x01u /* some ID is at a ms ahead of the responder's clock */
#define FW_WIRE_F_BACKSTEP 0x02u /* the clock is behind the highest time seen */
#define FW_WIRE_F_UNSAFE   0x04u /* clock unsafe (with FW_WIRE_ST_CLOCK_UNSAFE) */
#define FW_WIRE_F_PARTIAL  0x08u /* fewer IDs than requested */
#define FW_WIRE_F_SLEWING  0x10u /* the responder is slewing its clock to the system clock */

/* INFO features bits (struct fw_wire_info.features). */
#define FW_WIRE_INFO_F_UUID7 0x1u /* the responder answers FW_WIRE_OP_UUID7 */

struct fw_wire_hdr {
	uint8_t version;
	uint8_t op;
	uint8_t status;
	uint8_t flags;
	uint16_t count;
	uint64_t tag;
	uint16_t datacenter;
	uint16_t worker;
	uint32_t retry_after_us;
};

struct fw_wire_range {
	uint64_t first;
	uint32_t n;
};

/* Body of an INFO reply, 32 bytes. */
struct fw_wire_info {
	uint64_t epoch_ms;       /* off 0 */
	uint8_t time_bits;       /* off 8 */
	uint8_t dc_bits;         /* off 9 */
	uint8_t worker_bits;     /* off 10 */
	uint8_t seq_bits;        /* off 11 */
	uint8_t version_min;     /* off 12: protocol versions spoken */
	uint8_t version_max;     /* off 13 */
	uint16_t list_max;       /* off 14: most IDs in one LIST reply */
	uint16_t ranges_max;     /* off 16: most ranges in one RANGE reply */
	uint16_t max_borrow_ms;  /* off 18 */
	uint32_t features;       /* off 20: FW_WIRE_INFO_F_*; 0 from older responders */
	int64_t clock_offset_ns; /* off 24: system clock minus responder clock */
};

/* A decoded reply. */
struct fw_wire_reply {
	struct fw_wire_hdr hdr;
	union {
		uint64_t ids[FW_WIRE_LIST_MAX];                     /* ID, LIST */
		struct fw_wire_range ranges[FW_WIRE_RANGES_MAX];    /* RANGE */
		struct fw_wire_info info;                           /* INFO */
		uint8_t uuids[FW_WIRE_UUID7_MAX][FW_WIRE_UUID_LEN]; /* UUID7 */
	} body;
};

/*
 * Cursor over a buffer. Reads and writes past the end set error to
 * FW_EWIRE_SHORT (reads) or FW_EWIRE_SPACE (writes) and become no-ops
 * (reads yield 0); check error once at the end.
 */
struct fw_wire_cur {
	uint8_t *pos;
	uint8_t *end;
	int error;
};

FW_API void fw_wire_cur_init(struct fw_wire_cur *c, void *buf, size_t len);
FW_API uint8_t fw_wire_get_u8(struct fw_wire_cur *c);
FW_API uint16_t fw_wire_get_u16(struct fw_wire_cur *c);
FW_API uint32_t fw_wire_get_u32(struct fw_wire_cur *c);
FW_API uint64_t fw_wire_get_u64(struct fw_wire_cur *c);
FW_API void fw_wire_put_u8(struct fw_wire_cur *c, uint8_t v);
FW_API void fw_wire_put_u16(struct fw_wire_cur *c, uint16_t v);
FW_API void fw_wire_put_u32(struct fw_wire_cur *c, uint32_t v);
FW_API void fw_wire_put_u64(struct fw_wire_cur *c, uint64_t v);
/* Bytes consumed or written so far. */
FW_API size_t fw_wire_cur_used(const struct fw_wire_cur *c, const void *start);

/*
 * Size a client pads a request to so that a full reply to it is not larger
 * than the request: max(24, reply size for @count IDs of @op). For RANGE
 * it allows ceil(count / 4096) + 1 ranges (capped at FW_WIRE_RANGES_MAX);
 * a responder that needs more ranges answers with fewer IDs and PARTIAL.
 * Same as fw_wire_request_size_seq(op, count, 12).
 * Returns 0 for an unknown op.
 */
FW_API size_t fw_wire_request_size(uint8_t op, uint16_t count);

/*
 * fw_wire_request_size() for a responder whose layout has @seq_bits
 * sequence bits (from INFO): RANGE allows ceil(count / 2^seq_bits) + 1
 * ranges, capped at FW_WIRE_RANGES_MAX. Other ops do not depend on it.
 * @seq_bits outside 1..22 is taken as 12. Returns 0 for an unknown op.
 */
FW_API size_t fw_wire_request_size_seq(uint8_t op, uint16_t count, unsigned seq_bits);

/*
 * Writes a request. @pad pads it to fw_wire_request_size() with zeros.
 * Returns the length written (>= 24), or FW_EWIRE_SPACE.
 */
FW_API int fw_wire_write_request(void *buf, size_t cap, uint8_t op, uint16_t count, uint64_t tag,
				 bool pad);

/*
 * Writes a request of exactly max(@len, 24) bytes: the header, then zeros.
 * Returns the length written, or FW_EWIRE_SPACE when @cap is too small.
 */
FW_API int fw_wire_write_request_len(void *buf, size_t cap, uint8_t op, uint16_t count,
				     uint64_t tag, size_t len);

/*
 * Parses a request of @len bytes.
 * Returns 0 with *h filled; FW_EWIRE_SHORT (under 24 bytes) or
 * FW_EWIRE_MAGIC: garbage, drop it; FW_EWIRE_VERSION: *h filled, answer
 * FW_WIRE_ST_BAD_VERSION; FW_EWIRE_BAD: *h filled (tag included), answer
 * FW_WIRE_ST_BAD_REQUEST (a reply op, unknown op, count 0, count above the
 * op's maximum: ID 1, LIST FW_WIRE_LIST_MAX, RANGE FW_WIRE_RANGE_IDS_MAX,
 * INFO 0 or 1, UUID7 FW_WIRE_UUID7_MAX). The version is checked before the
 * op: FW_EWIRE_VERSION wins over a bad op or count.
 */
FW_API int fw_wire_parse_request(const void *buf, size_t len, struct fw_wire_hdr *h);

/* Reply length for @op with @count IDs/ranges: 24 + body. 0 for an unknown op. */
FW_API size_t fw_wire_reply_size(uint8_t op, uint16_t count);

/*
 * Write a reply header from @h (op is the request op; the reply bit is set
 * here) followed by the body. @h->count is overwritten with @n.
 * Each returns the reply length, or FW_EWIRE_SPACE when @cap is too small.
 */
FW_API int fw_wire_write_ids(void *buf, size_t cap, const struct fw_wire_hdr *h,
			     const uint64_t *ids, uint16_t n);
FW_API int fw_wire_write_ranges(void *buf, size_t cap, const struct fw_wire_hdr *h,
				const struct fw_wire_range *r, uint16_t n);
FW_API int fw_wire_write_info(void *buf, size_t cap, const struct fw_wire_hdr *h,
			      const struct fw_wire_info *info);
/* UUID7 reply: @n UUIDs of FW_WIRE_UUID_LEN bytes each at @uuids. */
FW_API int fw_wire_write_uuids(void *buf, size_t cap, const struct fw_wire_hdr *h,
			       const uint8_t (*uuids)[FW_WIRE_UUID_LEN], uint16_t n);
/* A reply with no body (error statuses); count is written as 0. */
FW_API int fw_wire_write_status(void *buf, size_t cap, const struct fw_wire_hdr *h);

/*
 * Parses a reply of @len bytes into *r.
 * Returns 0; FW_EWIRE_SHORT (truncated header or body), FW_EWIRE_MAGIC,
 * FW_EWIRE_VERSION (r->hdr filled), FW_EWIRE_BAD (not a reply, unknown op
 * or status, count above the op's maximum, status OK with count 0, a
 * range with n 0). Trailing bytes after the body are FW_EWIRE_BAD.
 */
FW_API int fw_wire_parse_reply(const void *buf, size_t len, struct fw_wire_reply *r);

/* Names, for logs and flakectl: "id", "list", ...; "ok", "retry-after", ... */
FW_API const char *fw_wire_op_name(uint8_t op);
FW_API const char *fw_wire_status_name(uint8_t status);
/*
 * A parser's result (0 or an FW_EWIRE_* code) by the name the conformance
 * vectors give it (tests/vectors/wire.vec): "ok", "short", "magic",
 * "version", "bad"; "?" for any other value.
 */
FW_API const char *fw_wire_result_name(int rc);

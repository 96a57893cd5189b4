/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RFC 9562 UUIDs: canonical text, the fields every UUIDv7 has, and
 * flakewire's UUIDv7 layout (lib/wire/PROTOCOL.md, "UUID7 reply body").
 *
 * A flakewire UUIDv7 is made from one Snowflake ID of a worker's generator
 * and random bits. The 128 bits, most significant first:
 *
 *   unix_ts_ms (48) | ver 0111 (4) | rand_a (12) | var 10 (2) | rand_b (62)
 *
 * and rand_a followed by rand_b (74 bits, "P") holds:
 *
 *   counter (seq_bits) | datacenter (dc_bits) | worker (worker_bits) |
 *   tag 0xF7 (8) | random (66 - seq_bits - dc_bits - worker_bits)
 *
 * unix_ts_ms is the layout's epoch plus the ID's timestamp; counter is the
 * ID's sequence (RFC 9562 section 6.2, method 1). One worker's UUIDs strictly
 * increase (ms, then counter), and (ms, counter, datacenter, worker) is as
 * unique as the Snowflake ID it came from.
 *
 * Pure arithmetic: no allocation, no I/O, no randomness of its own (the
 * caller passes random bits).
 *
 * Manual: doc/ids-and-uuidv7.md#uuidv7-from-the-same-clock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fw_common.h"
#include "fw_err.h"
#include "fw_layout.h"

#define FW_UUID_LEN          16
#define FW_UUID_TEXT_LEN     37 /* 36 characters and the NUL */
/* The tag byte that marks a UUIDv7 made in flakewire's layout. */
#define FW_UUID7_TAG         0xF7u
/* Largest Unix ms a UUIDv7 timestamp holds (48 bits, year 10889). */
#define FW_UUID7_UNIX_MS_MAX ((UINT64_C(1) << 48) - 1)

/*
 * What it takes to turn an ID of one worker into a UUIDv7, precomputed by
 * fw_uuid7_fmt_init(). Treat the fields as private.
 */
struct fw_uuid7_fmt {
	uint64_t epoch_ms;
	uint64_t seq_mask;      /* 2^seq_bits - 1 */
	uint64_t node_tag;      /* (datacenter << worker_bits | worker) << 8 | FW_UUID7_TAG */
	uint64_t rand_mask;     /* 2^rand_bits - 1 (all ones when rand_bits >= 64) */
	uint32_t time_shift;    /* seq_bits + worker_bits + dc_bits */
	uint32_t counter_shift; /* dc_bits + worker_bits + 8 */
	uint32_t rand_bits;     /* 66 - seq_bits - dc_bits - worker_bits */
};

/* The parts of a UUID that fw_uuid7_decode() reads. */
struct fw_uuid7_parts {
	unsigned version; /* bits 48-51 */
	unsigned variant; /* 0: NCS (0xx), 2: RFC 9562 (10x), 6: Microsoft (110), 7: reserved (111)
			   */
	bool is_v7;       /* version 7 and variant 2: the fields below make sense */
	uint64_t unix_ms; /* bits 0-47 (is_v7) */
	bool flakewire;   /* is_v7 and the tag reads FW_UUID7_TAG where @layout puts it */
	uint32_t counter; /* these four only when flakewire */
	uint32_t datacenter;
	uint32_t worker;
	unsigned rand_bits;
};

/*
 * Prepares *f for the worker (@datacenter, @worker) of @layout.
 * Returns 0, -EINVAL (NULL argument), FW_ERANGE (datacenter or worker does
 * not fit the layout) or a fw_layout_validate() code.
 */
FW_API int fw_uuid7_fmt_init(struct fw_uuid7_fmt *f, const struct fw_layout *layout,
			     uint32_t datacenter, uint32_t worker);

/*
 * Random bits in a UUIDv7 of @layout: 66 - seq_bits - dc_bits - worker_bits
 * (35..65; in the one-bit layouts where it is 65, the top one is always 0).
 */
FW_API unsigned fw_uuid7_rand_bits(const struct fw_layout *layout);

/* Big-endian 64-bit store and load (one bswap and one move on x86). */
static inline void fw_uuid_put_be64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline uint64_t fw_uuid_get_be64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/*
 * Makes the UUIDv7 of the Snowflake ID @id (issued by the worker @f was
 * made for), with the low rand_bits of @rnd as its random bits.
 * Returns 0, or FW_ERANGE when the Unix ms does not fit 48 bits (*out
 * untouched).
 */
static inline int fw_uuid7_from_id(const struct fw_uuid7_fmt *f, uint64_t id, uint64_t rnd,
				   uint8_t out[FW_UUID_LEN])
{
	uint64_t unix_ms = f->epoch_ms + (id >> f->time_shift);
	if (FW_UNLIKELY(unix_ms > FW_UUID7_UNIX_MS_MAX))
		return FW_ERANGE;
	/* P = (counter << counter_shift | node_tag) << rand_bits | random: 74 bits;
	 * rand_a is its top 12 bits, rand_b the low 62. */
	uint64_t top = (id & f->seq_mask) << f->counter_shift | f->node_tag;
	uint64_t r = rnd & f->rand_mask;
	uint64_t hi, lo;
	if (FW_LIKELY(f->rand_bits <= 62)) {
		/* The random bits stay in rand_b; the shift drops what goes to rand_a. */
		hi = unix_ms << 16 | UINT64_C(0x7000) | top >> (62 - f->rand_bits);
		lo = UINT64_C(1) << 63 | ((top << f->rand_bits | r) & ((UINT64_C(1) << 62) - 1));
	} else {
		/* Layouts with under 4 sequence and node bits: random bits reach rand_a. */
		__extension__ typedef unsigned __int128 u128;
		u128 p = (u128)top << f->rand_bits | r;
		hi = unix_ms << 16 | UINT64_C(0x7000) | (uint64_t)(p >> 62);
		lo = UINT64_C(1) << 63 | ((uint64_t)p & ((UINT64_C(1) << 62) - 1));
	}
	fw_uuid_put_be64(out, hi);
	fw_uuid_put_be64(out + 8, lo);
	return 0;
}

/*
 * Builds a flakewire UUIDv7 from its fields (tests, tools).
 * Returns 0, or FW_ERANGE when a field does not fit its width in @layout or
 * unix_ms does not fit 48 bits; -EINVAL for a NULL argument.
 */
FW_API int fw_uuid7_encode(const struct fw_layout *layout, uint64_t unix_ms, uint32_t datacenter,
			   uint32_t worker, uint32_t counter, uint64_t rnd,
			   uint8_t out[FW_UUID_LEN]);

/*
 * Reads any UUID: version and variant; for a UUIDv7 (is_v7) the Unix ms;
 * and when it carries flakewire's tag at the place @layout gives it
 * (flakewire), counter, datacenter and worker. @layout NULL: the default
 * layout. Returns 0, or -EINVAL for a NULL @u or @out.
 */
FW_API int fw_uuid7_decode(const struct fw_layout *layout, const uint8_t u[FW_UUID_LEN],
			   struct fw_uuid7_parts *out);

/* Writes @u as canonical lowercase text (8-4-4-4-12 hex digits) and a NUL. Returns @text. */
FW_API char *fw_uuid_format(const uint8_t u[FW_UUID_LEN], char text[FW_UUID_TEXT_LEN]);

/* Why fw_uuid_parse() refused a text. */
enum fw_uuid_text_error {
	FW_UUID_TEXT_OK = 0,
	FW_UUID_TEXT_LENGTH, /* not 36 characters */
	FW_UUID_TEXT_HYPHEN, /* no '-' at offset 8, 13, 18 or 23 */
	FW_UUID_TEXT_DIGIT,  /* a character that is not a hex digit */
};

/*
 * Parses canonical UUID text: 36 characters, hex digits (either case) with
 * '-' at offsets 8, 13, 18 and 23, nothing before or after.
 * @why  NULL, or receives the reason on error;
 * @pos  NULL, or receives the offset of the offending character (the
 *       length for FW_UUID_TEXT_LENGTH).
 * Returns 0, or -EINVAL (*why and *pos set; @out untouched).
 */
FW_API int fw_uuid_parse(const char *text, uint8_t out[FW_UUID_LEN], enum fw_uuid_text_error *why,
			 size_t *pos);

/* Compares UUIDs as 128-bit big-endian numbers (memcmp order): -1, 0 or 1. */
static inline int fw_uuid_cmp(const uint8_t a[FW_UUID_LEN], const uint8_t b[FW_UUID_LEN])
{
	uint64_t ah = fw_uuid_get_be64(a), bh = fw_uuid_get_be64(b);
	if (ah != bh)
		return ah < bh ? -1 : 1;
	uint64_t al = fw_uuid_get_be64(a + 8), bl = fw_uuid_get_be64(b + 8);
	if (al != bl)
		return al < bl ? -1 : 1;
	return 0;
}

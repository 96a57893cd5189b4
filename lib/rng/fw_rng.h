/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A per-thread cryptographically secure random number generator for the
 * random bits of UUIDv7 (RFC 9562 section 6.9): a ChaCha20 keystream
 * (libsodium's crypto_stream_chacha20) written into a buffer and handed
 * out 8 bytes at a time.
 *
 *  - The key comes from getrandom(2) at fw_rng_init().
 *  - Fast key erasure: each refill writes FW_RNG_BUF_LEN bytes of keystream
 *    into the buffer; its first 32 bytes become the next key (the old key is
 *    overwritten) and are wiped, and every 8 bytes handed out are wiped from
 *    the buffer. Whoever reads the state later cannot recover earlier output.
 *  - Reseeding: after FW_RNG_RESEED_BYTES of output the key is mixed with
 *    32 fresh bytes of getrandom(2) (GRND_NONBLOCK; if that fails the
 *    keystream simply continues and the next refill tries again). That is
 *    the only system call after init: one per 8 M values.
 *
 * One struct fw_rng per thread (per lcore): no locks, not thread-safe.
 *
 * Manual: doc/ids-and-uuidv7.md#uuidv7-from-the-same-clock.
 */
#pragma once

#include <stdint.h>
#include <string.h>

#include "fw_common.h"

#define FW_RNG_BUF_LEN      1024u
#define FW_RNG_RESEED_BYTES (UINT64_C(64) << 20)

struct fw_rng {
	uint32_t pos;        /* next unread byte of buf (the first 32 are the next key) */
	uint64_t since_seed; /* bytes of keystream made since the last reseed */
	uint64_t refills;    /* buffer refills (statistics) */
	uint64_t reseeds;    /* successful reseeds after init (statistics) */
	uint8_t key[32];
	uint8_t buf[FW_RNG_BUF_LEN] FW_CACHE_ALIGNED;
};

/*
 * Seeds *r from getrandom(2) (blocking only until the kernel's pool is
 * initialised at boot) and fills the buffer.
 * Returns 0, -EINVAL for NULL, -EIO when libsodium cannot initialise, or
 * -errno from getrandom().
 */
FW_API int fw_rng_init(struct fw_rng *r);

/* Refills the buffer (and reseeds when due). Called by fw_rng_u64(). */
FW_API void fw_rng_refill(struct fw_rng *r);

/* Wipes the state. */
FW_API void fw_rng_wipe(struct fw_rng *r);

/* 64 random bits. */
static inline uint64_t fw_rng_u64(struct fw_rng *r)
{
	uint64_t v;

	if (FW_UNLIKELY(r->pos > FW_RNG_BUF_LEN - sizeof(v)))
		fw_rng_refill(r);
	memcpy(&v, r->buf + r->pos, sizeof(v));
	memset(r->buf + r->pos, 0, sizeof(v));
	r->pos += sizeof(v);
	return v;
}

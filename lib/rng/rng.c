/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <sodium.h>
#include <sys/random.h>

#include "fw_rng.h"

/* The nonce is always zero: every key is used for exactly one keystream. */
static const uint8_t zero_nonce[crypto_stream_chacha20_NONCEBYTES];

static int get_random(void *p, size_t n, unsigned flags)
{
	ssize_t got;

	do {
		got = getrandom(p, n, flags);
	} while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	/* getrandom() returns up to 256 bytes in full once the pool is ready. */
	return (size_t)got == n ? 0 : -EIO;
}

static void make_stream(struct fw_rng *r)
{
	crypto_stream_chacha20(r->buf, sizeof(r->buf), zero_nonce, r->key);
	memcpy(r->key, r->buf, sizeof(r->key));
	sodium_memzero(r->buf, sizeof(r->key));
	r->pos = sizeof(r->key);
	r->since_seed += sizeof(r->buf);
	r->refills++;
}

FW_API int fw_rng_init(struct fw_rng *r)
{
	int rc;

	if (r == NULL)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	memset(r, 0, sizeof(*r));
	rc = get_random(r->key, sizeof(r->key), 0);
	if (rc < 0)
		return rc;
	make_stream(r);
	r->since_seed = 0;
	r->refills = 0;
	return 0;
}

FW_API void fw_rng_refill(struct fw_rng *r)
{
	if (FW_UNLIKELY(r->since_seed >= FW_RNG_RESEED_BYTES)) {
		uint8_t fresh[32];

		if (get_random(fresh, sizeof(fresh), GRND_NONBLOCK) == 0) {
			for (size_t i = 0; i < sizeof(fresh); i++)
				r->key[i] ^= fresh[i];
			r->since_seed = 0;
			r->reseeds++;
		}
		sodium_memzero(fresh, sizeof(fresh));
	}
	make_stream(r);
}

FW_API void fw_rng_wipe(struct fw_rng *r)
{
	sodium_memzero(r, sizeof(*r));
}

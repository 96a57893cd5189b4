/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "fw_hist.h"

FW_API void fw_hist_init(struct fw_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

FW_API unsigned fw_hist_bucket(uint64_t v)
{
	if (v < FW_HIST_SUB)
		return (unsigned)v;
	unsigned k = 63u - (unsigned)__builtin_clzll(v); /* k >= SUB_BITS */
	unsigned sub = (unsigned)(v >> (k - FW_HIST_SUB_BITS)) & (FW_HIST_SUB - 1);

	return (k - FW_HIST_SUB_BITS + 1) * FW_HIST_SUB + sub;
}

FW_API uint64_t fw_hist_bucket_low(unsigned b)
{
	if (b >= FW_HIST_BUCKETS)
		return UINT64_MAX;
	if (b < FW_HIST_SUB)
		return b;
	unsigned k = b / FW_HIST_SUB + FW_HIST_SUB_BITS - 1;

	return (1ull << k) + ((uint64_t)(b % FW_HIST_SUB) << (k - FW_HIST_SUB_BITS));
}

FW_API uint64_t fw_hist_bucket_high(unsigned b)
{
	if (b >= FW_HIST_BUCKETS)
		return UINT64_MAX;
	if (b < FW_HIST_SUB)
		return b;
	unsigned k = b / FW_HIST_SUB + FW_HIST_SUB_BITS - 1;

	return fw_hist_bucket_low(b) + ((1ull << (k - FW_HIST_SUB_BITS)) - 1);
}

FW_API void fw_hist_add(struct fw_hist *h, uint64_t v)
{
	h->n++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->b[fw_hist_bucket(v)]++;
}

FW_API void fw_hist_merge(struct fw_hist *into, const struct fw_hist *from)
{
	if (!from->n)
		return;
	into->n += from->n;
	into->sum += from->sum;
	into->min = FW_MIN(into->min, from->min);
	into->max = FW_MAX(into->max, from->max);
	for (unsigned b = 0; b < FW_HIST_BUCKETS; b++)
		into->b[b] += from->b[b];
}

FW_API uint64_t fw_hist_quantile(const struct fw_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->n)
		return 0;
	/*
	 * rank = ceil(q * n), tolerant of q * n landing a hair above an integer
	 * (0.99 * 100 must be rank 99, not 100)
	 */
	if (q <= 0)
		rank = 1;
	else if (q >= 1)
		rank = h->n;
	else
		rank = (uint64_t)(q * (double)h->n + 0.999999);
	rank = FW_MAX(rank, (uint64_t)1);
	for (unsigned b = 0; b < FW_HIST_BUCKETS; b++) {
		seen += h->b[b];
		if (seen >= rank)
			return FW_MIN(fw_hist_bucket_high(b), h->max);
	}
	return h->max;
}

FW_API uint64_t fw_hist_mean(const struct fw_hist *h)
{
	return h->n ? h->sum / h->n : 0;
}

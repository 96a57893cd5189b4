/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Log-bucketed histogram: values below 2^SUB_BITS have their own bucket;
 * above, each power of two is split into 2^SUB_BITS equal sub-buckets, so a
 * bucket is at most 1/16 (~6 %) of its value wide, whatever the range.
 */
#include <string.h>

#include "fl.h"

#define SUB (1u << FL_HIST_SUB_BITS)

static unsigned bucket_of(uint64_t v)
{
	if (v < SUB)
		return (unsigned)v;
	unsigned k = 63u - (unsigned)__builtin_clzll(v); /* k >= SUB_BITS */
	unsigned sub = (unsigned)(v >> (k - FL_HIST_SUB_BITS)) & (SUB - 1);
	return (k - FL_HIST_SUB_BITS + 1) * SUB + sub;
}

/* Largest value that falls in bucket @b. */
static uint64_t bucket_top(unsigned b)
{
	if (b < SUB)
		return b;
	unsigned k = b / SUB + FL_HIST_SUB_BITS - 1;
	uint64_t sub = b % SUB;
	uint64_t low = (1ull << k) + (sub << (k - FL_HIST_SUB_BITS));
	return low + (1ull << (k - FL_HIST_SUB_BITS)) - 1;
}

void fl_hist_init(struct fl_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void fl_hist_add(struct fl_hist *h, uint64_t ns)
{
	h->n++;
	h->sum += ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
	h->b[bucket_of(ns)]++;
}

uint64_t fl_hist_quantile(const struct fl_hist *h, double q)
{
	if (!h->n)
		return 0;
	/* the smallest value v with at least ceil(q * n) samples <= v */
	uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < FL_HIST_BUCKETS; b++) {
		seen += h->b[b];
		if (seen >= rank) {
			uint64_t top = bucket_top(b);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

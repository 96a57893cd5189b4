/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A log-bucketed histogram of 64-bit values (latencies in ns), the one both
 * load generators (flakectl bench, flakeload) keep and report from.
 *
 * Buckets: a value below 2^FW_HIST_SUB_BITS (16) has a bucket of its own;
 * above, each power of two [2^k, 2^(k+1)) is split into 16 equal sub-buckets
 * of width 2^(k-4). A bucket is therefore at most 1/16 (6.25 %) of its lowest
 * value wide, whatever the range, and 976 buckets cover every uint64_t.
 *
 * Quantile convention: a quantile is reported as the UPPER bound of the
 * bucket that holds it (the largest value that bucket can hold), capped at
 * the largest value added. The true quantile is never above the reported
 * one and at most 6.25 % below it: a quoted p99 is never optimistic. (The
 * bucket's middle would be closer on average but could understate a tail
 * by 3 %, and a latency bound is quoted to be relied on.) The reported
 * value is never below the smallest value added either, since it is the top
 * of a bucket holding at least one added value.
 *
 * Not thread safe: one histogram per thread or lcore, merged at the end
 * (fw_hist_merge). No DPDK, no allocation.
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"

#define FW_HIST_SUB_BITS 4 /* 16 sub-buckets per power of two */
#define FW_HIST_SUB      (1u << FW_HIST_SUB_BITS)
/* Buckets for every uint64_t: 16 exact ones, then 16 per power of two 2^4..2^63. */
#define FW_HIST_BUCKETS  ((64 - FW_HIST_SUB_BITS + 1) << FW_HIST_SUB_BITS)

struct fw_hist {
	uint64_t n;   /* values added */
	uint64_t sum; /* their sum (wraps after 2^64: ~584 years of ns) */
	uint64_t min; /* UINT64_MAX while empty */
	uint64_t max; /* 0 while empty */
	uint64_t b[FW_HIST_BUCKETS];
};

/* Empties @h. */
FW_API void fw_hist_init(struct fw_hist *h);

/* Adds the value @v (any uint64_t) to @h. */
FW_API void fw_hist_add(struct fw_hist *h, uint64_t v);

/* Adds every value of @from into @into (counts, sum, min, max). @from is unchanged. */
FW_API void fw_hist_merge(struct fw_hist *into, const struct fw_hist *from);

/* The index of the bucket that holds @v: 0 .. FW_HIST_BUCKETS - 1. */
FW_API unsigned fw_hist_bucket(uint64_t v);

/*
 * The smallest value bucket @b holds. @b must be below FW_HIST_BUCKETS
 * (anything else returns UINT64_MAX).
 */
FW_API uint64_t fw_hist_bucket_low(unsigned b);

/*
 * The largest value bucket @b holds: the value a quantile falling in @b is
 * reported as (before the cap at the largest value added). @b must be below
 * FW_HIST_BUCKETS (anything else returns UINT64_MAX).
 */
FW_API uint64_t fw_hist_bucket_high(unsigned b);

/*
 * The @q quantile of @h (0 < q <= 1; q <= 0 is taken as the smallest value,
 * q > 1 as 1): the upper bound of the bucket holding the ceil(q * n)-th
 * smallest value, capped at the largest value added (so q = 1 returns it
 * exactly). Returns 0 when @h is empty.
 */
FW_API uint64_t fw_hist_quantile(const struct fw_hist *h, double q);

/* The mean of the values added (sum / n, rounded down); 0 when @h is empty. */
FW_API uint64_t fw_hist_mean(const struct fw_hist *h);

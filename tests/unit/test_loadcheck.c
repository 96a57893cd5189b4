/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/loadcheck: the latency histogram (fw_hist.h) and the ID verifier
 * (fw_idcheck.h) of flakectl bench and flakeload. The buckets tile every
 * uint64_t without gap or overlap and are no wider than the stated 1/16; a
 * quantile is the upper bound of its bucket, never below the true one; the
 * verifier finds each duplicate, order, worker, time and negative fault it
 * names, and none in a clean run.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_hist.h"
#include "fw_idcheck.h"

/* ---- histogram ---- */

/* Every bucket starts one past the end of the previous; the last ends at UINT64_MAX. */
static void test_buckets_tile(void **state)
{
	(void)state;
	assert_int_equal(FW_HIST_BUCKETS, 976);
	assert_int_equal(fw_hist_bucket_low(0), 0);
	for (unsigned b = 0; b < FW_HIST_BUCKETS; b++) {
		uint64_t lo = fw_hist_bucket_low(b), hi = fw_hist_bucket_high(b);

		assert_true(lo <= hi);
		assert_int_equal(fw_hist_bucket(lo), b);
		assert_int_equal(fw_hist_bucket(hi), b);
		if (b + 1 < FW_HIST_BUCKETS)
			assert_int_equal(fw_hist_bucket_low(b + 1), hi + 1);
		/* the resolution the header promises: width at most 1/16 of the low end */
		if (b < FW_HIST_SUB)
			assert_int_equal(lo, hi);
		else
			assert_true(hi - lo + 1 <= lo / FW_HIST_SUB);
	}
	assert_int_equal(fw_hist_bucket_high(FW_HIST_BUCKETS - 1), UINT64_MAX);
	assert_int_equal(fw_hist_bucket(UINT64_MAX), FW_HIST_BUCKETS - 1);
	assert_int_equal(fw_hist_bucket_low(FW_HIST_BUCKETS), UINT64_MAX);
}

/* Known values land in the buckets worked out by hand. */
static void test_bucket_values(void **state)
{
	(void)state;
	for (uint64_t v = 0; v < 16; v++)
		assert_int_equal(fw_hist_bucket(v), v);
	/* 16..31: 16 buckets of width 1; 32..63: width 2; 1000: 2^9 row, width 32 */
	assert_int_equal(fw_hist_bucket(16), 16);
	assert_int_equal(fw_hist_bucket(31), 31);
	assert_int_equal(fw_hist_bucket(32), 32);
	assert_int_equal(fw_hist_bucket(33), 32);
	assert_int_equal(fw_hist_bucket(34), 33);
	assert_int_equal(fw_hist_bucket_low(fw_hist_bucket(1000)), 992);
	assert_int_equal(fw_hist_bucket_high(fw_hist_bucket(1000)), 1023);
	assert_int_equal(fw_hist_bucket_low(fw_hist_bucket(1024)), 1024);
	assert_int_equal(fw_hist_bucket_high(fw_hist_bucket(1024)), 1087);
}

/* 1..100: each quantile is the top of the bucket of the ceil(q n)-th value. */
static void test_quantile_upper_bound(void **state)
{
	struct fw_hist h;

	(void)state;
	fw_hist_init(&h);
	assert_int_equal(fw_hist_quantile(&h, 0.5), 0); /* empty */
	for (uint64_t v = 1; v <= 100; v++)
		fw_hist_add(&h, v);
	assert_int_equal(h.n, 100);
	assert_int_equal(h.min, 1);
	assert_int_equal(h.max, 100);
	assert_int_equal(fw_hist_mean(&h), 50); /* 5050 / 100 */
	/* rank 50 is 50, bucket [50, 51]: the top, not the middle */
	assert_int_equal(fw_hist_quantile(&h, 0.5), 51);
	/* rank 90 is 90, bucket [88, 91] */
	assert_int_equal(fw_hist_quantile(&h, 0.9), 91);
	/* rank 99 (0.99 * 100 is not rounded up to 100) is 99, bucket [96, 99] */
	assert_int_equal(fw_hist_quantile(&h, 0.99), 99);
	/* rank 100 is 100, bucket [96, 103] capped at the max */
	assert_int_equal(fw_hist_quantile(&h, 0.999), 100);
	assert_int_equal(fw_hist_quantile(&h, 1.0), 100);
	assert_int_equal(fw_hist_quantile(&h, 0), 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Random latencies over six decades: the reported quantile is never below
 * the true one, nor above the top of its bucket (so at most 1/16 high).
 */
static void test_quantile_never_optimistic(void **state)
{
	enum { N = 20011 };
	static const double qs[] = {0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0};
	uint64_t *v = malloc(N * sizeof(*v));
	struct fw_hist h;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	assert_non_null(v);
	fw_hist_init(&h);
	for (unsigned i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[i] = 100 + (x % 1000) * (1ull << (x >> 60) % 14);
		fw_hist_add(&h, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		uint64_t rank = (uint64_t)(qs[k] * N + 0.999999);
		uint64_t truth = v[(rank ? rank : 1) - 1];
		uint64_t got = fw_hist_quantile(&h, qs[k]);

		assert_true(got >= truth);
		assert_true(got <= fw_hist_bucket_high(fw_hist_bucket(truth)));
		assert_true(got - truth <= truth / FW_HIST_SUB);
		assert_true(got <= v[N - 1]);
	}
	free(v);
}

/* Two histograms merged are the histogram of all their values. */
static void test_merge(void **state)
{
	struct fw_hist a, b, all, empty;

	(void)state;
	fw_hist_init(&a);
	fw_hist_init(&b);
	fw_hist_init(&all);
	fw_hist_init(&empty);
	for (uint64_t v = 0; v < 5000; v += 7) {
		fw_hist_add(v % 2 ? &a : &b, v * v);
		fw_hist_add(&all, v * v);
	}
	fw_hist_merge(&a, &b);
	fw_hist_merge(&a, &empty); /* an empty one changes nothing, min included */
	assert_memory_equal(&a, &all, sizeof(a));
}

/* ---- verifier ---- */

static struct fw_layout layout; /* 41/0/10/12, default epoch */

static uint64_t id_of(uint64_t ms, uint32_t worker, uint32_t seq)
{
	uint64_t id = 0;

	assert_int_equal(fw_layout_encode(&layout, ms, 0, worker, seq, &id), 0);
	return id;
}

static void check_init(struct fw_idcheck *v, uint32_t bound, uint64_t max_runs)
{
	struct fw_idcheck_conf c = {.layout = layout, .time_bound_ms = bound, .max_runs = max_runs};

	assert_int_equal(fw_idcheck_init(v, &c), 0);
}

/* Consecutive IDs from three workers, interleaved: no finding, one run per worker. */
static void test_clean_run(void **state)
{
	struct fw_idcheck v;

	(void)state;
	fw_layout_default(&layout);
	check_init(&v, FW_IDCHECK_NO_TIME, 64);
	for (uint32_t s = 0; s < 4096; s += 8)
		for (uint32_t w = 1; w <= 3; w++)
			assert_int_equal(
				fw_idcheck_add(&v, id_of(1000, w, s), 8, 0, (uint16_t)w, 0, 0), 0);
	/* worker 1's next ms: a run of its own (worker 2's IDs lie between) */
	assert_int_equal(fw_idcheck_add(&v, id_of(1001, 1, 0), 1, 0, 1, 0, 0), 0);
	fw_idcheck_finish(&v);
	assert_int_equal(fw_idcheck_total(&v), 0);
	assert_int_equal(v.ids, 3 * 4096 + 1);
	assert_int_equal(v.ids_stored, v.ids);
	assert_int_equal(v.n_workers, 3);
	assert_int_equal(v.n_runs, 4); /* workers 1, 2, 3 and worker 1's next ms */
	assert_int_equal(v.ms_started, 4);
	assert_int_equal(v.ms_full, 3);
	for (uint64_t i = 1; i < v.n_runs; i++)
		assert_true(v.runs[i - 1].first < v.runs[i].first);
	fw_idcheck_free(&v);
}

/* An ID seen twice is a duplicate, counted per ID, wherever it sits in the run. */
static void test_duplicates(void **state)
{
	struct fw_idcheck v;
	uint64_t base;

	(void)state;
	fw_layout_default(&layout);
	base = id_of(2000, 5, 100);
	check_init(&v, FW_IDCHECK_NO_TIME, 64);
	fw_idcheck_add(&v, base, 10, 0, 5, 0, 0);
	fw_idcheck_add(&v, base + 20, 5, 0, 6, 0, 0); /* another header: worker_mismatch */
	/* 3 IDs inside the first run, out of order, from another (fresh) checker's view */
	struct fw_idcheck u;

	check_init(&u, FW_IDCHECK_NO_TIME, 64);
	fw_idcheck_add(&u, base + 7, 3, 0, 5, 0, 0);
	assert_int_equal(u.v[FW_IDCHECK_ORDER], 0); /* order is per checker */
	fw_idcheck_add(&u, base + 22, 1, 0, 5, 0, 0);
	assert_int_equal(fw_idcheck_merge(&v, &u), 0);
	assert_int_equal(u.n_runs, 0);
	fw_idcheck_finish(&v);
	assert_int_equal(v.v[FW_IDCHECK_DUPLICATE], 4);
	assert_int_equal(v.first_bad[FW_IDCHECK_DUPLICATE], base + 7);
	assert_int_equal(v.v[FW_IDCHECK_WORKER], 5);
	assert_int_equal(v.v[FW_IDCHECK_ORDER], 0);
	assert_int_equal(v.ids, 19);
	assert_int_equal(v.ids_stored, 19);
	/* a second finish counts nothing twice; merging a finished checker is refused */
	fw_idcheck_finish(&v);
	assert_int_equal(v.v[FW_IDCHECK_DUPLICATE], 4);
	assert_int_equal(fw_idcheck_merge(&v, &u), -EINVAL);
	assert_int_equal(fw_idcheck_total(&v), 9);
	fw_idcheck_free(&u);
	fw_idcheck_free(&v);
}

/* The same ID twice in a row on one checker: an order fault and a duplicate. */
static void test_order(void **state)
{
	struct fw_idcheck v;
	uint64_t a, b;

	(void)state;
	fw_layout_default(&layout);
	a = id_of(3000, 9, 10);
	b = id_of(3000, 8, 10);
	check_init(&v, FW_IDCHECK_NO_TIME, 64);
	assert_int_equal(fw_idcheck_add(&v, a, 4, 0, 9, 0, 0), 0);
	assert_int_equal(fw_idcheck_add(&v, b, 4, 0, 8, 0, 0), 0); /* below, another worker */
	/* a run overlapping worker 9's last ID: not above it */
	assert_int_equal(fw_idcheck_add(&v, a + 3, 2, 0, 9, 0, 0), 1u << FW_IDCHECK_ORDER);
	/* strictly below */
	assert_int_equal(fw_idcheck_add(&v, a - 1, 1, 0, 9, 0, 0), 1u << FW_IDCHECK_ORDER);
	/* above again: fine */
	assert_int_equal(fw_idcheck_add(&v, a + 10, 1, 0, 9, 0, 0), 0);
	fw_idcheck_finish(&v);
	assert_int_equal(v.v[FW_IDCHECK_ORDER], 2);
	assert_int_equal(v.first_bad[FW_IDCHECK_ORDER], a + 3);
	assert_int_equal(v.v[FW_IDCHECK_DUPLICATE], 1); /* a + 3 */
	fw_idcheck_free(&v);
}

/* Bit 63, an empty run, a run that wraps; a run crossing into the worker field. */
static void test_malformed_and_worker(void **state)
{
	struct fw_idcheck v;
	uint64_t last_seq;

	(void)state;
	fw_layout_default(&layout);
	last_seq = id_of(4000, 2, 4095);
	check_init(&v, FW_IDCHECK_NO_TIME, 64);
	assert_int_equal(fw_idcheck_add(&v, 1ull << 63, 1, 0, 0, 0, 0), 1u << FW_IDCHECK_NEGATIVE);
	assert_int_equal(fw_idcheck_add(&v, 5, 0, 0, 0, 0, 0), 1u << FW_IDCHECK_NEGATIVE);
	assert_int_equal(fw_idcheck_add(&v, (1ull << 63) - 2, 4, 0, 0, 0, 0),
			 1u << FW_IDCHECK_NEGATIVE);
	assert_int_equal(v.v[FW_IDCHECK_NEGATIVE], 1 + 1 + 4);
	assert_int_equal(v.n_runs, 0); /* none stored */
	/* last sequence value + 1 carries into worker 3 */
	assert_int_equal(fw_idcheck_add(&v, last_seq, 2, 0, 2, 0, 0), 1u << FW_IDCHECK_WORKER);
	fw_idcheck_free(&v);
}

/*
 * A LIST reply: stretches of consecutive IDs are one run each (an order fault
 * counts once per stretch); a stretch crossing into the next worker, or an
 * empty list, is found as with fw_idcheck_add.
 */
static void test_list(void **state)
{
	struct fw_idcheck v;
	uint64_t a, ids[8];

	(void)state;
	fw_layout_default(&layout);
	a = id_of(4500, 7, 100);
	check_init(&v, FW_IDCHECK_NO_TIME, 64);
	/* a, a+1, a+2, then a gap, a+10, a+11 */
	for (int i = 0; i < 3; i++)
		ids[i] = a + (uint64_t)i;
	ids[3] = a + 10;
	ids[4] = a + 11;
	assert_int_equal(fw_idcheck_add_list(&v, ids, 5, 0, 7, 0, 0), 0);
	assert_int_equal(v.ids, 5);
	assert_int_equal(v.n_runs, 2);
	assert_int_equal(v.runs[0].first, a);
	assert_int_equal(v.runs[0].n, 3);
	assert_int_equal(v.runs[1].first, a + 10);
	assert_int_equal(v.runs[1].n, 2);
	/* continuing the open run extends it */
	ids[0] = a + 12;
	assert_int_equal(fw_idcheck_add_list(&v, ids, 1, 0, 7, 0, 0), 0);
	assert_int_equal(v.n_runs, 2);
	/* above, then two below the worker's last: one order fault for the stretch */
	ids[0] = a + 20;
	ids[1] = a + 3;
	ids[2] = a + 4;
	assert_int_equal(fw_idcheck_add_list(&v, ids, 3, 0, 7, 0, 0), 1u << FW_IDCHECK_ORDER);
	assert_int_equal(v.v[FW_IDCHECK_ORDER], 1);
	assert_int_equal(v.first_bad[FW_IDCHECK_ORDER], a + 3);
	/* the last sequence value and the next ID: worker 8's, not the header's 7 */
	ids[0] = id_of(4600, 7, 4095);
	ids[1] = ids[0] + 1;
	assert_int_equal(fw_idcheck_add_list(&v, ids, 2, 0, 7, 0, 0), 1u << FW_IDCHECK_WORKER);
	assert_int_equal(fw_idcheck_add_list(&v, ids, 0, 0, 7, 0, 0), 1u << FW_IDCHECK_NEGATIVE);
	fw_idcheck_finish(&v);
	assert_int_equal(v.v[FW_IDCHECK_DUPLICATE], 0);
	fw_idcheck_free(&v);
}

/* IDs must decode within the bound of [sent, received]. */
static void test_time_bound(void **state)
{
	struct fw_idcheck v;
	uint64_t ms = 5000, unix_ms;

	(void)state;
	fw_layout_default(&layout);
	unix_ms = layout.epoch_ms + ms;
	check_init(&v, 10, 64);
	assert_int_equal(fw_idcheck_add(&v, id_of(ms, 1, 0), 1, 0, 1, unix_ms - 5, unix_ms + 5), 0);
	/* 10 ms before the request left: at the bound */
	assert_int_equal(fw_idcheck_add(&v, id_of(ms, 1, 1), 1, 0, 1, unix_ms + 10, unix_ms + 20),
			 0);
	/* 11 ms before */
	assert_int_equal(fw_idcheck_add(&v, id_of(ms, 1, 2), 1, 0, 1, unix_ms + 11, unix_ms + 20),
			 1u << FW_IDCHECK_TIME);
	/* 11 ms after the reply came back */
	assert_int_equal(fw_idcheck_add(&v, id_of(ms, 1, 3), 1, 0, 1, unix_ms - 20, unix_ms - 11),
			 1u << FW_IDCHECK_TIME);
	assert_int_equal(v.min_skew_ms, -11);
	assert_int_equal(v.max_skew_ms, 11);
	assert_int_equal(v.v[FW_IDCHECK_TIME], 2);
	fw_idcheck_free(&v);
	/* FW_IDCHECK_NO_TIME: the same IDs pass */
	check_init(&v, FW_IDCHECK_NO_TIME, 64);
	assert_int_equal(fw_idcheck_add(&v, id_of(ms, 1, 2), 1, 0, 1, unix_ms + 1000, unix_ms), 0);
	fw_idcheck_free(&v);
}

/* At max_runs a new run is counted as unchecked; extending one still works. */
static void test_store_cap(void **state)
{
	struct fw_idcheck v;
	struct fw_idcheck_conf c = {.time_bound_ms = FW_IDCHECK_NO_TIME, .max_runs = 2};

	(void)state;
	fw_layout_default(&layout);
	c.layout = layout;
	c.max_runs = 0;
	assert_int_equal(fw_idcheck_init(&v, &c), -EINVAL);
	c.max_runs = 2;
	c.prealloc = true;
	assert_int_equal(fw_idcheck_init(&v, &c), 0);
	assert_int_equal(v.cap_runs, 2);
	fw_idcheck_add(&v, id_of(10, 1, 0), 1, 0, 1, 0, 0);
	fw_idcheck_add(&v, id_of(10, 2, 0), 1, 0, 2, 0, 0);
	assert_false(fw_idcheck_full(&v));
	fw_idcheck_add(&v, id_of(10, 1, 1), 3, 0, 1, 0, 0); /* extends worker 1's run */
	assert_false(fw_idcheck_full(&v));
	fw_idcheck_add(&v, id_of(10, 3, 0), 5, 0, 3, 0, 0); /* a third run: no room */
	assert_true(fw_idcheck_full(&v));
	assert_int_equal(v.ids_unchecked, 5);
	assert_int_equal(v.ids_stored, 5);
	assert_int_equal(v.n_runs, 2);
	fw_idcheck_finish(&v);
	assert_int_equal(fw_idcheck_total(&v), 0);
	fw_idcheck_free(&v);
	fw_idcheck_free(&v); /* twice is harmless */
	assert_string_equal(fw_idcheck_name(FW_IDCHECK_ORDER), "not_increasing");
	assert_string_equal(fw_idcheck_name(FW_IDCHECK_COUNT), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets_tile),
		cmocka_unit_test(test_bucket_values),
		cmocka_unit_test(test_quantile_upper_bound),
		cmocka_unit_test(test_quantile_never_optimistic),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_clean_run),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_malformed_and_worker),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_time_bound),
		cmocka_unit_test(test_store_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

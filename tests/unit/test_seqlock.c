/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seqlock of lib/common (fw_seqlock.h) and the keeper's status published
 * with it (fw_keeper_status from any thread, issue 27): a reader never sees
 * a torn copy while a writer updates it. Run under ThreadSanitizer too
 * (scripts/test.sh, build-tsan), which reports any unsynchronised access.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fw_keeper.h"
#include "fw_seqlock.h"

/* A status of mixed fields, 8 + 8 * 5 + 4 + 1 bytes: its size is no multiple of 8. */
struct status {
	uint64_t gen;
	uint64_t v[5];
	uint32_t low;
	bool odd;
};

struct shared {
	FW_SEQLOCK(status) pub;
	atomic_int done;
	atomic_ulong reads, torn, backwards;
};

/* Every field of the copy is derived from gen: a copy of two writes shows. */
static bool whole(const struct status *s)
{
	for (int i = 0; i < 5; i++)
		if (s->v[i] != s->gen * (uint64_t)(i + 2))
			return false;
	return s->low == (uint32_t)s->gen && s->odd == (s->gen & 1);
}

static void *status_reader(void *arg)
{
	struct shared *sh = arg;
	uint64_t last = 0;

	while (!atomic_load_explicit(&sh->done, memory_order_acquire)) {
		struct status s;
		fw_seqlock_read(&sh->pub.seq, sh->pub.w, &s, sizeof(s));
		atomic_fetch_add_explicit(&sh->reads, 1, memory_order_relaxed);
		if (!whole(&s))
			atomic_fetch_add_explicit(&sh->torn, 1, memory_order_relaxed);
		if (s.gen < last)
			atomic_fetch_add_explicit(&sh->backwards, 1, memory_order_relaxed);
		last = s.gen;
	}
	return NULL;
}

/* Publishes generation @g: every field derived from it. */
static void publish(struct shared *sh, uint64_t g)
{
	struct status s = {.gen = g, .low = (uint32_t)g, .odd = g & 1};

	for (int i = 0; i < 5; i++)
		s.v[i] = g * (uint64_t)(i + 2);
	fw_seqlock_write(&sh->pub.seq, sh->pub.w, &s, sizeof(s));
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_no_torn_status(void **state)
{
	(void)state;
	static struct shared sh; /* zeroed: the first reads see gen 0, whole */
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, status_reader, &sh), 0);
	/*
	 * Write until the readers overlapped the writer for many reads (on a
	 * loaded 2-core machine a reader may not run during a fixed number of
	 * writes), bounded at 20 s.
	 */
	double until = mono_s() + 20.0;
	uint64_t g = 1;
	while (g < 200000 || (atomic_load(&sh.reads) < 100000 && mono_s() < until)) {
		publish(&sh, g++);
	}
	atomic_store_explicit(&sh.done, 1, memory_order_release);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_true(atomic_load(&sh.reads) >= 100000);
	assert_int_equal(atomic_load(&sh.torn), 0);
	assert_int_equal(atomic_load(&sh.backwards), 0);
}

/* The seqlock is what makes it whole: copied without it, the same writes tear. */
static void *plain_reader(void *arg)
{
	struct shared *sh = arg;

	while (!atomic_load_explicit(&sh->done, memory_order_acquire)) {
		struct status s;
		for (size_t i = 0; i * 8 < sizeof(s); i++) {
			uint64_t v = atomic_load_explicit(&sh->pub.w[i], memory_order_relaxed);
			memcpy((uint8_t *)&s + i * 8, &v,
			       sizeof(s) - i * 8 < 8 ? sizeof(s) - i * 8 : 8);
		}
		atomic_fetch_add_explicit(&sh->reads, 1, memory_order_relaxed);
		if (!whole(&s))
			atomic_fetch_add_explicit(&sh->torn, 1, memory_order_relaxed);
	}
	return NULL;
}

static void test_without_seqlock_tears(void **state)
{
	(void)state;
	static struct shared sh;
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, plain_reader, &sh), 0);
	double until = mono_s() + 20.0;
	uint64_t g = 1;
	while (atomic_load(&sh.torn) == 0 && mono_s() < until) {
		publish(&sh, g++);
	}
	atomic_store_explicit(&sh.done, 1, memory_order_release);
	pthread_join(th, NULL);
	assert_true(atomic_load(&sh.torn) > 0); /* the check above can fail */
}

/* ---- the keeper's status, read by other threads while its owner ticks ---- */

static _Atomic uint64_t store_mark;

static int st_read(void *arg, uint64_t *ms)
{
	(void)arg;
	(void)ms;
	return -ENOENT;
}

static int st_write(void *arg, uint64_t ms)
{
	(void)arg;
	atomic_store(&store_mark, ms);
	return 0;
}

struct kshared {
	struct fw_keeper *k;
	atomic_int done;
	atomic_ulong reads, bad;
};

static void *keeper_reader(void *arg)
{
	struct kshared *ks = arg;
	struct fw_keeper_status last = {0};

	while (!atomic_load_explicit(&ks->done, memory_order_acquire)) {
		struct fw_keeper_status st;
		fw_keeper_status(ks->k, &st);
		atomic_fetch_add_explicit(&ks->reads, 1, memory_order_relaxed);
		/* counters and times only move forward; the mark is ahead of the keeper's time */
		if (st.mark_writes < last.mark_writes || st.now_unix_ms < last.now_unix_ms ||
		    st.mark_unix_ms < last.mark_unix_ms || st.mark_unix_ms < st.now_unix_ms)
			atomic_fetch_add_explicit(&ks->bad, 1, memory_order_relaxed);
		last = st;
	}
	return NULL;
}

#define HZ       1000000000ULL /* a 1 GHz script TSC: one tick a nanosecond */
#define START_NS ((FW_DEFAULT_EPOCH_MS + 86400000ULL) * 1000000ULL)

static void test_keeper_status_any_thread(void **state)
{
	(void)state;
	struct fw_keeper_io io = {st_read, st_write, NULL};
	struct fw_keeper_config cfg;
	uint32_t ids[1] = {1};
	struct kshared ks = {0};
	pthread_t th[2];

	fw_keeper_config_default(&cfg);
	cfg.io = &io;
	cfg.mark_ahead_ms = 50; /* a write every few ticks */
	cfg.reanchor_ms = 1000;
	cfg.clock.horizon_ms = 1000;
	cfg.n_workers = 1;
	cfg.worker_ids = ids;
	assert_int_equal(fw_keeper_create(&cfg, &ks.k), 0);
	uint64_t t = 1000;
	assert_int_equal(fw_keeper_start(ks.k, t, START_NS, t + HZ / 10, START_NS + HZ / 10, NULL),
			 0);
	t += HZ / 10;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, keeper_reader, &ks), 0);
	double until = mono_s() + 20.0;
	uint64_t n = 0;
	while (n < 50000 || (atomic_load(&ks.reads) < 50000 && mono_s() < until)) {
		t += HZ / 100; /* 10 ms ticks of script time */
		fw_keeper_tick(ks.k, t, START_NS + (t - 1000));
		n++;
	}
	atomic_store_explicit(&ks.done, 1, memory_order_release);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	struct fw_keeper_status st;
	fw_keeper_status(ks.k, &st);
	assert_true(st.mark_writes > 1000); /* the readers raced many writes */
	assert_true(atomic_load(&ks.reads) >= 50000);
	assert_int_equal(atomic_load(&ks.bad), 0);
	fw_keeper_free(ks.k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_torn_status),
		cmocka_unit_test(test_without_seqlock_tears),
		cmocka_unit_test(test_keeper_status_any_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

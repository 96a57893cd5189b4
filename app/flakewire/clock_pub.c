/* SPDX-License-Identifier: BSD-3-Clause */
/* The sequence-locked publication of the calibration and the mark. */
#include <time.h>

#include <rte_cycles.h>

#include "fw_app.h"

void fw_clock_pub_write(struct fw_clock_pub *p, const struct fw_clock_snap *s)
{
	uint32_t seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	p->snap = *s;
	__atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
}

uint64_t fw_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fw_clock_sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	/* keep the pair whose TSC bracket around clock_gettime is the tightest */
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = rte_rdtsc_precise();
		uint64_t n = fw_realtime_ns();
		uint64_t t1 = rte_rdtsc_precise();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

/*
 * The test-clock hooks do nothing in flakewire. They are weak so that
 * flakewire-testclock (these objects plus testclock.c) replaces them; no
 * setting or environment variable reaches them in the flakewire binary.
 */
__attribute__((weak)) int fw_testclock_init(struct fw_app *app)
{
	(void)app;
	return 0;
}

__attribute__((weak)) void fw_testclock_poll(struct fw_app *app)
{
	(void)app;
}

__attribute__((weak)) uint64_t fw_testclock_ns(uint64_t ns)
{
	return ns;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The clock model against a simulated TSC and a simulated system clock: the
 * TSC ticks at a known true rate, the wall clock is true time plus an offset
 * the test controls (ahead, behind, drifting, stepped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_clock.h"
#include "fw_err.h"

__extension__ typedef unsigned __int128 u128;

#define NS_PER_S  1000000000ULL
#define NS_PER_MS 1000000ULL
#define NS_PER_US 1000ULL
#define EPOCH_NS  (1767225600ULL * NS_PER_S)

#define NOMINAL_HZ 2100000000ULL

struct sim {
	uint64_t hz;   /* true TSC rate */
	uint64_t tsc0; /* TSC at true time 0 */
	int64_t off;   /* wall - true, ns */
	uint64_t rng;
};

static uint64_t sim_tsc(const struct sim *s, uint64_t t)
{
	return s->tsc0 + (uint64_t)((u128)t * s->hz / NS_PER_S);
}

static uint64_t sim_wall(const struct sim *s, uint64_t t)
{
	return EPOCH_NS + t + (uint64_t)s->off;
}

/* Deterministic sampling noise in [-amp, amp] ns. */
static int64_t sim_noise(struct sim *s, int64_t amp)
{
	s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (int64_t)((s->rng >> 33) % (uint64_t)(2 * amp + 1)) - amp;
}

static double ppm_off(double got, double want)
{
	return (got - want) / want * 1e6;
}

static double nominal_hz(const struct fw_clock_cal *cal)
{
	struct fw_clock_cal c = *cal;

	c.mult = c.nominal_mult;
	return fw_clock_hz(&c);
}

/* Every reading an lcore could make, in TSC order, must not go backwards. */
struct reader {
	uint64_t last_tsc;
	uint64_t last_ns;
	uint64_t reads;
};

static void reader_check(struct reader *r, const struct fw_clock_cal *cal, uint64_t tsc)
{
	uint64_t ns = fw_clock_ns(cal, tsc);

	assert_true(tsc >= r->last_tsc);
	if (ns < r->last_ns)
		fail_msg("time went back at tsc %llu: %llu < %llu", (unsigned long long)tsc,
			 (unsigned long long)ns, (unsigned long long)r->last_ns);
	r->last_tsc = tsc;
	r->last_ns = ns;
	r->reads++;
}

/* Reads at many points from @from up to (excluding) @to. */
static void reader_sweep(struct reader *r, const struct fw_clock_cal *cal, uint64_t from,
			 uint64_t to)
{
	uint64_t span = to - from;

	for (uint64_t i = 0; i < 256; i++)
		reader_check(r, cal, from + span * i / 256);
	reader_check(r, cal, to - 1);
}

static void assert_slew_bounded(const struct fw_clock_cal *cal, const struct fw_clock_policy *p)
{
	uint64_t diff = cal->mult > cal->nominal_mult ? cal->mult - cal->nominal_mult
						      : cal->nominal_mult - cal->mult;

	assert_true((u128)diff * 1000000 <= (u128)p->max_slew_ppm * cal->nominal_mult);
	assert_true(llabs(cal->slew_ppb) <= (long long)p->max_slew_ppm * 1000);
}

/*
 * Re-anchors once at true time @t: checks continuity at the sample and the
 * slew bound, and reads across the interval up to @t_next.
 */
static void step_anchor(struct sim *s, struct fw_clock_cal *cal, const struct fw_clock_policy *p,
			struct reader *r, uint64_t t, uint64_t t_next)
{
	uint64_t tsc = sim_tsc(s, t);
	uint64_t before = fw_clock_ns(cal, tsc);
	uint64_t gen = cal->generation;

	assert_int_equal(fw_clock_reanchor(cal, p, tsc, sim_wall(s, t), cal), 0);
	assert_int_equal(cal->generation, gen + 1);
	if (!(cal->flags & FW_CLOCK_F_FWD_STEP))
		assert_int_equal(fw_clock_ns(cal, tsc), before);
	else
		assert_true(fw_clock_ns(cal, tsc) > before);
	assert_slew_bounded(cal, p);
	reader_sweep(r, cal, tsc, sim_tsc(s, t_next));
}

/* A calibration at the true rate after @secs seconds of exact anchors. */
static void settle(struct sim *s, struct fw_clock_cal *cal, const struct fw_clock_policy *p,
		   struct reader *r, uint64_t *t, unsigned secs)
{
	assert_int_equal(fw_clock_calibrate(cal, sim_tsc(s, *t), sim_wall(s, *t),
					    sim_tsc(s, *t + NS_PER_S), sim_wall(s, *t + NS_PER_S)),
			 0);
	*t += NS_PER_S;
	for (unsigned i = 0; i < secs; i++, *t += NS_PER_S)
		step_anchor(s, cal, p, r, *t, *t + NS_PER_S);
}

static void test_policy_default(void **state)
{
	struct fw_clock_policy p;

	(void)state;
	fw_clock_policy_default(&p);
	assert_int_equal(p.max_slew_ppm, 500);
	assert_int_equal(p.horizon_ms, 1000);
	assert_int_equal(p.step_ns, 100 * NS_PER_MS);
}

/* The VM case of DESIGN.md: rte_get_tsc_hz() says 2.1 GHz, the TSC runs at 2.096028 GHz. */
static void test_calibrate_recovers_rate(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 123456789ULL, .rng = 1};
	struct fw_clock_cal nominal, cal;
	int64_t n0, n1;

	(void)state;
	assert_int_equal(fw_clock_from_hz(&nominal, NOMINAL_HZ, sim_tsc(&s, 0), EPOCH_NS), 0);
	assert_true(ppm_off(fw_clock_hz(&nominal), (double)s.hz) > 1800);

	/* 1 s apart with up to 0.5 µs error on each sample: 1 ppm at worst. */
	n0 = sim_noise(&s, 500);
	n1 = sim_noise(&s, 500);
	assert_int_equal(fw_clock_calibrate(&cal, sim_tsc(&s, 0), EPOCH_NS + (uint64_t)(1000 + n0),
					    sim_tsc(&s, NS_PER_S),
					    EPOCH_NS + NS_PER_S + (uint64_t)(1000 + n1)),
			 0);
	print_message("calibrated %.1f Hz, %.3f ppm off (nominal was %.1f ppm off)\n",
		      fw_clock_hz(&cal), ppm_off(fw_clock_hz(&cal), (double)s.hz),
		      ppm_off(fw_clock_hz(&nominal), (double)s.hz));
	assert_true(fabs(ppm_off(fw_clock_hz(&cal), (double)s.hz)) < 2);
	assert_int_equal(cal.mult, cal.nominal_mult);
	assert_int_equal(cal.base_tsc, sim_tsc(&s, NS_PER_S));
	assert_int_equal(cal.base_ns, EPOCH_NS + NS_PER_S + (uint64_t)(1000 + n1));

	/* 100 ms without noise: only the tick rounding remains. */
	assert_int_equal(fw_clock_calibrate(&cal, sim_tsc(&s, 0), EPOCH_NS,
					    sim_tsc(&s, 100 * NS_PER_MS),
					    EPOCH_NS + 100 * NS_PER_MS),
			 0);
	assert_true(fabs(ppm_off(fw_clock_hz(&cal), (double)s.hz)) < 0.1);
	/* One second later the converted time is within 1 µs of the truth. */
	assert_true(llabs((long long)(fw_clock_ns(&cal, sim_tsc(&s, 1100 * NS_PER_MS)) -
				      (EPOCH_NS + 1100 * NS_PER_MS))) < 1000);
}

static void test_bad_samples(void **state)
{
	struct fw_clock_cal cal, out, keep;
	struct fw_clock_policy p;

	(void)state;
	fw_clock_policy_default(&p);
	assert_int_equal(fw_clock_calibrate(&cal, 1000, EPOCH_NS, 1000, EPOCH_NS + 1), FW_ECAL);
	assert_int_equal(fw_clock_calibrate(&cal, 1000, EPOCH_NS, 999, EPOCH_NS + 1), FW_ECAL);
	assert_int_equal(fw_clock_calibrate(&cal, 1000, EPOCH_NS, 2000, EPOCH_NS), FW_ECAL);
	assert_int_equal(fw_clock_calibrate(&cal, 1000, EPOCH_NS, 2000, EPOCH_NS - 1), FW_ECAL);
	assert_int_equal(fw_clock_from_hz(&cal, 0, 1000, EPOCH_NS), FW_ECAL);

	assert_int_equal(fw_clock_from_hz(&cal, NOMINAL_HZ, 1000000, EPOCH_NS), 0);
	memset(&out, 0xa5, sizeof(out));
	keep = out;
	assert_int_equal(fw_clock_reanchor(&cal, &p, 999999, EPOCH_NS, &out), FW_ECAL);
	assert_memory_equal(&out, &keep, sizeof(out));
	/* Re-anchoring exactly at the base is fine. */
	assert_int_equal(fw_clock_reanchor(&cal, &p, 1000000, EPOCH_NS, &out), 0);
	assert_int_equal(out.base_ns, EPOCH_NS);
	assert_int_equal(out.flags, 0);
}

static void test_conversion_monotonic(void **state)
{
	struct fw_clock_cal cal;
	uint64_t base = 5000000000ULL, prev_ns, prev_ms;

	(void)state;
	assert_int_equal(fw_clock_from_hz(&cal, 2096028000ULL, base, EPOCH_NS), 0);
	assert_int_equal(fw_clock_ns(&cal, base), EPOCH_NS);
	assert_int_equal(fw_clock_ms(&cal, base), EPOCH_NS / NS_PER_MS);

	/* Single ticks, then growing strides, before and after the base. */
	prev_ns = fw_clock_ns(&cal, base - 4000000);
	prev_ms = fw_clock_ms(&cal, base - 4000000);
	for (uint64_t tsc = base - 4000000, d = 1; tsc < base + 400000000000ULL; tsc += d) {
		uint64_t ns = fw_clock_ns(&cal, tsc), ms = fw_clock_ms(&cal, tsc);

		assert_true(ns >= prev_ns);
		assert_true(ms >= prev_ms);
		prev_ns = ns;
		prev_ms = ms;
		if (tsc > base + 100000)
			d = d * 2 + 1 < 1000000000 ? d * 2 + 1 : 1000000000;
	}
	/* Extrapolating backwards mirrors forwards. */
	assert_int_equal(EPOCH_NS - fw_clock_ns(&cal, base - 2096028000ULL),
			 fw_clock_ns(&cal, base + 2096028000ULL) - EPOCH_NS);
	/* ~1 s of ticks is ~1 s of time. */
	assert_true(llabs((long long)(fw_clock_ns(&cal, base + 2096028000ULL) - EPOCH_NS -
				      NS_PER_S)) <= 1);
}

/*
 * Many re-anchors while the system clock is ahead, behind, drifting and
 * stepped: every anchor is continuous, the slew stays bounded and no read in
 * TSC order ever goes backwards.
 */
static void test_reanchor_never_backwards(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 77777ULL, .rng = 42};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0, dt, next = NS_PER_S;
	int32_t max_slew = 0, min_slew = 0;
	unsigned fwd = 0, back = 0;

	(void)state;
	fw_clock_policy_default(&p);
	assert_int_equal(fw_clock_from_hz(&cal, NOMINAL_HZ, sim_tsc(&s, 0), sim_wall(&s, 0)), 0);
	reader_sweep(&r, &cal, sim_tsc(&s, 0), sim_tsc(&s, next));

	for (unsigned k = 1; k <= 400; k++) {
		/* Control-thread jitter: anchors 0.8 to 1.2 s apart. */
		dt = next;
		next = NS_PER_S + (uint64_t)(sim_noise(&s, 200) * (int64_t)NS_PER_US);

		if (k == 40)
			s.off += 5 * NS_PER_MS; /* ahead */
		else if (k == 60)
			s.off -= 12 * NS_PER_MS; /* behind */
		else if (k >= 80 && k < 140)
			s.off += (int64_t)dt * 300 / 1000000; /* drifting fast, 300 ppm */
		else if (k >= 140 && k < 200)
			s.off -= (int64_t)dt * 700 / 1000000; /* drifting slow, 700 ppm */
		else if (k == 220)
			s.off -= 50 * NS_PER_MS; /* behind, below the step bound */
		else if (k == 260)
			s.off += 150 * NS_PER_MS; /* forward step */
		else if (k == 300)
			s.off -= (int64_t)NS_PER_S; /* backward step */
		s.off += sim_noise(&s, 2000);

		step_anchor(&s, &cal, &p, &r, t + dt, t + dt + next);
		t += dt;
		max_slew = cal.slew_ppb > max_slew ? cal.slew_ppb : max_slew;
		min_slew = cal.slew_ppb < min_slew ? cal.slew_ppb : min_slew;
		fwd += !!(cal.flags & FW_CLOCK_F_FWD_STEP);
		back += !!(cal.flags & FW_CLOCK_F_BACK_STEP);
		if (cal.flags & FW_CLOCK_F_FWD_STEP)
			assert_int_equal(cal.slew_ppb, 0);
		assert_int_equal(!!(cal.flags & FW_CLOCK_F_SLEWING), cal.slew_ppb != 0);
	}
	print_message("%llu reads, slew %d..%d ppb, %u forward steps, %u back-step anchors\n",
		      (unsigned long long)r.reads, min_slew, max_slew, fwd, back);
	assert_int_equal(max_slew, 500000);
	assert_int_equal(min_slew, -500000);
	assert_int_equal(fwd, 1);
	assert_true(back > 0);
}

/*
 * Number of 1 s re-anchors until |offset| < 50 µs after the wall clock moves
 * by @off_ns, @secs seconds after calibration.
 */
static unsigned converge(int64_t off_ns, unsigned secs, int64_t *second)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 1ULL << 40};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0;
	unsigned n;

	fw_clock_policy_default(&p);
	settle(&s, &cal, &p, &r, &t, secs);
	assert_true(llabs(cal.offset_ns) < 10);

	s.off += off_ns;
	for (n = 1; n < 10000; n++, t += NS_PER_S) {
		step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
		assert_int_equal(cal.flags & FW_CLOCK_F_FWD_STEP, 0);
		if (n == 2)
			*second = cal.offset_ns;
		if (llabs(cal.offset_ns) < 50 * (long long)NS_PER_US)
			return n;
	}
	fail();
	return 0;
}

/*
 * 500 ppm removes at most 0.5 ms per second: a 1 ms offset is measured at the
 * first anchor, half gone at the second and gone at the third.
 */
static void test_offset_converges(void **state)
{
	int64_t second;
	unsigned n;

	(void)state;
	n = converge((int64_t)NS_PER_MS, 60, &second);
	print_message("+1 ms: |offset| < 50 us after %u re-anchors (%u s of slewing), offset at "
		      "2nd anchor %lld ns\n",
		      n, n - 1, (long long)second);
	assert_int_equal(n, 3);
	/* The bound was binding: one second of slew removed no more than ~0.5 ms. */
	assert_true(second >= 450 * (int64_t)NS_PER_US && second <= 550 * (int64_t)NS_PER_US);

	n = converge(-(int64_t)NS_PER_MS, 60, &second);
	print_message("-1 ms: |offset| < 50 us after %u re-anchors, offset at 2nd anchor %lld ns\n",
		      n, (long long)second);
	assert_int_equal(n, 3);
	assert_true(second <= -450 * (int64_t)NS_PER_US && second >= -550 * (int64_t)NS_PER_US);

	/*
	 * 10 ms / 500 ppm = 20 s of slewing. The rate window sees the offset as
	 * rate error diluted over its length, so give it an hour of history.
	 */
	n = converge(10 * (int64_t)NS_PER_MS, 3600, &second);
	print_message("+10 ms: |offset| < 50 us after %u re-anchors\n", n);
	assert_true(n >= 21 && n <= 23);
}

static void test_forward_step(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 999ULL};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0, tsc;

	(void)state;
	fw_clock_policy_default(&p);
	settle(&s, &cal, &p, &r, &t, 30);

	s.off += 3600 * (int64_t)NS_PER_S;
	tsc = sim_tsc(&s, t);
	step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
	t += NS_PER_S;
	assert_true(cal.flags & FW_CLOCK_F_FWD_STEP);
	assert_false(cal.flags & FW_CLOCK_F_BACK_STEP);
	assert_int_equal(fw_clock_ns(&cal, tsc), sim_wall(&s, t - NS_PER_S));
	assert_true(cal.offset_ns > 3599 * (int64_t)NS_PER_S);

	/* The next anchor sees no offset and the rate estimate survived the step. */
	step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
	assert_int_equal(cal.flags & (FW_CLOCK_F_FWD_STEP | FW_CLOCK_F_BACK_STEP), 0);
	assert_true(llabs(cal.offset_ns) < 10);
	assert_true(fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 0.1);
}

/*
 * The system clock steps back 1 s: flakewire keeps counting forward, slews at
 * the bound, reports the step until the offset is under step_ns, and never
 * reads backwards.
 */
static void test_backward_step(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 31337ULL};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0, tsc, before;
	unsigned n, cleared = 0, converged = 0;

	(void)state;
	fw_clock_policy_default(&p);
	settle(&s, &cal, &p, &r, &t, 30);

	s.off -= (int64_t)NS_PER_S;
	tsc = sim_tsc(&s, t);
	before = fw_clock_ns(&cal, tsc);
	step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
	t += NS_PER_S;
	assert_true(cal.flags & FW_CLOCK_F_BACK_STEP);
	assert_false(cal.flags & FW_CLOCK_F_FWD_STEP);
	assert_true(cal.flags & FW_CLOCK_F_SLEWING);
	assert_int_equal(fw_clock_ns(&cal, tsc), before);
	assert_int_equal(cal.slew_ppb, -500000);
	assert_true(cal.offset_ns < -999 * (int64_t)NS_PER_MS);

	for (n = 2; n < 2500; n++, t += NS_PER_S) {
		step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
		assert_false(cal.flags & FW_CLOCK_F_FWD_STEP);
		if (!cleared && !(cal.flags & FW_CLOCK_F_BACK_STEP))
			cleared = n;
		if (cleared)
			assert_false(cal.flags & FW_CLOCK_F_BACK_STEP);
		if (llabs(cal.offset_ns) < 50 * (long long)NS_PER_US) {
			converged = n;
			break;
		}
	}
	print_message("-1 s: back-step flag cleared after %u re-anchors, |offset| < 50 us after "
		      "%u, nominal %.3f ppm off\n",
		      cleared, converged, ppm_off(nominal_hz(&cal), (double)s.hz));
	/* (1 s - 100 ms) / 500 ppm = 1800 s; 1 s / 500 ppm = 2000 s. */
	assert_true(cleared >= 1800 && cleared <= 1803);
	assert_true(converged >= 2000 && converged <= 2003);
	assert_true(fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 0.1);
}

/* rte_get_tsc_hz() 2,000 ppm high: the first anchors measure the true rate. */
static void test_off_nominal_corrected(void **state)
{
	struct sim s = {.hz = NOMINAL_HZ - NOMINAL_HZ / 500, .tsc0 = 4242ULL, .rng = 7};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0;
	int64_t first = 0, worst = 0;

	(void)state;
	fw_clock_policy_default(&p);
	assert_int_equal(fw_clock_from_hz(&cal, NOMINAL_HZ, sim_tsc(&s, 0), sim_wall(&s, 0)), 0);
	for (unsigned k = 1; k <= 200; k++) {
		t += NS_PER_S;
		s.off = sim_noise(&s, 1000);
		step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
		assert_int_equal(cal.flags & (FW_CLOCK_F_FWD_STEP | FW_CLOCK_F_BACK_STEP), 0);
		if (k == 1)
			first = cal.offset_ns;
		if (k > 10)
			worst = llabs(cal.offset_ns) > worst ? llabs(cal.offset_ns) : worst;
	}
	print_message("2000 ppm off: offset %lld ns at first anchor, worst |offset| after 10 s "
		      "%lld ns, nominal %.3f ppm off\n",
		      (long long)first, (long long)worst, ppm_off(nominal_hz(&cal), (double)s.hz));
	/* Uncorrected, 2,000 ppm is 2 ms per second. */
	assert_true(first > 1900 * (int64_t)NS_PER_US);
	assert_true(worst < 50 * (int64_t)NS_PER_US);
	assert_true(fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 1);
	assert_true(fabs(ppm_off(fw_clock_hz(&cal), (double)s.hz)) < 10);
}

/* A small step soon after start is a step, not a rate error. */
static void test_small_early_step_spares_rate(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 99ULL, .rng = 11};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 500 * NS_PER_MS;

	(void)state;
	fw_clock_policy_default(&p);
	assert_int_equal(fw_clock_calibrate(&cal, sim_tsc(&s, 0), sim_wall(&s, 0), sim_tsc(&s, t),
					    sim_wall(&s, t)),
			 0);
	int64_t base = 0;
	for (unsigned k = 1; k <= 60; k++, t += NS_PER_S) {
		if (k == 3)
			base = -3 * (int64_t)NS_PER_MS; /* NTP steps the system clock back 3 ms */
		s.off = base + sim_noise(&s, 1000);
		step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
		assert_true(fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 10.0);
	}
	print_message("3 ms step at 2.5 s: nominal %.3f ppm off afterwards\n",
		      ppm_off(nominal_hz(&cal), (double)s.hz));
}

/* After hours of uptime the rate window stays bounded: a new rate is followed. */
static void test_rate_change_after_long_uptime(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 5ULL, .rng = 13};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 500 * NS_PER_MS;
	unsigned followed = 0;

	(void)state;
	fw_clock_policy_default(&p);
	assert_int_equal(fw_clock_calibrate(&cal, sim_tsc(&s, 0), sim_wall(&s, 0), sim_tsc(&s, t),
					    sim_wall(&s, t)),
			 0);
	/* Three hours of 10 s anchors at one rate. */
	for (unsigned k = 0; k < 1080; k++, t += 10 * NS_PER_S) {
		s.off = sim_noise(&s, 1000);
		step_anchor(&s, &cal, &p, &r, t, t + 10 * NS_PER_S);
	}
	/* The TSC slows by 30 ppm (too little per anchor to look like a step). */
	uint64_t tsc_now = sim_tsc(&s, t);
	s.hz -= s.hz * 30 / 1000000;
	s.tsc0 = tsc_now - (uint64_t)((u128)t * s.hz / NS_PER_S);
	for (unsigned k = 1; k <= 360; k++, t += 10 * NS_PER_S) {
		s.off = sim_noise(&s, 1000);
		step_anchor(&s, &cal, &p, &r, t, t + 10 * NS_PER_S);
		if (!followed && fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 3.0)
			followed = k;
	}
	print_message("30 ppm rate change after 3 h: nominal within 3 ppm after %u s\n",
		      followed * 10);
	/* The window is 10 to 20 min long: the new rate dominates within ~25 min. */
	assert_true(followed > 0 && followed * 10 <= 25 * 60);
}

/* From true time @t on, the TSC runs at @hz (continuous at @t). */
static void sim_set_hz(struct sim *s, uint64_t t, uint64_t hz)
{
	uint64_t tsc_now = sim_tsc(s, t);

	s->hz = hz;
	s->tsc0 = tsc_now - (uint64_t)((u128)t * s->hz / NS_PER_S);
}

/*
 * The TSC rate changes by @ppm (50 % fast, 30 % slow: more than step_ms per
 * re-anchor): two intervals in a row at the new rate teach it within a few
 * re-anchors, and no reading ever goes back meanwhile (step_anchor sweeps).
 */
static void check_rate_change(int64_t ppm)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 77ULL, .rng = 17};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0;
	unsigned learnt = 0;

	fw_clock_policy_default(&p);
	settle(&s, &cal, &p, &r, &t, 10);
	sim_set_hz(&s, t, (uint64_t)((int64_t)s.hz + (int64_t)s.hz / 1000000 * ppm));
	for (unsigned k = 1; k <= 30; k++, t += NS_PER_S) {
		s.off = sim_noise(&s, 1000);
		step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
		if (!learnt && fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 10.0)
			learnt = k;
		if (learnt)
			assert_true(fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 10.0);
	}
	print_message("TSC %+lld ppm: nominal within 10 ppm after %u re-anchors\n", (long long)ppm,
		      learnt);
	assert_true(learnt > 0 && learnt <= 3);
}

static void test_rate_change_any_size(void **state)
{
	(void)state;
	check_rate_change(500000);
	check_rate_change(-300000);
	check_rate_change(120000); /* just past what one re-anchor's step_ms allows */
}

/*
 * A step followed by an interval at the old rate is a step: the rate is
 * kept, even right after a window restart (the candidate interval is the
 * step's, the next one disagrees with it).
 */
static void test_steps_not_taken_for_rate(void **state)
{
	struct sim s = {.hz = 2096028000ULL, .tsc0 = 5ULL, .rng = 19};
	struct fw_clock_policy p;
	struct fw_clock_cal cal;
	struct reader r = {0};
	uint64_t t = 0;

	(void)state;
	fw_clock_policy_default(&p);
	settle(&s, &cal, &p, &r, &t, 10);
	int64_t steps[] = {-300, +500, -300, +200}; /* ms, one re-anchor apart, then none */
	for (unsigned k = 0; k < 40; k++, t += NS_PER_S) {
		if (k < 4)
			s.off += steps[k] * (int64_t)NS_PER_MS;
		step_anchor(&s, &cal, &p, &r, t, t + NS_PER_S);
		if (k >= 5)
			assert_true(fabs(ppm_off(nominal_hz(&cal), (double)s.hz)) < 10.0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_default),
		cmocka_unit_test(test_calibrate_recovers_rate),
		cmocka_unit_test(test_bad_samples),
		cmocka_unit_test(test_conversion_monotonic),
		cmocka_unit_test(test_reanchor_never_backwards),
		cmocka_unit_test(test_offset_converges),
		cmocka_unit_test(test_forward_step),
		cmocka_unit_test(test_backward_step),
		cmocka_unit_test(test_off_nominal_corrected),
		cmocka_unit_test(test_small_early_step_spares_rate),
		cmocka_unit_test(test_rate_change_after_long_uptime),
		cmocka_unit_test(test_rate_change_any_size),
		cmocka_unit_test(test_steps_not_taken_for_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

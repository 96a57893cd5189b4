/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>
#include <stdint.h>

#include "fw_clock.h"
#include "fw_err.h"

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 s128;

#define NS_PER_S    1000000000ULL
#define PPB_PER_PPM 1000

/*
 * A slew of 100% or more would stop or reverse the clock; the rate must stay
 * positive for the conversion to be monotonic.
 */
#define SLEW_PPM_LIMIT 999999u

void fw_clock_policy_default(struct fw_clock_policy *p)
{
	p->max_slew_ppm = FW_CLOCK_DEFAULT_MAX_SLEW_PPM;
	p->horizon_ms = FW_CLOCK_DEFAULT_HORIZON_MS;
	p->step_ns = FW_CLOCK_DEFAULT_STEP_NS;
}

/* ns per tick in 32.32 fixed point, or 0 when it does not fit 64 bits. */
static uint64_t rate_mult(uint64_t dns, uint64_t dtsc)
{
	u128 m = ((u128)dns << 32) / dtsc;

	if (m > UINT64_MAX)
		return 0;
	return (uint64_t)m;
}

static void anchor(struct fw_clock_cal *cal, uint64_t mult, uint64_t ref_tsc, uint64_t ref_ns,
		   uint64_t tsc, uint64_t ns)
{
	*cal = (struct fw_clock_cal){
		.base_tsc = tsc,
		.base_ns = ns,
		.mult = mult,
		.nominal_mult = mult,
		.ref_tsc = ref_tsc,
		.ref_ns = ref_ns,
	};
}

int fw_clock_calibrate(struct fw_clock_cal *cal, uint64_t tsc0, uint64_t ns0, uint64_t tsc1,
		       uint64_t ns1)
{
	uint64_t mult;

	if (tsc1 <= tsc0 || ns1 <= ns0)
		return FW_ECAL;
	mult = rate_mult(ns1 - ns0, tsc1 - tsc0);
	if (mult == 0)
		return FW_ECAL;
	/* The first sample starts the long window: it is a true wall reading too. */
	anchor(cal, mult, tsc0, ns0, tsc1, ns1);
	return 0;
}

int fw_clock_from_hz(struct fw_clock_cal *cal, uint64_t hz, uint64_t tsc, uint64_t ns)
{
	uint64_t mult;

	if (hz == 0)
		return FW_ECAL;
	mult = rate_mult(NS_PER_S, hz);
	if (mult == 0)
		return FW_ECAL;
	anchor(cal, mult, tsc, ns, tsc, ns);
	return 0;
}

static uint64_t ticks_to_ns(uint64_t ticks, uint64_t mult)
{
	return (uint64_t)(((u128)ticks * mult) >> 32);
}

static uint64_t abs64(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

/* Rate change that removes @offset over the horizon, within the bound. */
static int32_t slew_for(int64_t offset, const struct fw_clock_policy *p)
{
	int64_t bound = (int64_t)FW_MIN(p->max_slew_ppm, SLEW_PPM_LIMIT) * PPB_PER_PPM;
	s128 ppb;

	/* No horizon means "as fast as allowed". */
	if (p->horizon_ms == 0)
		ppb = offset > 0 ? bound : (offset < 0 ? -bound : 0);
	else
		ppb = (s128)offset * (NS_PER_S / 1000000) / p->horizon_ms;
	if (ppb > bound)
		ppb = bound;
	if (ppb < -bound)
		ppb = -bound;
	return (int32_t)ppb;
}

/*
 * Sets n->mult and n->flags for an @offset (wall - converted at n->base_tsc):
 * a forward offset beyond step_ns steps to @wall_ns (forward can never
 * repeat an ID); anything else is slewed within the bound, a backward one
 * beyond step_ns flagged FW_CLOCK_F_BACK_STEP.
 */
static void apply_offset(struct fw_clock_cal *n, const struct fw_clock_policy *p, int64_t offset,
			 uint64_t wall_ns)
{
	s128 m;

	if (offset > 0 && (uint64_t)offset > p->step_ns) {
		n->base_ns = wall_ns;
		n->mult = n->nominal_mult;
		n->flags = FW_CLOCK_F_FWD_STEP;
		return;
	}
	if (offset < 0 && abs64(offset) > p->step_ns)
		n->flags |= FW_CLOCK_F_BACK_STEP;

	n->slew_ppb = slew_for(offset, p);
	/* Truncation toward zero keeps the applied slew within the bound. */
	m = (s128)n->nominal_mult + (s128)n->nominal_mult * n->slew_ppb / (s128)NS_PER_S;
	n->mult = m > 0 ? (uint64_t)m : 1;
	if (n->slew_ppb != 0)
		n->flags |= FW_CLOCK_F_SLEWING;
}

/*
 * True when the interval (t1, w1) -> (t2, w2) moved the system clock at the
 * rate of (t0, w0) -> (t1, w1), within @tol plus 500 ppm of its length.
 */
static bool same_rate(uint64_t t0, uint64_t w0, uint64_t t1, uint64_t w1, uint64_t t2, uint64_t w2,
		      uint64_t tol)
{
	if (t1 <= t0 || w1 <= w0 || t2 <= t1 || w2 <= w1)
		return false;
	uint64_t want = (uint64_t)((u128)(t2 - t1) * (w1 - w0) / (t1 - t0));
	uint64_t got = w2 - w1;
	uint64_t d = got > want ? got - want : want - got;

	return d <= tol + got / 2000;
}

int fw_clock_reanchor(const struct fw_clock_cal *old, const struct fw_clock_policy *p, uint64_t tsc,
		      uint64_t wall_ns, struct fw_clock_cal *out)
{
	struct fw_clock_cal n;
	uint64_t conv, last_wall, expect, mult;
	int64_t offset, jump;

	if (tsc < old->base_tsc)
		return FW_ECAL;

	conv = fw_clock_ns(old, tsc);
	offset = (int64_t)(wall_ns - conv);

	/*
	 * A step of the system clock is told apart from rate error by how far
	 * the wall clock moved since the last sample compared with what the
	 * nominal rate predicts. A stepped anchor's base_ns is the wall sample.
	 */
	last_wall = old->base_ns;
	if (!(old->flags & FW_CLOCK_F_FWD_STEP))
		last_wall += (uint64_t)old->offset_ns;
	expect = last_wall + ticks_to_ns(tsc - old->base_tsc, old->nominal_mult);
	jump = (int64_t)(wall_ns - expect);

	n = *old;
	n.base_tsc = tsc;
	n.base_ns = conv;
	n.offset_ns = offset;
	n.slew_ppb = 0;
	n.flags = 0;
	n.generation = old->generation + 1;

	/*
	 * A window that starts at the previous anchor holds one interval: its
	 * rate is the best estimate there is (a 2,000 ppm error of the nominal
	 * rate shows as a 2 ms jump per second, which must update the rate, not
	 * restart the window again). Older windows restart on any jump above
	 * the reset bound, so a step is never averaged into the rate.
	 */
	bool fresh = old->ref_tsc == old->base_tsc;
	uint64_t tight = FW_MIN(p->step_ns, FW_CLOCK_RATE_RESET_NS);
	uint64_t reset = fresh ? p->step_ns : tight;

	if (abs64(jump) > reset && fresh && old->mid_ns != 0 &&
	    same_rate(old->mid_tsc, old->mid_ns, old->ref_tsc, old->ref_ns, tsc, wall_ns, tight)) {
		/*
		 * Two intervals in a row moved the system clock by the same rate,
		 * off the nominal one: that is the tick rate, not a step (a step
		 * happens once). Without this a rate more than step_ns per
		 * re-anchor off (11 % at 1 s and 100 ms) was never learnt.
		 */
		mult = rate_mult(wall_ns - old->mid_ns, tsc - old->mid_tsc);
		if (mult != 0)
			n.nominal_mult = mult;
		n.ref_tsc = old->mid_tsc;
		n.ref_ns = old->mid_ns;
		n.mid_tsc = 0;
		n.mid_ns = 0;
	} else if (abs64(jump) > reset) {
		/*
		 * The window spans a step: it would measure the step, not the
		 * rate. The interval that ended here is kept as a candidate: if
		 * the next one has its rate, the rate changed (above).
		 */
		n.ref_tsc = tsc;
		n.ref_ns = wall_ns;
		n.mid_tsc = old->base_tsc;
		n.mid_ns = last_wall;
	} else if (tsc > n.ref_tsc && wall_ns > n.ref_ns) {
		if (fresh) { /* no rate change after all: drop the candidate */
			n.mid_tsc = 0;
			n.mid_ns = 0;
		}
		mult = rate_mult(wall_ns - n.ref_ns, tsc - n.ref_tsc);
		if (mult != 0)
			n.nominal_mult = mult;
		/* Keep the window between one and two window lengths long. */
		if (n.mid_ns == 0 && wall_ns - n.ref_ns >= FW_CLOCK_RATE_WINDOW_NS) {
			n.mid_tsc = tsc;
			n.mid_ns = wall_ns;
		} else if (n.mid_ns != 0 && wall_ns > n.mid_ns &&
			   wall_ns - n.mid_ns >= FW_CLOCK_RATE_WINDOW_NS) {
			n.ref_tsc = n.mid_tsc;
			n.ref_ns = n.mid_ns;
			n.mid_tsc = tsc;
			n.mid_ns = wall_ns;
		}
	}

	apply_offset(&n, p, offset, wall_ns);
	*out = n;
	return 0;
}

int fw_clock_rebase(const struct fw_clock_cal *old, const struct fw_clock_policy *p, uint64_t tsc,
		    uint64_t wall_ns, uint64_t cont_ns, struct fw_clock_cal *out)
{
	struct fw_clock_cal n = *old;
	int64_t offset = (int64_t)(wall_ns - cont_ns);

	n.base_tsc = tsc;
	n.base_ns = cont_ns;
	n.ref_tsc = tsc; /* the ticks before this point are another count */
	n.ref_ns = wall_ns;
	n.mid_tsc = 0;
	n.mid_ns = 0;
	n.offset_ns = offset;
	n.slew_ppb = 0;
	n.flags = 0;
	n.generation = old->generation + 1;
	apply_offset(&n, p, offset, wall_ns);
	*out = n;
	return 0;
}

double fw_clock_hz(const struct fw_clock_cal *cal)
{
	if (cal->mult == 0)
		return 0.0;
	return (double)NS_PER_S * 4294967296.0 / (double)cal->mult;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The clock model: converts CPU timestamp-counter ticks to wall-clock time
 * with a calibration, and re-anchors that calibration against the system
 * clock by slewing. Pure math: callers read the TSC and the system clock and
 * pass the samples in, so every behaviour is testable with fake inputs.
 *
 * Conversion:  ns(tsc) = base_ns + ((tsc - base_tsc) * mult) >> 32
 * where mult is nanoseconds per tick in 32.32 fixed point. One multiply and
 * one shift; fw_clock_ms() adds a division by 10^6.
 *
 * Re-anchoring (fw_clock_reanchor): given a sample (tsc, wall_ns), the new
 * calibration starts where the old one is at that tsc, so the converted time
 * is continuous and, since the rate stays positive, never goes backwards for
 * any tsc at or after the sample. The offset (wall - converted) is removed by
 * changing the rate by at most max_slew_ppm:
 *  - |offset| / horizon, clamped to max_slew_ppm, is the slew applied until
 *    the next re-anchor;
 *  - an offset O therefore takes at least O / max_slew_ppm to remove: with the
 *    default 500 ppm, 1 ms takes 2 s, 100 ms takes 200 s;
 *  - a forward offset above step_ns (the system clock jumped ahead) is applied
 *    as a forward step: time moves forward, which can never repeat an ID;
 *  - a backward offset is only ever slewed, never stepped: the converted
 *    time never moves backwards. Offsets above step_ns are reported through
 *    FW_CLOCK_F_BACK_STEP so the owner can refuse to issue.
 * The nominal rate (without slew) is re-estimated at every anchor over a
 * window of FW_CLOCK_RATE_WINDOW_NS to twice that (older samples are
 * dropped, so a change of the true rate is followed within minutes), so the
 * error of rte_get_tsc_hz() (~1,900 ppm on a VM) is measured away. When the
 * system clock moves by more than FW_CLOCK_RATE_RESET_NS against what the
 * nominal rate predicts since the last anchor, that is a step (or a rate
 * change), not noise: the window restarts at this sample, so a step never
 * leaks into the rate estimate; the next anchor measures the rate afresh
 * over the new, short window. A jump larger than step_ns in that short
 * window is a step again, unless the interval before it moved the system
 * clock at the same rate: two intervals in a row at one rate are the tick
 * rate (a step happens once), so any tick rate is learnt within about three
 * re-anchors of a change, however far it is off.
 *
 * Sharing: a calibration is a plain value; the responder publishes it to its
 * lcores with a sequence lock (see the responder's clock publisher).
 *
 * Manual: doc/guarantees.md#how.
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"

#define FW_CLOCK_DEFAULT_MAX_SLEW_PPM 500
#define FW_CLOCK_DEFAULT_HORIZON_MS   1000
#define FW_CLOCK_DEFAULT_STEP_NS      (100ULL * 1000 * 1000) /* 100 ms */
/* Rate window: between this and twice this of samples behind each estimate. */
#define FW_CLOCK_RATE_WINDOW_NS       (600ULL * 1000 * 1000 * 1000) /* 10 min */
/* A move of the system clock this large against the nominal rate restarts the window. */
#define FW_CLOCK_RATE_RESET_NS        (500ULL * 1000) /* 500 µs */

/* Flags set by fw_clock_reanchor() in cal->flags. */
#define FW_CLOCK_F_FWD_STEP  0x1u /* stepped forward to follow the system clock */
#define FW_CLOCK_F_BACK_STEP 0x2u /* system clock is behind by more than step_ns */
#define FW_CLOCK_F_SLEWING   0x4u /* a non-zero slew is applied */

struct fw_clock_policy {
	uint32_t max_slew_ppm; /* bound on the rate change, default 500 */
	uint32_t horizon_ms;   /* remove the offset over this time, default 1000 */
	uint64_t step_ns;      /* offsets above this are steps, default 100 ms */
};

struct fw_clock_cal {
	uint64_t base_tsc;     /* tsc at the anchor */
	uint64_t base_ns;      /* unix ns at base_tsc, as converted (continuous) */
	uint64_t mult;         /* ns per tick, 32.32 fixed point, slew included */
	uint64_t nominal_mult; /* best estimate of the true rate, without slew */
	uint64_t ref_tsc;      /* start of the rate window */
	uint64_t ref_ns;
	uint64_t mid_tsc;    /* a later sample that becomes ref_tsc when the window is full */
	uint64_t mid_ns;     /* 0: none yet */
	int64_t offset_ns;   /* wall - converted at the last anchor */
	int32_t slew_ppb;    /* rate change applied, parts per billion */
	uint32_t flags;      /* FW_CLOCK_F_* from the last re-anchor */
	uint64_t generation; /* incremented by every re-anchor */
};

/* Fills *p with the defaults. */
FW_API void fw_clock_policy_default(struct fw_clock_policy *p);

/*
 * Calibrates from two samples of (tsc, unix ns) taken some time apart (the
 * longer, the better: 100 ms gives ~10 ppm with a 1 µs sampling error).
 * The calibration is anchored at the second sample.
 * Returns 0, or FW_ECAL when tsc1 <= tsc0 or ns1 <= ns0.
 */
FW_API int fw_clock_calibrate(struct fw_clock_cal *cal, uint64_t tsc0, uint64_t ns0, uint64_t tsc1,
			      uint64_t ns1);

/*
 * Builds a calibration from a nominal frequency (for example rte_get_tsc_hz())
 * anchored at (tsc, ns). Returns 0, or FW_ECAL when hz is 0.
 */
FW_API int fw_clock_from_hz(struct fw_clock_cal *cal, uint64_t hz, uint64_t tsc, uint64_t ns);

/*
 * Re-anchors: returns in *out a calibration continuous with *old at @tsc and
 * slewed toward @wall_ns as described above. *out may alias *old.
 * Returns 0, or FW_ECAL when @tsc is before old->base_tsc.
 */
FW_API int fw_clock_reanchor(const struct fw_clock_cal *old, const struct fw_clock_policy *p,
			     uint64_t tsc, uint64_t wall_ns, struct fw_clock_cal *out);

/*
 * Re-anchors after the tick source went back (a TSC reset by a resume or by
 * firmware) or was replaced: *out maps @tsc to @cont_ns, the time the owner
 * has reached so far (never go below it: IDs were issued up to it), keeps
 * the nominal rate, restarts the rate window at (@tsc, @wall_ns) (the ticks
 * before it count from another origin) and treats @wall_ns - @cont_ns as an
 * offset like fw_clock_reanchor: slewed, flagged FW_CLOCK_F_BACK_STEP beyond
 * step_ns backwards, stepped to @wall_ns beyond step_ns forwards.
 * *out may alias *old. Returns 0.
 */
FW_API int fw_clock_rebase(const struct fw_clock_cal *old, const struct fw_clock_policy *p,
			   uint64_t tsc, uint64_t wall_ns, uint64_t cont_ns,
			   struct fw_clock_cal *out);

/* Unix nanoseconds at @tsc (tsc before base_tsc extrapolates backwards). */
static inline uint64_t fw_clock_ns(const struct fw_clock_cal *cal, uint64_t tsc)
{
	__extension__ typedef unsigned __int128 u128;
	if (FW_UNLIKELY(tsc < cal->base_tsc))
		return cal->base_ns - (uint64_t)(((u128)(cal->base_tsc - tsc) * cal->mult) >> 32);
	return cal->base_ns + (uint64_t)(((u128)(tsc - cal->base_tsc) * cal->mult) >> 32);
}

/* Unix milliseconds at @tsc. */
static inline uint64_t fw_clock_ms(const struct fw_clock_cal *cal, uint64_t tsc)
{
	return fw_clock_ns(cal, tsc) / 1000000u;
}

/* The calibrated tick rate in Hz (slew included), for logs. */
FW_API double fw_clock_hz(const struct fw_clock_cal *cal);

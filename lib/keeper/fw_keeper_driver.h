/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper driver: what both responders' timekeeper threads do around the
 * keeper (fw_keeper.h), written once. It creates and calibrates the keeper,
 * then ticks it every tick_ms (sampling the tick source and the system
 * clock together), hands each tick's events to the owner, prints the owner's
 * stats line every stats_ms and, at the end, persists the exact highest
 * millisecond issued. What differs between flakewire (TSC, DPDK control
 * thread, fleet glue) and flakesock (CLOCK_MONOTONIC_RAW, its main thread)
 * comes in as callbacks.
 *
 * Threads: fw_keeper_driver_start() and _stop() from the owner's thread;
 * fw_keeper_driver_run() in the one thread that drives the keeper (it is
 * the keeper's owner thread while it runs). No DPDK, no printing of its own
 * (lines go to the log callback).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_keeper.h"

struct fw_keeper_driver_ops {
	void *arg; /* passed to every callback below */
	/* the tick source, read precisely for a sample (required) */
	fw_keeper_ticks_fn ticks;
	/* the system clock as the keeper sees it, test-clock faults applied (required) */
	fw_keeper_wall_fn wall;
	/* the keeper's and the driver's lines ({NULL, NULL}: silent) */
	struct fw_log log;
	/* true once the driver must return from fw_keeper_driver_run (required) */
	bool (*should_stop)(void *arg);
	/*
	 * Test clocks: init once the keeper exists (0, or non-zero: do not
	 * start), poll before each tick's sample. NULL: none.
	 */
	int (*testclock_init)(void *arg, struct fw_keeper *k);
	void (*testclock_poll)(void *arg, struct fw_keeper *k);
	/* each tick's events (FW_KEEPER_EV_*) with its sample: the fleet glue. May be NULL. */
	void (*on_tick)(void *arg, uint32_t events, uint64_t tick, uint64_t wall_ns);
	/* the stats line, every stats_ms (@interval_s seconds since the last). May be NULL. */
	void (*stats)(void *arg, double interval_s);
	/* at stop: the highest layout ms the workers issued (they are stopped). Required. */
	uint64_t (*highest_issued)(void *arg);
};

struct fw_keeper_driver_config {
	struct fw_keeper_config keeper; /* its log is ops.log when its fn is NULL */
	uint32_t calibrate_ms;          /* calibration window before the first start */
	uint32_t tick_ms;               /* 0: 10 */
	uint32_t stats_ms;              /* 0: no stats line */
	struct fw_keeper_driver_ops ops;
};

struct fw_keeper_driver; /* opaque */

/*
 * Creates the keeper from cfg->keeper, runs the test-clock init, calibrates
 * over cfg->calibrate_ms (two samples, sleeping between them) and starts
 * the keeper (the start policy against the persisted mark). On success
 * *@out is the driver (its keeper: fw_keeper_driver_keeper). Returns 0, or
 * a negative errno / FW_E* code (-EINVAL: a required callback missing), the
 * reason logged; nothing is left allocated then.
 */
FW_API int fw_keeper_driver_start(const struct fw_keeper_driver_config *cfg,
				  struct fw_keeper_driver **out);

/* The keeper the driver drives: workers take their slots from it. */
FW_API struct fw_keeper *fw_keeper_driver_keeper(struct fw_keeper_driver *d);

/*
 * The tick loop: sleeps tick_ms, polls the test clock, samples, ticks the
 * keeper, hands the events to on_tick, prints the stats line when due;
 * returns once should_stop() says so (checked every tick).
 */
FW_API void fw_keeper_driver_run(struct fw_keeper_driver *d);

/*
 * After the workers stopped: persists highest_issued() as the exact mark
 * (fw_keeper_stop). Returns fw_keeper_stop's code. The keeper stays
 * allocated (a telemetry thread may still read it) until
 * fw_keeper_driver_free().
 */
FW_API int fw_keeper_driver_stop(struct fw_keeper_driver *d);

/* Frees the driver and its keeper; NULL is a no-op. */
FW_API void fw_keeper_driver_free(struct fw_keeper_driver *d);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder core: what flakewire (DPDK lcores) and flakesock (kernel
 * sockets, threads) run around their workers, written once. From the parsed
 * configuration and a small ops table (the tick source, the workers, the
 * log) it claims the worker IDs ([fleet], or [id]'s), starts and drives the
 * timekeeper (lib/keeper's driver: calibration, the mark, the start policy,
 * the fleet's per-tick glue), serves /metrics and the probes ([metrics]
 * listen) and, in the test-clock builds, the fault file of tests/system/faults.
 * The responders keep what differs: the tick source (TSC, CLOCK_MONOTONIC_RAW),
 * the thread the keeper runs on, their own counters and telemetry.
 *
 * Order of use (the owner's thread): fw_responder_create (locks nothing,
 * claims: before the workers exist, they need their IDs), fw_responder_worker
 * (each worker's first ID), fw_responder_keeper_start (the workers' keeper
 * slots exist after it), fw_responder_metrics_start (before or after the
 * keeper), fw_responder_run on the keeper's thread until ops.should_stop,
 * then, the workers stopped: fw_responder_metrics_stop,
 * fw_responder_keeper_stop (the exact final mark), when it returned 0
 * fw_responder_fleet_release (the worker IDs go back), fw_responder_fleet_stop,
 * fw_responder_free.
 *
 * Threads: fw_responder_run is the keeper's thread; /metrics runs on the
 * metrics server's thread and reads the keeper's published status and the
 * workers' counters (plain loads of words one writer updates). No DPDK.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_conf.h"
#include "fw_keeper.h"
#include "fw_layout.h"
#include "fw_log.h"
#include "fw_serve.h"

struct fw_responder;
struct fw_metrics_writer;
struct fw_metrics_worker;
struct fw_fleet_app;

/* One worker as the core reads it (fw_responder_ops.worker). */
struct fw_responder_worker {
	uint32_t key;                 /* the value of its label (lcore ID, thread index) */
	struct fw_keeper_slot *slot;  /* its keeper slot (NULL before the keeper started) */
	const struct fw_serve *serve; /* its generator and counters */
};

/* A drop reason of the responder's own (fw_responder_ops.drops). */
struct fw_responder_drop {
	const char *reason; /* the label value, e.g. "source" */
	uint64_t count;
};

/* most own drop reasons per worker; more are not exported (a responder asserts its count) */
#define FW_RESPONDER_DROPS_MAX 32

/*
 * What the responder gives the core. @arg is passed to every callback.
 * Required: ticks, should_stop, worker. The rest may be NULL.
 */
struct fw_responder_ops {
	void *arg;
	/* the keeper's tick source, read precisely for a sample */
	fw_keeper_ticks_fn ticks;
	/*
	 * The system clock in unix ns (NULL: CLOCK_REALTIME), given @arg; the keeper reads
	 * it through the test clock's faults (none outside the test-clock builds).
	 */
	fw_keeper_wall_fn wall;
	/* every line of the keeper, the fleet glue, /metrics and the test clock */
	struct fw_log log;
	/* the registry's lines ({NULL, NULL}: log) */
	struct fw_log fleet_log;
	/* true once fw_responder_run must return (checked every keeper tick) */
	bool (*should_stop)(void *arg);
	/* worker @i (0..n_workers-1): its label, keeper slot and counters */
	void (*worker)(void *arg, uint32_t i, struct fw_responder_worker *w);
	/*
	 * True once every worker's keeper slot is set: /metrics writes the
	 * workers' families only then (NULL: once the keeper started).
	 */
	bool (*slots_set)(void *arg);
	/* true while the workers run: the probes answer serving only then (NULL: slots_set) */
	bool (*serving)(void *arg);
	/* every keeper tick, after the fleet glue applied the registry's results */
	void (*on_tick)(void *arg);
	/* the stats line every [stats] interval_s (@interval_s since the last) */
	void (*stats)(void *arg, double interval_s);
	/* worker @i's own drop reasons into @out (at most @cap); returns how many */
	uint32_t (*drops)(void *arg, uint32_t i, struct fw_responder_drop *out, uint32_t cap);
	/* the responder's own /metrics families, after the shared ones */
	void (*collect)(void *arg, struct fw_metrics_writer *w, const struct fw_metrics_worker *wk,
			uint32_t n);
	/*
	 * Runs @fn(@fn_arg) on a thread of the responder's choosing and returns
	 * its result: the metrics server's thread inherits that thread's CPUs
	 * (flakewire: a DPDK control thread, never a worker lcore's CPU).
	 * NULL: called on the owner's thread.
	 */
	int (*call_on_thread)(void *arg, int (*fn)(void *), void *fn_arg);
};

struct fw_responder_config {
	const struct fw_conf *conf; /* kept (not copied) for the core's life */
	struct fw_layout layout;    /* the ID layout the workers issue in */
	const char *name;           /* "flakewire", "flakesock": lines and /metrics */
	uint32_t n_workers;         /* 1..FW_KEEPER_WORKERS_MAX */
	const char *worker_label;   /* the workers' label in /metrics: "lcore", "thread" */
	const char *workers_help;   /* flakewire_workers' help text */
	const char *drops_help;     /* flakewire_drops_total's help text */
	const char *state_stamp;    /* fw_state_lock_stamp of the state held (fleet cache) */
	uint32_t tick_ms;           /* the keeper's tick (0: 10) */
	/* test clock: the tick source's name ("TSC") and what a pause holds */
	const char *ticks_name;
	const char *pause_holds;
	/*
	 * test clock: ticks per ms when the keeper (ops.ticks) and every worker
	 * read the ticks through fw_responder_monoraw_ticks (flakesock; the
	 * workers through fw_responder_worker_ticks): the fault file's
	 * tick_back_ms then moves them all back, worker_back_ms only the
	 * workers'; 0: both refused
	 */
	uint64_t fault_ticks_per_ms;
	/* test clock: the environment variable naming a status file (NULL: none) */
	const char *status_env;
	struct fw_responder_ops ops;
};

/*
 * Creates the core and, with [fleet], starts the registry and claims
 * @cfg->n_workers worker IDs (fw_responder_fleet_start: cache or NO_LEASE
 * while the store is down). Without the fleet clients built, [fleet] is
 * refused. Returns 0 with *out set, or -1 with the reason logged and the
 * line "refusing to start (...)" (nothing left allocated).
 */
FW_API int fw_responder_create(const struct fw_responder_config *cfg, struct fw_responder **out);

/* Worker @i's worker ID now: the fleet's, or [id]'s (-1: [id] workers too short). */
FW_API int64_t fw_responder_worker(const struct fw_responder *r, uint32_t i);

/* True when the worker IDs come from a fleet. */
FW_API bool fw_responder_has_fleet(const struct fw_responder *r);

/* The fleet glue (NULL without [fleet]), for telemetry: fw_fleet_app_registry. */
FW_API struct fw_fleet_app *fw_responder_fleet(struct fw_responder *r);

/*
 * Starts the keeper driver for the workers' IDs (fw_responder_worker):
 * creates the keeper, runs the test clock's init, calibrates the ticks over
 * [clock] calibrate_ms against the system clock, applies the start policy
 * against the persisted mark, then gives the fleet glue every slot's ID,
 * floor and lease. Returns 0, or -1 (logged; the keeper not left allocated).
 */
FW_API int fw_responder_keeper_start(struct fw_responder *r);

/* The keeper (NULL before fw_responder_keeper_start): workers take their slots from it. */
FW_API struct fw_keeper *fw_responder_keeper(struct fw_responder *r);

/* The keeper's tick loop on the calling thread; returns once ops.should_stop says so. */
FW_API void fw_responder_run(struct fw_responder *r);

/*
 * After the workers stopped: persists the highest millisecond they issued
 * as the exact mark. Returns 0 or the write's -errno. The keeper stays
 * allocated (telemetry may read it) until fw_responder_free.
 */
FW_API int fw_responder_keeper_stop(struct fw_responder *r);

/*
 * Starts /metrics and the probes when [metrics] listen is set (with [fleet]
 * the lease families too). Returns 0 (also when off), or -1 logged (not
 * ADDR:PORT, the port in use).
 */
FW_API int fw_responder_metrics_start(struct fw_responder *r);

/* Stops /metrics; a no-op when it is not running. Before fw_responder_fleet_stop. */
FW_API void fw_responder_metrics_stop(struct fw_responder *r);

/* Stops the registry (its leases stay: a restart takes the IDs back). */
FW_API void fw_responder_fleet_stop(struct fw_responder *r);

/* How long a graceful stop's release may take (flakesock.service has TimeoutStopSec=10). */
#define FW_RESPONDER_RELEASE_MS 4000

/*
 * A graceful stop: only after fw_responder_keeper_stop returned 0 (the
 * workers stopped, the final mark persisted), gives the fleet's worker IDs
 * back (fw_fleet_app_release, within FW_RESPONDER_RELEASE_MS) and stops the
 * registry. No fleet: returns 0. Returns fw_fleet_stop_release's code (an
 * ID whose release is not confirmed stays leased; logged).
 */
FW_API int fw_responder_fleet_release(struct fw_responder *r);

/* Frees the core, the keeper and what is still running of the above. NULL is fine. */
FW_API void fw_responder_free(struct fw_responder *r);

/*
 * CLOCK_MONOTONIC_RAW in ns, the tick source of a responder whose keeper
 * and workers read it here (flakesock: ops.ticks and every burst). The
 * installed build reads the clock and nothing else; the test-clock build
 * applies the fault file's tick_back_ms (fault_ticks_per_ms 1000000), the
 * tick source going back for all its readers at once. Any thread.
 */
FW_API uint64_t fw_responder_monoraw_ticks(void);

/*
 * The same for a worker's burst (flakesock's worker threads): in the
 * installed build exactly fw_responder_monoraw_ticks(); the test-clock build
 * also applies worker_back_ms, which moves the workers' ticks back but not
 * the keeper's (a worker whose time is not the keeper's). Any thread.
 */
FW_API uint64_t fw_responder_worker_ticks(void);

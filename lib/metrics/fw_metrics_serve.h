/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metric families both responders share, written from lib/serve and
 * lib/id counters of each worker (lcore or thread):
 *   flakewire_requests_total{...,op}        requests answered, by op
 *   flakewire_replies_total{...,status}     replies, by status
 *   flakewire_ids_total{...}                IDs issued in replies
 *   flakewire_partial_replies_total{...}    replies with fewer IDs than asked
 *   flakewire_generator_events_total{...,event}  borrow, backstep, retry,
 *                                           unsafe, mark_hit
 *   flakewire_last_issued_timestamp_seconds{...}  unix time of the newest
 *                                           ID's millisecond (0: none yet)
 * Each worker carries its own labels (lcore/worker, or thread/worker).
 *
 * Manual: doc/metrics.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_gen.h"
#include "fw_keeper.h"
#include "fw_metrics.h"
#include "fw_serve.h"

#define FW_METRICS_WORKER_LABELS 2

struct fw_metrics_worker {
	struct fw_metrics_label labels[FW_METRICS_WORKER_LABELS];
	size_t n_labels;
	const struct fw_serve_stats *ss;
	const struct fw_gen_stats *gs;
	uint64_t last_unix_ms; /* 0: nothing issued yet */
};

/* Writes the families above for @n workers. Errors stick in @w (fw_metrics.h). */
FW_API void fw_metrics_write_workers(struct fw_metrics_writer *w,
				     const struct fw_metrics_worker *wk, size_t n);

/* Name of a lib/serve drop reason (FW_SERVE_DROP_*), "wire_short" etc. */
FW_API const char *fw_metrics_serve_drop_name(unsigned i);

/* Name of a wire status ("ok", "retry_after", ...); "status_N" beyond the known ones. */
FW_API const char *fw_metrics_status_name(unsigned st, char *buf, size_t cap);

/*
 * The timekeeper's families (lib/keeper), the same in both responders:
 *   flakewire_clock_offset_seconds, flakewire_clock_slew_ratio,
 *   flakewire_clock_tsc_hertz (the tick rate: TSC in flakewire,
 *   CLOCK_MONOTONIC_RAW ns in flakesock), flakewire_clock_flag{flag},
 *   flakewire_clock_events_total
 * from @s (a slot snapshot, fw_keeper_read) and @clock_events
 * (fw_keeper_status's clock_events). Errors stick in @w.
 */
FW_API void fw_metrics_write_clock(struct fw_metrics_writer *w, const struct fw_keeper_snap *s,
				   uint64_t clock_events);

/*
 * The process's families, the same in both responders:
 *   flakewire_build_info{version,responder} (always 1),
 *   flakewire_start_time_seconds, flakewire_workers (help: @workers_help).
 */
FW_API void fw_metrics_write_process(struct fw_metrics_writer *w, const char *version,
				     const char *responder, double start_s, uint32_t n_workers,
				     const char *workers_help);

/* The label values of one worker's series (fw_metrics_worker_fill). */
struct fw_metrics_worker_names {
	char key[12];
	char worker[12];
};

/*
 * Fills *wk for one worker: labels @key_label="@key" and worker="its worker
 * ID now" (read from its keeper @slot: a fleet may swap it), the counters of
 * @serve, and the last ms it issued (the slot's last_ms, + @epoch_ms). The
 * label strings live in *names, which must outlive *wk.
 */
FW_API void fw_metrics_worker_fill(struct fw_metrics_worker *wk,
				   struct fw_metrics_worker_names *names, const char *key_label,
				   uint32_t key, struct fw_keeper_slot *slot,
				   const struct fw_serve *serve, uint64_t epoch_ms);

/*
 * Each worker's state (fw_keeper_worker_state: issuing, waiting, no_lease,
 * clock_unsafe) as flakewire_worker_state{<its labels>,state} (1 for its
 * state, 0 for the others) and flakewire_ready (1 when every worker is
 * issuing: what /readyz answers). @st[i] is @wk[i]'s state. Errors stick in @w.
 */
FW_API void fw_metrics_write_states(struct fw_metrics_writer *w, const struct fw_metrics_worker *wk,
				    const enum fw_keeper_wstate *st, size_t n);

/*
 * The probes' answer (fw_metrics_set_probe), the same in both responders:
 *   /healthz (@ready false): true while @serving, body "ok\n"; else
 *            "not serving: starting or stopping\n".
 *   /readyz  (@ready true): true when @serving and every one of the @n
 *            workers is issuing, body "ready: N of N workers issuing\n";
 *            else "not ready: K of N workers cannot issue now\n" and one
 *            line per such worker, "thread=0 worker=5: no_lease\n" (its
 *            labels, then its state).
 * Load and overload never make a worker unready (they are not states).
 */
FW_API bool fw_metrics_probe_answer(bool ready, bool serving, const struct fw_metrics_worker *wk,
				    const enum fw_keeper_wstate *st, size_t n, char *body,
				    size_t cap);

/* What the mark families say (fw_metrics_write_mark). */
struct fw_metrics_mark {
	uint64_t mark_unix_ms; /* the persisted mark, Unix ms */
	double now_unix_ms;    /* the system clock now, Unix ms */
	uint64_t failing;      /* 1 while the last attempt to persist it failed */
	uint64_t failures;     /* attempts that failed */
	uint64_t writes;       /* marks persisted */
};

/*
 * The mark's families, the same in both responders:
 *   flakewire_mark_timestamp_seconds, flakewire_mark_ahead_seconds,
 *   flakewire_mark_failing, flakewire_mark_failures_total,
 *   flakewire_mark_writes_total.
 */
FW_API void fw_metrics_write_mark(struct fw_metrics_writer *w, const struct fw_metrics_mark *m);

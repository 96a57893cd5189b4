/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timekeeper: the one state machine behind both responders' clocks and
 * marks. It owns
 *  - the tick source (a function the app supplies: the TSC for flakewire,
 *    CLOCK_MONOTONIC_RAW for flakesock, fw_keeper_monoraw_ticks below),
 *  - calibration of the ticks against the system clock and re-anchoring by
 *    slewing (lib/clock): its time never goes backwards, whatever the system
 *    clock does; a backward step beyond step_ms is slewed at the maximum
 *    rate and reported, never refused,
 *  - the mark: reserved ahead of the clock, persisted (lib/mark) before any
 *    worker may pass it, the final mark at a clean stop,
 *  - the start policy (wait or fail when the clock is behind the mark),
 *  - per worker slot: the worker ID, a floor (issue only above it), an
 *    external issuing limit (a fleet lease end) and a generation,
 *  - the published snapshot workers read once per burst (one seqlock per
 *    worker slot, C11 atomics; no DPDK).
 *
 * It is a plain state machine: no threads, no sleeps, no clock reads of its
 * own, no printing. Its owner's thread (flakewire's control thread,
 * flakesock's keeper thread, a unit test with a scripted clock) samples the
 * ticks and the system clock and passes them in; persistence goes through
 * struct fw_keeper_io (files by default, a double in tests). What happened
 * is returned as FW_KEEPER_EV_* bits and read with fw_keeper_status(), and
 * the owner logs it.
 *
 * Time units: "unix ms" is milliseconds since 1970; "layout ms" is
 * milliseconds since the ID layout's epoch (what the generator issues).
 * Everything per worker (floor, lease limit, last issued) is in layout ms.
 *
 * Threads: every fw_keeper_* function that takes a struct fw_keeper * is
 * called from the owner's thread only (one thread, or externally
 * serialised), except fw_keeper_status(), which any thread may call.
 * Workers only call the inline reader functions at the end of this file,
 * on their own slot.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fw_clock.h"
#include "fw_common.h"
#include "fw_gen.h"
#include "fw_log.h"
#include "fw_mark.h"

/* "No limit" for a lease limit (layout ms). */
#define FW_KEEPER_NO_LIMIT UINT64_MAX

/* Most worker slots one keeper publishes. */
#define FW_KEEPER_WORKERS_MAX 256

/* [state] start_policy: what to do when the clock is behind the mark at start. */
enum fw_keeper_start_policy {
	FW_KEEPER_START_WAIT = 0, /* start; workers answer RETRY_AFTER until the clock passes */
	FW_KEEPER_START_FAIL = 1, /* refuse to start when behind by more than mark_ahead_ms */
};

/*
 * A tick source: monotonic, constant rate (rate known only roughly; the
 * keeper measures it). Returns the current tick count. Must be callable from
 * any thread (workers call it once per burst).
 */
typedef uint64_t (*fw_keeper_ticks_fn)(void);

/*
 * A system-clock reading in unix ns (CLOCK_REALTIME: fw_wall_ns() of
 * fw_time.h). @arg is its owner's (struct fw_keeper_driver_ops.arg). The
 * test-clock builds of the responders pass a function that adds the faults
 * of a fault file.
 */
typedef uint64_t (*fw_keeper_wall_fn)(void *arg);

/* CLOCK_MONOTONIC_RAW in ns: flakesock's tick source (and the unit tests'). */
FW_API uint64_t fw_keeper_monoraw_ticks(void);

/*
 * One (ticks, unix ns) pair taken as close together as possible: the best of
 * a few tries, keeping the one whose tick bracket around @wall(@wall_arg) is
 * tightest.
 */
FW_API void fw_keeper_sample(fw_keeper_ticks_fn ticks, fw_keeper_wall_fn wall, void *wall_arg,
			     uint64_t *tick, uint64_t *ns);

/*
 * Persistence of the mark. NULL members (or a NULL io in the config) mean
 * the files: fw_mark_open() of cfg.state_file against cfg.layout (at
 * cfg.epoch_ms) and fw_mark_write() with it. Return codes are theirs:
 * read: 0, -ENOENT (no mark and none ever written: first start),
 * FW_EMARK_LOST (one was written and is gone), FW_EMARK_LAYOUT (it fences
 * another layout), FW_ESTATE_CORRUPT, -errno; write: 0 or -errno. A double
 * stores unix ms only: the layout check is the files'.
 */
struct fw_keeper_io {
	int (*read_mark)(void *arg, uint64_t *unix_ms);
	int (*write_mark)(void *arg, uint64_t unix_ms);
	void *arg;
};

struct fw_keeper_config {
	struct fw_clock_policy clock; /* max_slew_ppm, horizon_ms, step_ns */
	uint32_t reanchor_ms;         /* re-anchor after this many ms of ticks ([clock]) */
	uint32_t mark_ahead_ms;       /* reserve this far ahead ([state]) */
	uint32_t mark_retry_ms;       /* after a failed persist, retry after this (100) */
	enum fw_keeper_start_policy start_policy;
	const char *state_file;        /* the mark file (used when io is NULL) */
	const struct fw_keeper_io *io; /* NULL: files */
	uint64_t epoch_ms;             /* the layout's epoch, unix ms */
	/*
	 * The layout the mark fences ([id] datacenter_bits, worker_bits,
	 * sequence_bits, datacenter; its epoch_ms is ignored: epoch_ms above is
	 * the epoch). Default: 0/10/12, datacenter 0. A mark of another layout
	 * refuses the start (FW_EMARK_LAYOUT).
	 */
	struct fw_mark_layout layout;
	uint32_t n_workers;         /* worker slots, 1..FW_KEEPER_WORKERS_MAX */
	const uint32_t *worker_ids; /* n_workers worker IDs (slot i starts with worker_ids[i]) */
	const char *name;           /* the responder's name in log lines ("flakewire") */
	/*
	 * The owner's sink (lib/common/fw_log.h; {NULL, NULL}: silent). The
	 * keeper writes the same words for both responders, so operators and
	 * tests read one text: "mark: ..." for the mark, "clock: ..." for the
	 * clock; @name is how a line names the responder ("... behind flakewire").
	 */
	struct fw_log log;
};

/* Fills *cfg with the defaults of lib/conf; no state file, no workers. */
FW_API void fw_keeper_config_default(struct fw_keeper_config *cfg);

/* ---- the published snapshot ---- */

/* FW_KEEPER_S_* bits of struct fw_keeper_snap.state. */
#define FW_KEEPER_S_SLEWING   0x1u /* |offset| >= 1 ms and a slew is applied */
#define FW_KEEPER_S_BACK_STEP 0x2u /* system clock behind by more than step_ms */
#define FW_KEEPER_S_MARK_FAIL 0x4u /* the last persist failed: workers stop at mark_ms */

/* What a worker reads once per burst (a copy, under its slot's seqlock). */
struct fw_keeper_snap {
	struct fw_clock_cal cal; /* ticks -> unix ns (fw_clock_ns / fw_clock_ms) */
	uint64_t epoch_ms;       /* the layout epoch, unix ms */
	uint64_t mark_ms;        /* layout ms: highest ms persisted on disk */
	uint64_t lease_ms;       /* layout ms: this slot's issuing limit, FW_KEEPER_NO_LIMIT */
	uint64_t floor_ms;       /* layout ms: issue only above this (start mark, takeover) */
	uint64_t worker_gen;     /* bumped by every fw_keeper_set_worker() of this slot */
	uint32_t worker_id;      /* the slot's worker ID (for worker_gen) */
	uint32_t wire_flags;     /* FW_WIRE_F_SLEWING / FW_WIRE_F_BACKSTEP for replies */
	uint32_t state;          /* FW_KEEPER_S_* */
	int64_t offset_ns;       /* system clock minus keeper time at the last anchor */
};

/*
 * One worker slot: written by the keeper (seqlock), read by one worker. The
 * worker writes last_ms, on its own cache line. Treat as opaque outside the
 * inline functions below.
 */
struct fw_keeper_slot {
	atomic_uint seq; /* odd while the keeper writes snap */
	struct fw_keeper_snap snap;
	/* written by the worker, on their own cache line */
	FW_CACHE_ALIGNED atomic_uint_fast64_t last_ms; /* highest layout ms issued before the
							* worker's latest burst */
	atomic_uint_fast64_t retired_ms;  /* highest layout ms any previous worker ID of this
					   * slot issued (a max over every swap) */
	atomic_uint_fast64_t retired_gen; /* worker_gen whose swap wrote retired_ms */
} FW_CACHE_ALIGNED;

/* ---- the owner's side ---- */

struct fw_keeper;

/*
 * Creates a keeper (not started: fw_keeper_start() next).
 * Returns 0 with *out set; -EINVAL (NULL argument, n_workers 0 or above
 * FW_KEEPER_WORKERS_MAX, worker_ids NULL, state_file NULL without io,
 * reanchor_ms or mark_ahead_ms 0), -ENOMEM.
 */
FW_API int fw_keeper_create(const struct fw_keeper_config *cfg, struct fw_keeper **out);

/* Frees @k (NULL is fine). Persists nothing: fw_keeper_stop() first. */
FW_API void fw_keeper_free(struct fw_keeper *k);

/* What fw_keeper_start() found, for the owner's log lines. */
struct fw_keeper_start_info {
	int read_rc;            /* the mark's read: 0, -ENOENT (first start), or the error */
	uint64_t advice_unix;   /* a lost or unreadable mark: the mark the log line advises */
	uint64_t mark_unix;     /* mark read (0: none) */
	uint64_t now_unix;      /* keeper time at start */
	uint64_t behind_ms;     /* mark - now when the clock is behind the mark, else 0 */
	int reserve_rc;         /* first reservation: 0 or -errno (then workers wait, retried) */
	uint64_t reserved_unix; /* mark persisted by the first reservation */
};

/*
 * Starts: calibrates the ticks from two samples (t0, ns0) and (t1, ns1)
 * taken calibrate_ms apart (fw_keeper_sample), reads the mark, applies the
 * start policy, sets every slot's floor to the mark read, publishes, and
 * reserves mark_ahead_ms ahead of the clock (not of the old mark: a crash
 * loop must not push the mark further each time). *info (may be NULL) is
 * filled in even on error.
 * Returns 0 (a failed first reservation is not an error: workers wait at
 * the old mark and fw_keeper_tick() retries); FW_ECAL (bad samples);
 * FW_ESTATE_CORRUPT, FW_EMARK_LOST or -errno (the mark cannot be read:
 * refuse to start; the log line advises a mark to write, info->advice_unix:
 * the highest of a leftover FILE.tmp and the clock plus mark_ahead_ms plus
 * the clock policy's step); FW_EMARK_LAYOUT (the mark fences another layout:
 * the log line names both);
 * FW_EMARK_AHEAD (start_policy fail and the clock is more than
 * mark_ahead_ms behind the mark).
 */
FW_API int fw_keeper_start(struct fw_keeper *k, uint64_t t0, uint64_t ns0, uint64_t t1,
			   uint64_t ns1, struct fw_keeper_start_info *info);

/* FW_KEEPER_EV_* bits returned by fw_keeper_tick(). */
#define FW_KEEPER_EV_ANCHOR     0x01u  /* re-anchored (offset, slew in fw_keeper_status) */
#define FW_KEEPER_EV_FWD_STEP   0x02u  /* system clock jumped ahead: stepped forward */
#define FW_KEEPER_EV_BACK_STEP  0x04u  /* system clock now behind by more than step_ms (edge) */
#define FW_KEEPER_EV_BACK_CLEAR 0x08u  /* back within step_ms again (edge) */
#define FW_KEEPER_EV_OFFSET     0x10u  /* |offset| crossed 1 ms (either way) */
#define FW_KEEPER_EV_MARK       0x20u  /* a new mark was persisted and published */
#define FW_KEEPER_EV_MARK_FAIL  0x40u  /* persisting failed (first failure of a run of them) */
#define FW_KEEPER_EV_MARK_OK    0x80u  /* persisting works again after failures */
#define FW_KEEPER_EV_TICKS_BACK 0x100u /* the tick source went back: re-anchored on it */

/*
 * Drives the keeper: call every few ms (flakewire 10 ms, flakesock 50 ms)
 * with a fresh (ticks, unix ns) sample (fw_keeper_sample). When reanchor_ms
 * of keeper time passed since the last anchor it re-anchors on that sample
 * (slewing; stepping only forward); it extends the mark
 * when it is less than mark_ahead_ms / 2 ahead (retrying a failed persist
 * every mark_retry_ms). When @tick maps to more than 1 ms before the
 * highest keeper time a sample reached (the tick source went back: a TSC
 * reset), it re-anchors @tick on that time, or just above the highest ms
 * any worker reported issued when that is later (fw_clock_rebase): the
 * workers' time goes on from there at their next burst, never below what
 * they issued, instead of refusing CLOCK_UNSAFE until the ticks come back
 * (EV_TICKS_BACK). Publishes whatever changed.
 * Returns the FW_KEEPER_EV_* bits of what happened (0: nothing).
 */
FW_API uint32_t fw_keeper_tick(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns);

/*
 * The same, re-anchoring now whatever the interval (tests, and the owner
 * after a pause it knows of). Returns FW_KEEPER_EV_* bits.
 */
FW_API uint32_t fw_keeper_reanchor(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns);

/*
 * Stops: persists the highest layout ms any worker issued (the max of the
 * slots' last_ms, the floors and @extra_last_ms, 0 when unknown) so the next
 * start serves at once. Call after every worker stopped. *written (may be
 * NULL) gets the unix ms written.
 * Returns 0 or the write's -errno (the reservation on disk stays valid).
 */
FW_API int fw_keeper_stop(struct fw_keeper *k, uint64_t extra_last_ms, uint64_t *written);

/* ---- fleet hooks (issue 10): per-slot lease limit, floor, worker swap ---- */

/*
 * Sets slot @slot's external issuing limit: workers never issue above
 * min(mark on disk, @lease_ms) (layout ms; FW_KEEPER_NO_LIMIT: none, the
 * default). When the lease is what stops a worker, its replies are NO_LEASE
 * (fw_keeper_worker_burst reports it), not RETRY_AFTER. A value below the
 * limit in effect lowers it at the worker's next burst (IDs already issued
 * above it stay issued: set the lease before the workers start). Publishes
 * at once.
 * Returns 0 or -EINVAL (@slot out of range).
 */
FW_API int fw_keeper_set_lease(struct fw_keeper *k, uint32_t slot, uint64_t lease_ms);

/*
 * Switches slot @slot to @worker_id, issuing only above @floor_ms (layout
 * ms, e.g. the previous owner's lease end) and up to @lease_ms: bumps the
 * slot's worker_gen; its worker re-initialises its generator at its next
 * burst (fw_keeper_worker_burst), never mixing the two worker IDs within one
 * burst. The same @worker_id with a higher floor is a takeover of the same ID.
 * Returns 0 or -EINVAL (@slot out of range).
 */
FW_API int fw_keeper_set_worker(struct fw_keeper *k, uint32_t slot, uint32_t worker_id,
				uint64_t floor_ms, uint64_t lease_ms);

/* The highest layout ms slot @slot's worker reported issued (0: none yet). */
FW_API uint64_t fw_keeper_worker_last(const struct fw_keeper *k, uint32_t slot);

/*
 * After fw_keeper_set_worker(): true once slot @slot's worker applied the
 * swap (it will never issue with the old worker ID again), with *last_ms at
 * or above the last layout ms the old worker ID issued (the highest of every
 * ID this slot retired; 0: none), the retirement point to record. False while the swap is pending
 * (the worker has not had a burst since; a worker with no traffic never applies it).
 */
FW_API bool fw_keeper_worker_retired(const struct fw_keeper *k, uint32_t slot, uint64_t *last_ms);

/*
 * (issue 10, [clock] backstep = new_worker) Re-anchors the keeper's time on
 * the system-clock sample (@tick, @wall_ns) even when that steps it back, so
 * IDs follow the system clock again at once instead of running ahead while
 * the offset is slewed away. Only for an owner that has just moved every
 * slot to a fresh worker ID (fw_keeper_set_worker): a worker still on an old
 * ID is safe anyway, its generator never issues below its own last ms
 * (CLOCK_UNSAFE). Restarts the rate window; the mark on disk stays where it
 * is (ahead). Publishes every slot.
 * Returns 0, or -EINVAL before fw_keeper_start().
 */
FW_API int fw_keeper_step_to_wall(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns);

/* ---- status, for logs and telemetry ---- */

struct fw_keeper_status {
	struct fw_clock_cal cal; /* the keeper's calibration */
	uint64_t now_unix_ms;    /* keeper time at the last tick */
	uint64_t mark_unix_ms;   /* persisted and published */
	uint64_t floor_unix_ms;  /* mark read at start (0: none) */
	bool mark_failing;       /* the last persist failed */
	bool back_step;          /* system clock behind by more than step_ms */
	int last_write_rc;       /* the last persist's code */
	uint64_t mark_writes;
	uint64_t mark_failures;
	uint64_t back_steps;   /* times a backward step beyond step_ms began */
	uint64_t clock_events; /* steps and offset changes (EV_FWD_STEP, BACK_*, OFFSET,
				* TICKS_BACK) */
	uint64_t ticks_backs;  /* times the tick source went back (EV_TICKS_BACK) */
};

/*
 * Fills *st with the status as of the end of the last keeper call that
 * changed it (fw_keeper_start, _tick, _reanchor, _step_to_wall, _stop).
 * Any thread, any time, while the keeper driver runs: the keeper publishes
 * the status under a seqlock of its own (fw_seqlock.h), so a reader (the
 * telemetry, /metrics, the stats line) gets one consistent copy, never
 * fields of two updates. All 0 before fw_keeper_start(). The keeper
 * publishes the status before the slots' snapshots: read a slot first, then
 * the status, and the status is at least as new as the slot.
 */
FW_API void fw_keeper_status(const struct fw_keeper *k, struct fw_keeper_status *st);

/*
 * What one worker can do now, from what it reads (its slot's snapshot, the
 * keeper's time and its own last ms): one state, the same for /readyz, the
 * flakewire_worker_state gauge and `flakectl status`. Load and overload
 * are not states: a worker whose sequence is used up for a millisecond is
 * issuing (RETRY_AFTER for that millisecond only).
 */
enum fw_keeper_wstate {
	FW_KEEPER_W_ISSUING = 0,  /* answers OK now */
	FW_KEEPER_W_WAITING,      /* RETRY_AFTER until the clock passes the slot's floor (the
				   * mark at start, a takeover's floor) or the mark on disk
				   * (a persist failing, or not yet made at start) */
	FW_KEEPER_W_NO_LEASE,     /* NO_LEASE: no worker ID, or its confirmed lease ended */
	FW_KEEPER_W_CLOCK_UNSAFE, /* CLOCK_UNSAFE: the worker issued more than max_backstep_ms
				   * ahead of the keeper's time */
	FW_KEEPER_W_COUNT
};

/* "issuing", "waiting", "no_lease", "clock_unsafe" (the gauge's label values). */
FW_API const char *fw_keeper_wstate_name(enum fw_keeper_wstate s);

/*
 * Slot @slot's state now ([id] max_backstep_ms is @max_backstep_ms). Any
 * thread, like fw_keeper_status() (it reads the slot's seqlock snapshot,
 * the published status and the worker's last_ms). FW_KEEPER_W_WAITING
 * before fw_keeper_start() and for a slot out of range.
 */
FW_API enum fw_keeper_wstate fw_keeper_worker_state(struct fw_keeper *k, uint32_t slot,
						    uint64_t max_backstep_ms);

/*
 * The same rule over explicit inputs (what fw_keeper_worker_state reads):
 * @s a slot snapshot, @now_ms the keeper's time and @last_ms the worker's
 * last issued ms (layout ms, 0: none).
 */
FW_API enum fw_keeper_wstate fw_keeper_wstate_of(const struct fw_keeper_snap *s, uint64_t now_ms,
						 uint64_t last_ms, uint64_t max_backstep_ms);

/*
 * The worker slots (n_workers of them), for the workers' readers and for a
 * test clock that must hold every reader (a pause: fw_keeper_hold).
 */
FW_API struct fw_keeper_slot *fw_keeper_slots(struct fw_keeper *k, uint32_t *n);

/*
 * Test clocks only: @on true makes every slot's seq odd so every worker
 * spins in its next fw_keeper_read (a VM pause); false releases them.
 */
FW_API void fw_keeper_hold(struct fw_keeper *k, bool on);

/* ---- the workers' side: one read per burst ---- */

/* Copies the slot's snapshot, consistent (retries while the keeper writes). */
static inline void fw_keeper_read(struct fw_keeper_slot *slot, struct fw_keeper_snap *s)
{
	unsigned a, b;

	do {
		a = atomic_load_explicit(&slot->seq, memory_order_acquire);
		memcpy(s, (const void *)&slot->snap, sizeof(*s));
		atomic_thread_fence(memory_order_acquire);
		b = atomic_load_explicit(&slot->seq, memory_order_relaxed);
	} while ((a & 1) || a != b);
}

/* Issuing limit of a snapshot: min(mark, lease); *by_lease when the lease is lower. */
static inline uint64_t fw_keeper_limit(const struct fw_keeper_snap *s, bool *by_lease)
{
	*by_lease = s->lease_ms < s->mark_ms;
	return *by_lease ? s->lease_ms : s->mark_ms;
}

/* A worker's memory of what it applied to its generator. Zero it at start. */
struct fw_keeper_worker {
	struct fw_keeper_slot *slot; /* its slot (for the retirement record) */
	uint64_t worker_gen;         /* snapshot generation applied */
	uint64_t limit_ms;           /* limit applied */
	bool by_lease;               /* the limit applied is the lease */
};

/*
 * Slow path of fw_keeper_worker_burst: a new worker_gen. Raises the slot's
 * retired_ms to the old generator's last ms (then sets retired_gen), and
 * re-initialises @g with the snapshot's worker ID and floor, keeping its
 * layout and config.
 * Returns 0 or fw_gen_init's code (then @g is unchanged and the old worker
 * keeps issuing; a bug of the owner, the ID does not fit the layout).
 */
FW_API int fw_keeper_worker_swap(struct fw_keeper_worker *w, const struct fw_keeper_snap *s,
				 struct fw_gen *g);

/*
 * Slow path of fw_keeper_worker_burst: applies a new limit to @g. A higher
 * one through fw_gen_set_mark; a lower one (a lease below the mark) too,
 * which fw_gen_set_mark alone would ignore.
 */
FW_API void fw_keeper_worker_limit(struct fw_keeper_worker *w, struct fw_gen *g, uint64_t limit_ms);

/*
 * Prepares a worker's reader for slot @slot whose generator @g was
 * initialised with the slot's first worker ID: zeroes *w, applies the
 * floor and limit published now. Call once before its first burst.
 */
FW_API void fw_keeper_worker_init(struct fw_keeper_worker *w, struct fw_keeper_slot *slot,
				  struct fw_gen *g);

/*
 * Per burst: reads the worker's slot once, applies it to the generator @g (a worker
 * swap, the floor, the limit min(mark, lease)), reports the last ms @g
 * issued before this burst, and returns the time of @tick in layout ms (0
 * before the epoch). *s gets the snapshot (wire_flags, offset_ns for the
 * replies). After issuing, map FW_EMARK to NO_LEASE when w->by_lease, to
 * RETRY_AFTER otherwise.
 */
static inline uint64_t fw_keeper_worker_burst(struct fw_keeper_worker *w, struct fw_gen *g,
					      uint64_t tick, struct fw_keeper_snap *s)
{
	struct fw_keeper_slot *slot = w->slot;

	fw_keeper_read(slot, s);
	if (FW_UNLIKELY(s->worker_gen != w->worker_gen))
		fw_keeper_worker_swap(w, s, g);
	bool by_lease;
	uint64_t limit = fw_keeper_limit(s, &by_lease);
	if (FW_UNLIKELY(limit != w->limit_ms))
		fw_keeper_worker_limit(w, g, limit);
	w->by_lease = by_lease;
	atomic_store_explicit(&slot->last_ms, fw_gen_last_ms(g), memory_order_relaxed);
	uint64_t unix_ms = fw_clock_ms(&s->cal, tick);
	return unix_ms > s->epoch_ms ? unix_ms - s->epoch_ms : 0;
}

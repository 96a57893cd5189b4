/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ID verifier of the load generators (flakectl bench, flakeload): every
 * ID a responder hands out is checked as it arrives, and for uniqueness over
 * the whole run at the end.
 *
 * On arrival (fw_idcheck_add), for a run of consecutive IDs first..first+n-1
 * from one reply:
 *  - negative: an ID with bit 63 set, an empty run (n 0) or one that wraps;
 *  - worker_mismatch: an ID whose datacenter or worker field differs from the
 *    reply header's (a run crossing a sequence boundary carries into it);
 *  - not_increasing: the run does not start above the highest ID seen before
 *    from the same (datacenter, worker) BY THIS CHECKER. Order holds per
 *    channel only (a thread's socket, an lcore's queue): replies on two
 *    channels interleave, so keep one checker per channel;
 *  - time_out_of_bound: the IDs decode to a time outside [sent_ms - bound,
 *    recv_ms + bound] (optional: FW_IDCHECK_NO_TIME turns it off).
 * At the end (fw_idcheck_finish), uniqueness: every run kept is sorted and
 * every ID covered twice is a duplicate. Runs are kept as intervals
 * [first, first + n); a run that continues the last one kept for its worker
 * extends it, so a worker handing out consecutive IDs costs a few intervals
 * per ms rather than one per ID. Checkers of several channels are merged
 * (fw_idcheck_merge) before the one finish, so uniqueness spans them all.
 *
 * Also kept, for the report: how far ID times fell outside [sent, received]
 * and how much of the ID space the run used.
 *
 * Not thread safe: one checker per thread or lcore. No DPDK.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_layout.h"

/* What a check can find; the names (fw_idcheck_name) are the JSON keys of the reports. */
enum fw_idcheck_kind {
	FW_IDCHECK_DUPLICATE = 0, /* "duplicate": an ID seen twice (counted per ID, at finish) */
	FW_IDCHECK_ORDER,         /* "not_increasing": not above the worker's previous ID */
	FW_IDCHECK_TIME,          /* "time_out_of_bound" */
	FW_IDCHECK_WORKER,        /* "worker_mismatch": not from the header's worker */
	FW_IDCHECK_NEGATIVE,      /* "negative": bit 63 set, an empty or wrapping run */
	FW_IDCHECK_COUNT
};

/* fw_idcheck_conf.time_bound_ms that turns the time check off. */
#define FW_IDCHECK_NO_TIME     UINT32_MAX
/* Distinct (datacenter, worker) pairs whose order one checker follows. */
#define FW_IDCHECK_WORKERS_MAX 4096

struct fw_idcheck_conf {
	struct fw_layout layout; /* the responders' */
	uint32_t time_bound_ms;  /* or FW_IDCHECK_NO_TIME */
	uint64_t max_runs;       /* memory cap of the uniqueness store (16 bytes a run), >= 1 */
	bool prealloc;           /* allocate max_runs at init (no allocation on the fast path) */
};

/* IDs first .. first + n - 1. */
struct fw_idcheck_run {
	uint64_t first;
	uint64_t n;
};

/* The order state of one (datacenter, worker). */
struct fw_idcheck_worker {
	uint32_t key;  /* datacenter << 16 | worker, + 1 (0: an empty slot) */
	uint64_t last; /* the highest ID seen from it */
	uint64_t run;  /* index + 1 of its open run in the store (0: none) */
};

/* Fields are read-only to callers (the reports print them). */
struct fw_idcheck {
	struct fw_idcheck_conf conf;
	uint64_t v[FW_IDCHECK_COUNT];         /* findings by kind (IDs for duplicates) */
	uint64_t first_bad[FW_IDCHECK_COUNT]; /* the first ID of the first finding of each kind */
	uint64_t ids;                         /* IDs checked */
	uint64_t ids_stored;                  /* IDs in the uniqueness store */
	uint64_t ids_unchecked;               /* IDs not stored: the store was at max_runs */
	struct fw_idcheck_worker *w;          /* FW_IDCHECK_WORKERS_MAX slots */
	uint32_t n_workers;                   /* pairs followed (at most 3/4 of the slots) */
	uint64_t workers_untracked;           /* IDs of pairs beyond those: order not checked */
	struct fw_idcheck_run *runs; /* the uniqueness store; sorted by first after finish */
	uint64_t n_runs;
	uint64_t cap_runs; /* allocated */
	/* how far ID times fell outside [sent, received]: most before (<= 0), most after (>= 0) */
	int64_t min_skew_ms;
	int64_t max_skew_ms;
	/*
	 * ID-space use: the unix ms the IDs carry (earliest, latest), the
	 * (worker, ms) pairs whose sequence 0 arrived (a ms a worker started) and
	 * those whose last sequence value arrived (a ms it used up).
	 */
	uint64_t id_ms_first;
	uint64_t id_ms_last;
	uint64_t ms_started;
	uint64_t ms_full;
	bool finished;
};

/*
 * Sets up @v with @conf (copied). With conf->prealloc the whole store is
 * allocated now; otherwise it grows by doubling up to max_runs.
 * Returns 0, -EINVAL (max_runs 0) or -ENOMEM.
 */
FW_API int fw_idcheck_init(struct fw_idcheck *v, const struct fw_idcheck_conf *conf);

/* Frees what @v allocated. @v may be zeroed or already freed. */
FW_API void fw_idcheck_free(struct fw_idcheck *v);

/*
 * Checks the run @first .. @first + @n - 1 (n 1 for a single ID) from a reply
 * whose header names (@dc, @worker); the request left at @sent_ms and the
 * reply came back at @recv_ms (unix ms, our clock; unused with
 * FW_IDCHECK_NO_TIME), so a reply delayed by a stall of either side is not
 * taken for a clock fault. Stores the run for the uniqueness check (or
 * counts it in ids_unchecked once the store is at max_runs).
 * Returns the kinds found in this run as a mask of 1u << FW_IDCHECK_*
 * (0: clean). A negative run is neither order-checked nor stored.
 */
FW_API unsigned fw_idcheck_add(struct fw_idcheck *v, uint64_t first, uint64_t n, uint16_t dc,
			       uint16_t worker, uint64_t sent_ms, uint64_t recv_ms);

/*
 * Checks the @n IDs of one LIST reply, @ids in the reply's order, with the
 * same header and times as fw_idcheck_add: each stretch of consecutive IDs
 * (ids[i + 1] == ids[i] + 1, the usual case) is one fw_idcheck_add run, so
 * an order fault counts once per stretch. Returns the OR of their masks;
 * @n 0 is an empty run (FW_IDCHECK_NEGATIVE).
 */
FW_API unsigned fw_idcheck_add_list(struct fw_idcheck *v, const uint64_t *ids, uint32_t n,
				    uint16_t dc, uint16_t worker, uint64_t sent_ms,
				    uint64_t recv_ms);

/* True once a run could not be stored (the store reached max_runs). */
FW_API bool fw_idcheck_full(const struct fw_idcheck *v);

/*
 * Moves @from's stored runs into @into and adds its counters (findings,
 * IDs, skew extremes, ID-space use), so one fw_idcheck_finish covers both.
 * The order state is not merged (order holds per checker). @from keeps its
 * counters but is left with no runs and no order state: merge a checker
 * once its channel is done. Neither may be finished. Returns 0, -EINVAL (one is
 * finished) or -ENOMEM (@into is unchanged).
 */
FW_API int fw_idcheck_merge(struct fw_idcheck *into, struct fw_idcheck *from);

/*
 * The uniqueness check: sorts the stored runs by first ID and counts every
 * ID covered more than once in v[FW_IDCHECK_DUPLICATE]. Afterwards runs[]
 * is in increasing order (overlaps kept). A second call does nothing.
 */
FW_API void fw_idcheck_finish(struct fw_idcheck *v);

/* All findings of every kind (0: clean). */
FW_API uint64_t fw_idcheck_total(const struct fw_idcheck *v);

/* The name of @kind ("duplicate", "not_increasing", ...); "?" when out of range. */
FW_API const char *fw_idcheck_name(unsigned kind);

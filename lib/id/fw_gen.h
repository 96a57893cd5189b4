/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ID generator: one per worker ID, owned by one thread, no locks.
 *
 * Time is injected: every issuing call takes @now, the caller's reading of
 * its clock in milliseconds since the layout's epoch. A DPDK lcore reads the
 * TSC once per burst and passes the same @now for the whole burst; tests
 * script @now to step back, stall or jump.
 *
 * Guarantees, whatever @now does:
 *  - every ID issued is strictly greater than the previous one;
 *  - no ID is issued at a millisecond above the reserved mark (fw_gen_set_mark);
 *  - no ID is issued at a millisecond more than cfg.max_borrow_ms ahead of @now.
 *
 * Policy (all thresholds are in struct fw_gen_config):
 *  - sequence of the current ms used up: move to the next ms even if @now has
 *    not reached it ("borrow"), as long as that ms is at most max_borrow_ms
 *    ahead of @now; beyond, FW_ERETRY with fw_gen_retry_after_us() set.
 *  - @now lower than the highest @now seen (clock stepped back) by at most
 *    max_backstep_ms: keep issuing from the last ms, which counts against
 *    max_borrow_ms (FW_ERETRY once the lead is too large). A larger step:
 *    FW_ECLOCK, nothing is issued, until @now is back within max_backstep_ms.
 *  - ms above the mark: FW_EMARK until the owner extends the mark.
 *  - sequence start (FW_GEN_SEQ_CARRY, the default): a millisecond entered
 *    because the clock moved on starts where the last one stopped, so the
 *    sequence of the k-th ID since init (or since fw_gen_set_floor) is
 *    k mod 2^seq_bits, whatever the rate: id % N is a round robin for every N
 *    that divides 2^seq_bits. A millisecond entered because the last one was
 *    used up starts at 0 (the counter wraps there), so a loaded worker still
 *    issues 2^seq_bits IDs in every millisecond; only the first millisecond
 *    of a burst after a quiet spell may offer fewer (2^seq_bits - its start).
 *    Carrying needs max_borrow_ms >= 1 (the wrap goes into a borrowed ms):
 *    with max_borrow_ms 0, every ms starts at 0 and capacity comes first.
 *    FW_GEN_SEQ_ZERO, every millisecond starting at 0, is the rule before
 *    issue 36, kept for the shard benchmark's "before" column.
 * Nothing here spins or sleeps. Every event is counted in struct fw_gen_stats.
 *
 * Manual: doc/ids-and-uuidv7.md, doc/guarantees.md.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_layout.h"

#define FW_GEN_DEFAULT_MAX_BORROW_MS   4
#define FW_GEN_DEFAULT_MAX_BACKSTEP_MS 1000

/* Where a millisecond entered because the clock moved on starts its sequence. */
enum fw_gen_seq_start {
	FW_GEN_SEQ_CARRY = 0, /* where the last ms stopped (default; even id % N) */
	FW_GEN_SEQ_ZERO = 1,  /* at 0 (before issue 36: id % N skewed to 0 at low rates) */
};

struct fw_gen_config {
	uint32_t datacenter;      /* < 2^dc_bits */
	uint32_t worker;          /* < 2^worker_bits */
	uint32_t max_borrow_ms;   /* lead over @now allowed when borrowing (default 4) */
	uint32_t max_backstep_ms; /* larger backward steps are "clock unsafe" (default 1000) */
	uint32_t seq_start;       /* enum fw_gen_seq_start (default FW_GEN_SEQ_CARRY) */
};

/* Flags describing the generator's state after the last issuing call. */
#define FW_GEN_F_BORROWED 0x1u /* last ID's ms is ahead of @now */
#define FW_GEN_F_BACKSTEP 0x2u /* @now is behind the highest @now seen */
#define FW_GEN_F_UNSAFE   0x4u /* last call refused with FW_ECLOCK */

struct fw_gen_stats {
	uint64_t issued;          /* IDs handed out */
	uint64_t borrowed_ms;     /* times a ms ahead of @now was entered */
	uint64_t backsteps;       /* times @now moved backwards */
	uint64_t max_backstep_ms; /* largest backward step seen */
	uint64_t retries;         /* calls answered FW_ERETRY */
	uint64_t unsafe;          /* calls answered FW_ECLOCK */
	uint64_t mark_hits;       /* calls answered FW_EMARK */
};

/*
 * Generator state. Embedded by value in per-thread structs so the fast path
 * inlines; callers treat every field as private and use the functions below.
 */
struct fw_gen {
	/* hot: read and written on every ID */
	uint64_t fast_ms;   /* == cur_ms when the next call at @now == cur_ms needs no check */
	uint64_t cur_ms;    /* ms of the last ID issued (UINT64_MAX before the first) */
	uint64_t next_seq;  /* next sequence number at cur_ms */
	uint64_t seen_ms;   /* highest @now seen */
	uint64_t last_now;  /* @now of the previous call, to count backward steps */
	uint64_t node_bits; /* datacenter and worker, already shifted */
	uint64_t seq_limit; /* 2^seq_bits */
	uint64_t seq_carry; /* 2^seq_bits - 1 (FW_GEN_SEQ_CARRY) or 0: a new ms starts at next_seq &
			       seq_carry */
	uint32_t time_shift; /* seq_bits + worker_bits + dc_bits */
	uint32_t flags;      /* FW_GEN_F_* after the last call */
	/* cold */
	uint64_t mark_ms;  /* highest ms that may be issued */
	uint64_t time_max; /* 2^time_bits - 1 */
	uint32_t retry_after_us;
	struct fw_gen_config cfg;
	struct fw_layout layout;
	struct fw_gen_stats stats;
};

/*
 * Initialises a generator for @layout and @cfg. The mark starts at 0: call
 * fw_gen_set_mark() before issuing. Zero max_borrow_ms/max_backstep_ms in
 * @cfg are valid values (no borrowing, any backward step is unsafe).
 * Returns 0, -EINVAL (NULL argument, or seq_start not an enum
 * fw_gen_seq_start), FW_ERANGE (worker or datacenter does not fit the
 * layout) or a fw_layout_validate() code.
 */
FW_API int fw_gen_init(struct fw_gen *g, const struct fw_layout *layout,
		       const struct fw_gen_config *cfg);

/* Fills *cfg with the defaults (worker 0, datacenter 0, default thresholds). */
FW_API void fw_gen_config_default(struct fw_gen_config *cfg);

/*
 * Sets the highest ms (since the layout epoch) that may be issued. The mark
 * only moves forward: a lower value is ignored. Returns the mark in effect.
 */
FW_API uint64_t fw_gen_set_mark(struct fw_gen *g, uint64_t mark_ms);

/*
 * Forbids issuing at or below @floor_ms (since the epoch), for a restart
 * after a persisted mark: the next ID is at floor_ms + 1 or later. While
 * @now is more than max_borrow_ms behind floor_ms + 1, issuing calls answer
 * FW_ERETRY with the time until the clock gets there (a restart waits for
 * the clock to pass the mark; it is not counted as a backward step). A floor
 * at or below the last ID issued is a no-op. Returns 0.
 */
FW_API int fw_gen_set_floor(struct fw_gen *g, uint64_t floor_ms);

/* Out-of-line path of fw_gen_next(): new ms, borrow, clock and mark checks. */
FW_API int fw_gen_next_slow(struct fw_gen *g, uint64_t now, uint64_t *id);

/*
 * True when the next fw_gen_next() at @now takes the fast path: it then
 * issues an ID, returns 0 and leaves the flags at 0. A caller may use it to
 * pick its own fast path before issuing (lib/serve does).
 */
static inline bool fw_gen_fast_ready(const struct fw_gen *g, uint64_t now)
{
	/* fast_ms is UINT64_MAX when disarmed: a @now of UINT64_MAX must not match it. */
	return now == g->fast_ms && now != UINT64_MAX && g->next_seq < g->seq_limit;
}

/*
 * Issues one ID into *id.
 * Returns 0, FW_ERETRY (see fw_gen_retry_after_us), FW_ECLOCK or FW_EMARK;
 * on error *id is untouched and nothing was consumed.
 */
static inline int fw_gen_next(struct fw_gen *g, uint64_t now, uint64_t *id)
{
	if (FW_LIKELY(fw_gen_fast_ready(g, now))) {
		*id = (now << g->time_shift) | g->node_bits | g->next_seq++;
		g->stats.issued++;
		return 0;
	}
	return fw_gen_next_slow(g, now, id);
}

/*
 * A run: fw_gen_next()'s fast path for a loop that issues many IDs at one
 * @now (a burst), held in the caller's registers instead of read and written
 * in *g for every ID. fw_gen_run_begin() takes what the fast path could
 * issue at @now (the rest of the current ms's sequence; nothing when the
 * fast path is not open), fw_gen_run_next() issues from it, and
 * fw_gen_run_end() writes back what was used (next_seq and the issued
 * counter). The IDs, their order and the counters are exactly those of
 * fw_gen_next() at @now. Between begin and end no other call may touch @g:
 * a caller that needs one ends the run, makes it, and begins again.
 */
struct fw_gen_run {
	uint64_t base;  /* now << time_shift | node_bits */
	uint64_t seq;   /* the next ID's sequence */
	uint64_t limit; /* issue while seq < limit */
	uint64_t seq0;  /* seq at begin: seq - seq0 IDs issued */
};

static inline void fw_gen_run_begin(const struct fw_gen *g, uint64_t now, struct fw_gen_run *r)
{
	r->base = (now << g->time_shift) | g->node_bits;
	r->seq = r->seq0 = g->next_seq;
	r->limit = fw_gen_fast_ready(g, now) ? g->seq_limit : g->next_seq;
}

/* Issues the run's next ID into *id: true, or false when the run is used up (*id untouched). */
static inline bool fw_gen_run_next(struct fw_gen_run *r, uint64_t *id)
{
	if (FW_UNLIKELY(r->seq >= r->limit))
		return false;
	*id = r->base | r->seq++;
	return true;
}

static inline void fw_gen_run_end(struct fw_gen *g, const struct fw_gen_run *r)
{
	g->next_seq = r->seq;
	g->stats.issued += r->seq - r->seq0;
}

/*
 * Issues up to @n IDs into ids[0..n-1], in increasing order, possibly across
 * several milliseconds (borrowing as fw_gen_next does).
 * Returns the number issued (1..n), or, when none could be issued, the
 * negative code fw_gen_next would return. Stops early (returns < n) at the
 * first limit; the next call reports that limit.
 */
FW_API int fw_gen_list(struct fw_gen *g, uint64_t now, uint64_t *ids, uint32_t n);

/*
 * Issues a range: @first and the following IDs first+1 .. first+count-1, all
 * in one millisecond, count = min(@want, what is left of that ms's sequence).
 * Costs the same whatever the count.
 * Returns count (1..want), or the negative code fw_gen_next would return.
 */
FW_API int fw_gen_range(struct fw_gen *g, uint64_t now, uint32_t want, uint64_t *first);

/* After FW_ERETRY: microseconds until a retry can succeed (at least 1). */
static inline uint32_t fw_gen_retry_after_us(const struct fw_gen *g)
{
	return g->retry_after_us;
}

/* FW_GEN_F_* flags describing the last issuing call. */
static inline uint32_t fw_gen_flags(const struct fw_gen *g)
{
	return g->flags;
}

/* Counters since fw_gen_init(). */
static inline const struct fw_gen_stats *fw_gen_stats(const struct fw_gen *g)
{
	return &g->stats;
}

/* The highest ms issued so far (since the epoch), or 0 before the first ID. */
static inline uint64_t fw_gen_last_ms(const struct fw_gen *g)
{
	return g->cur_ms == UINT64_MAX ? 0 : g->cur_ms;
}

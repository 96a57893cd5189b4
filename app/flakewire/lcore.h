/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One worker lcore's state (lcore.c): its generator and serve state, its
 * keeper slot, its counters, its rate limiter and source-verdict cache, and
 * the read-only packet context it answers with. Nothing in it is shared
 * with another lcore; telemetry reads the counters (plain 64-bit loads).
 * lcore.c holds what a harness needs to build and clock one lcore without
 * an application; poll.h has the EAL side (every lcore, the burst loop).
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"
#include "fw_conf.h"
#include "fw_keeper.h"
#include "fw_layout.h"
#include "fw_policy.h"
#include "fw_serve.h"
#include "pkt.h"

/* One per worker lcore (every EAL lcore, the main one included). */
struct fwire_lcore {
	struct fw_serve serve;
	struct fwire_lcore_stats st;
	const struct fwire_pkt_ctx *px; /* the packet context, shared, read-only */
	uint32_t lcore_id;
	uint32_t index;              /* 0-based worker index */
	uint16_t queue;              /* its RX and TX queue on every port */
	uint32_t worker_id;          /* generator worker ID */
	struct fw_keeper_worker kw;  /* its keeper slot: clock, mark, lease, worker swaps */
	uint64_t tsc;                /* TSC of the burst being answered (fwire_lcore_clock) */
	struct fw_rate *rate;        /* this lcore's rate limiter; NULL when [net] rate = 0 */
	struct fw_policy_cache srcc; /* verdicts of px->policy for recent sources */
	uint32_t ports_down;         /* bit p: port p's link is down, not polled (poll.c) */
	uint32_t ports_unseen;   /* bit p: port p's interface is not in our namespace (poll.c) */
	uint32_t link_countdown; /* loop iterations until the next look at the TSC */
	uint64_t link_next_tsc;  /* TSC of the next link check */
} FW_CACHE_ALIGNED;

/*
 * Initialises *lc (zeroed by the caller) as worker @index (its queue) on
 * EAL lcore @lcore_id with generator worker ID @worker, the ID layout
 * @layout and [id] / [net] settings of @c, answering with @px (which must
 * outlive it). No rate limiter yet (fwire_lcore_rate_init) and no keeper slot
 * (fw_keeper_worker_init on lc->kw). Returns 0 or -1 (logged).
 */
int fwire_lcore_init(struct fwire_lcore *lc, const struct fwire_pkt_ctx *px,
		     const struct fw_conf *c, const struct fw_layout *layout, uint32_t index,
		     uint32_t lcore_id, uint32_t worker);

/*
 * Gives @lc its rate limiter when [net] rate > 0: its share of the
 * responder's rate among @n_lcores (fw_rate_share), on the lcore's socket.
 * Returns 0 (also when no limit is set) or -1 (no memory, logged).
 * fwire_lcore_rate_free() releases it.
 */
int fwire_lcore_rate_init(struct fwire_lcore *lc, const struct fw_conf *c, uint32_t n_lcores);
void fwire_lcore_rate_free(struct fwire_lcore *lc);

/*
 * Reads the clock once for a burst: sets lc->tsc (rate limiting), the
 * mark and clock flags of lc->serve from its keeper slot; returns ms since
 * the layout epoch, the @now of fwire_pkt_answer. Every burst loop calls it
 * before fwire_pkt_answer.
 */
uint64_t fwire_lcore_clock(struct fwire_lcore *lc);

/*
 * clock_fixed.c: a keeper for tools that run the packet path without the
 * control thread (flakeload-pktbench): calibrated from rte_get_tsc_hz(),
 * the mark @ahead_ms ahead of now, nothing persisted, one slot for each of
 * the @n lcores at @lc (their kw set). Returns the keeper, or NULL.
 */
struct fw_keeper *fwire_lcores_fixed_clock(struct fwire_lcore *lc, uint32_t n, uint64_t epoch_ms,
					   uint64_t ahead_ms);

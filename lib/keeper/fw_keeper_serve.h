/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A responder's clock step for one burst, written once for both of them
 * (flakewire's lcore, flakesock's worker): the keeper's snapshot taken for
 * the worker's generator, and what it says handed on to the worker's
 * struct fw_serve. Header only: the keeper knows nothing of lib/serve nor
 * lib/serve of the keeper; a responder links both.
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"
#include "fw_keeper.h"
#include "fw_serve.h"

/*
 * fw_keeper_worker_burst() for @s's generator at @tick; then, if the fleet
 * swapped the worker ID, fw_serve_worker_changed() (no reply or UUID of the
 * burst carries the old ID), and the snapshot's wire flags, clock offset
 * and lease state into @s. Returns @now for the burst (layout ms); *@snap
 * as fw_keeper_worker_burst() fills it.
 */
static inline uint64_t fw_keeper_serve_burst(struct fw_keeper_worker *kw, struct fw_serve *s,
					     uint64_t tick, struct fw_keeper_snap *snap)
{
	uint64_t wgen = kw->worker_gen;
	uint64_t now = fw_keeper_worker_burst(kw, &s->gen, tick, snap);

	if (FW_UNLIKELY(kw->worker_gen != wgen))
		fw_serve_worker_changed(s);
	s->extra_flags = snap->wire_flags;
	s->clock_offset_ns = snap->offset_ns;
	s->no_lease = kw->by_lease; /* fleet: the limit is the lease */
	return now;
}

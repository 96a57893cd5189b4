/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timekeeper's settings from the configuration file: the one mapping of
 * [clock] and [state] to struct fw_keeper_config that both responders'
 * drivers use (flakewire's control.c, flakesock's keeper.c). Header only,
 * so lib/keeper itself does not depend on lib/conf.
 */
#pragma once

#include <string.h>

#include "fw_conf.h"
#include "fw_keeper.h"
#include "fw_keeper_driver.h"
#include "fw_state_lock.h"

/*
 * Fills *kc with the keeper defaults, then [clock] max_slew_ppm, reanchor_ms
 * (also the rate horizon), step_ms and [state] mark_ahead_ms, start_policy,
 * file from @c, and @epoch_ms. The caller sets n_workers, worker_ids, name
 * and log.
 */
static inline void fw_keeper_config_from_conf(struct fw_keeper_config *kc, const struct fw_conf *c,
					      uint64_t epoch_ms)
{
	fw_keeper_config_default(kc);
	kc->clock.max_slew_ppm = c->clock.max_slew_ppm;
	kc->clock.horizon_ms = c->clock.reanchor_ms;
	kc->clock.step_ns = (uint64_t)c->clock.step_ms * 1000000u;
	kc->reanchor_ms = c->clock.reanchor_ms;
	kc->mark_ahead_ms = c->state.mark_ahead_ms;
	kc->start_policy = c->state.start_policy == FW_CONF_START_FAIL ? FW_KEEPER_START_FAIL
								       : FW_KEEPER_START_WAIT;
	kc->state_file = c->state.file;
	kc->epoch_ms = epoch_ms;
}

/*
 * The keeper driver's settings from @c: the keeper's (as above) for
 * @n_workers workers with the IDs at @ids (kept until
 * fw_keeper_driver_start returns) named @name, [clock] calibrate_ms and
 * [stats] interval_s. The caller sets dc->ops.
 */
static inline void fw_keeper_driver_config_from_conf(struct fw_keeper_driver_config *dc,
						     const struct fw_conf *c, uint64_t epoch_ms,
						     uint32_t n_workers, const uint32_t *ids,
						     const char *name)
{
	memset(dc, 0, sizeof(*dc));
	fw_keeper_config_from_conf(&dc->keeper, c, epoch_ms);
	dc->keeper.n_workers = n_workers;
	dc->keeper.worker_ids = ids;
	dc->keeper.name = name;
	dc->calibrate_ms = c->clock.calibrate_ms;
	dc->stats_ms = c->stats.interval_s * 1000u;
}

/*
 * One state, one process (fw_state_lock.h), for both responders: locks
 * [state] file and, without a fleet, the @n_workers static worker IDs of
 * [id] in [state] lock_dir. Call before reading the mark or claiming.
 * Returns 0 with *out set (free it after the keeper's final mark), or a
 * negated errno with one line in @err (the caller refuses to start).
 */
static inline int fw_state_lock_conf(const struct fw_conf *c, uint32_t n_workers,
				     struct fw_state_lock **out, char *err, size_t errlen)
{
	uint32_t ids[FW_KEEPER_WORKERS_MAX];
	int rc = fw_state_lock_take(c->state.file, out, err, errlen);
	if (rc != 0 || fw_conf_fleet_on(c))
		return rc;
	if (n_workers > FW_KEEPER_WORKERS_MAX)
		n_workers = FW_KEEPER_WORKERS_MAX;
	for (uint32_t i = 0; i < n_workers; i++)
		ids[i] = (uint32_t)fw_conf_worker(c, i);
	rc = fw_state_lock_workers(*out, c->state.lock_dir, ids, n_workers, c->id.worker_bits, err,
				   errlen);
	if (rc != 0) {
		fw_state_lock_free(*out);
		*out = NULL;
	}
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The keeper driver (the contract is in fw_keeper_driver.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fw_err.h"
#include "fw_keeper_driver.h"
#include "fw_time.h"

#define DEFAULT_TICK_MS 10

struct fw_keeper_driver {
	struct fw_keeper_driver_ops ops;
	uint32_t tick_ms, stats_ms;
	struct fw_keeper *k;
};

FW_API int fw_keeper_driver_start(const struct fw_keeper_driver_config *cfg,
				  struct fw_keeper_driver **out)
{
	const struct fw_keeper_driver_ops *o = cfg ? &cfg->ops : NULL;

	if (!cfg || !out || !o->ticks || !o->wall || !o->should_stop || !o->highest_issued)
		return -EINVAL;
	struct fw_keeper_driver *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ops = *o;
	d->tick_ms = cfg->tick_ms ? cfg->tick_ms : DEFAULT_TICK_MS;
	d->stats_ms = cfg->stats_ms;
	struct fw_keeper_config kc = cfg->keeper;
	if (!kc.log.fn)
		kc.log = o->log;
	int rc = fw_keeper_create(&kc, &d->k);
	if (rc) {
		fw_log(&d->ops.log, FW_LOG_ERR, "timekeeper: %s", fw_strerror(rc));
		free(d);
		return rc;
	}
	if (o->testclock_init && (rc = o->testclock_init(o->arg, d->k)) != 0) {
		fw_keeper_driver_free(d);
		return rc < 0 ? rc : -EINVAL;
	}
	uint64_t t0, n0, t1, n1;
	fw_keeper_sample(o->ticks, o->wall, o->arg, &t0, &n0);
	fw_sleep_ms(cfg->calibrate_ms);
	fw_keeper_sample(o->ticks, o->wall, o->arg, &t1, &n1);
	rc = fw_keeper_start(d->k, t0, n0, t1, n1, NULL);
	if (rc == FW_ECAL)
		fw_log(&d->ops.log, FW_LOG_ERR, "clock calibration failed: %s", fw_strerror(rc));
	if (rc) { /* the keeper logged why */
		fw_keeper_driver_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

FW_API struct fw_keeper *fw_keeper_driver_keeper(struct fw_keeper_driver *d)
{
	return d->k;
}

FW_API void fw_keeper_driver_run(struct fw_keeper_driver *d)
{
	const struct fw_keeper_driver_ops *o = &d->ops;
	uint64_t t = 0, next_stats = d->stats_ms;

	while (!o->should_stop(o->arg)) {
		uint64_t tick, ns;

		fw_sleep_ms(d->tick_ms);
		t += d->tick_ms;
		if (o->testclock_poll)
			o->testclock_poll(o->arg, d->k);
		fw_keeper_sample(o->ticks, o->wall, o->arg, &tick, &ns);
		uint32_t ev = fw_keeper_tick(d->k, tick, ns);
		if (o->on_tick)
			o->on_tick(o->arg, ev, tick, ns);
		if (d->stats_ms && o->stats && t >= next_stats) {
			o->stats(o->arg, (double)d->stats_ms / 1000.0);
			next_stats = t + d->stats_ms;
		}
	}
}

FW_API int fw_keeper_driver_stop(struct fw_keeper_driver *d)
{
	return fw_keeper_stop(d->k, d->ops.highest_issued(d->ops.arg), NULL);
}

FW_API void fw_keeper_driver_free(struct fw_keeper_driver *d)
{
	if (!d)
		return;
	fw_keeper_free(d->k);
	free(d);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The responder core: the fleet and the keeper (the contract is in fw_responder.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_responder_conf.h"
#include "fw_time.h"
#include "responder_impl.h"
#ifdef FW_RESPONDER_FLEET
#include "fw_responder_fleet.h"
#else
#include "fw_fleet_none.h"
#endif

uint64_t fw_responder_unix_ns(const struct fw_responder *r)
{
	return r->cfg.ops.wall ? r->cfg.ops.wall(r->cfg.ops.arg) : fw_wall_ns();
}

/* The keeper driver's callbacks: @arg is the core (struct fw_keeper_driver_ops.arg). */
static uint64_t wall_ns(void *arg)
{
	return fw_responder_testclock_ns(fw_responder_unix_ns(arg));
}

static bool should_stop(void *arg)
{
	const struct fw_responder *r = arg;

	return r->cfg.ops.should_stop(r->cfg.ops.arg);
}

static int testclock_init(void *arg, struct fw_keeper *k)
{
	struct fw_responder *r = arg;

	r->keeper = k; /* the test clock holds its slots in a pause */
	return fw_responder_testclock_init(r);
}

static void testclock_poll(void *arg, struct fw_keeper *k)
{
	(void)k;
	fw_responder_testclock_poll(arg);
}

static void on_tick(void *arg, uint32_t events, uint64_t tick, uint64_t wall)
{
	struct fw_responder *r = arg;

#ifdef FW_RESPONDER_FLEET
	if (r->fleet != NULL)
		fw_fleet_app_tick(r->fleet, r->keeper, events, tick, wall);
#else
	(void)events, (void)tick, (void)wall;
#endif
	if (r->cfg.ops.on_tick)
		r->cfg.ops.on_tick(r->cfg.ops.arg);
}

static void stats(void *arg, double interval_s)
{
	const struct fw_responder *r = arg;

	if (r->cfg.ops.stats)
		r->cfg.ops.stats(r->cfg.ops.arg, interval_s);
}

/* the workers are stopped: the exact highest ms issued replaces the reservation */
static uint64_t highest_issued(void *arg)
{
	const struct fw_responder *r = arg;
	uint64_t highest = 0;

	for (uint32_t i = 0; i < r->cfg.n_workers; i++) {
		struct fw_responder_worker w;
		r->cfg.ops.worker(r->cfg.ops.arg, i, &w);
		highest = FW_MAX(highest, fw_gen_last_ms(&w.serve->gen));
	}
	return highest;
}

#ifdef FW_RESPONDER_FLEET
static int fleet_start(struct fw_responder *r)
{
	char err[4096];
	int rc = fw_responder_fleet_start(
		r->cfg.conf, &r->cfg.layout, r->cfg.n_workers, r->cfg.state_stamp,
		r->cfg.ops.fleet_log.fn ? r->cfg.ops.fleet_log : r->cfg.ops.log, &r->fleet, err,
		sizeof(err));
	if (rc != 0) {
		fw_log(&r->cfg.ops.log, FW_LOG_ERR, "%s", err);
		fw_log(&r->cfg.ops.log, FW_LOG_ERR, "refusing to start (%s)", fw_strerror(rc));
		return -1;
	}
	return 0;
}
#else /* built without the fleet's store clients: [fleet] is refused */
static int fleet_start(struct fw_responder *r)
{
	char msg[256];

	if (fw_fleet_none_check(r->cfg.conf->fleet.zookeeper, r->cfg.conf->fleet.etcd, r->cfg.name,
				msg, sizeof(msg))) {
		fw_log(&r->cfg.ops.log, FW_LOG_ERR, "%s", msg);
		return -1;
	}
	return 0;
}
#endif

FW_API int fw_responder_create(const struct fw_responder_config *cfg, struct fw_responder **out)
{
	const struct fw_responder_ops *o = &cfg->ops;

	*out = NULL;
	if (!cfg->conf || !cfg->name || !o->ticks || !o->should_stop || !o->worker) {
		fw_log(&o->log, FW_LOG_ERR, "responder core: a required setting is missing");
		return -1;
	}
	struct fw_responder *r = calloc(1, sizeof(*r));
	if (!r) {
		fw_log(&o->log, FW_LOG_ERR, "responder core: out of memory");
		return -1;
	}
	r->cfg = *cfg;
	if (!r->cfg.ticks_name)
		r->cfg.ticks_name = "ticks";
	if (!r->cfg.pause_holds)
		r->cfg.pause_holds = "workers and keeper";
	if (fleet_start(r) != 0) {
		free(r);
		return -1;
	}
	*out = r;
	return 0;
}

FW_API int64_t fw_responder_worker(const struct fw_responder *r, uint32_t i)
{
#ifdef FW_RESPONDER_FLEET
	if (r->fleet != NULL)
		return fw_fleet_app_worker(r->fleet, i);
#endif
	return fw_conf_worker(r->cfg.conf, i);
}

FW_API bool fw_responder_has_fleet(const struct fw_responder *r)
{
	return r->fleet != NULL;
}

FW_API struct fw_fleet_app *fw_responder_fleet(struct fw_responder *r)
{
	return r->fleet;
}

FW_API int fw_responder_keeper_start(struct fw_responder *r)
{
	struct fw_keeper_driver_config dc;
	uint32_t ids[FW_KEEPER_WORKERS_MAX];
	char err[128];

	if (r->cfg.n_workers > FW_KEEPER_WORKERS_MAX) {
		fw_log(&r->cfg.ops.log, FW_LOG_ERR, "%u workers: at most %u", r->cfg.n_workers,
		       FW_KEEPER_WORKERS_MAX);
		return -1;
	}
	for (uint32_t i = 0; i < r->cfg.n_workers; i++) {
		int64_t w = fw_responder_worker(r, i);
		if (w < 0) {
			fw_log(&r->cfg.ops.log, FW_LOG_ERR,
			       "[id] workers lists %u worker IDs for %u workers",
			       r->cfg.conf->id.workers.n, r->cfg.n_workers);
			return -1;
		}
		ids[i] = (uint32_t)w;
	}
	if (fw_responder_driver_config(&dc, r->cfg.conf, r->cfg.layout.epoch_ms, r->cfg.n_workers,
				       ids, r->cfg.name, err, sizeof(err))) {
		fw_log(&r->cfg.ops.log, FW_LOG_ERR, "%s", err);
		return -1;
	}
	dc.tick_ms = r->cfg.tick_ms;
	dc.ops = (struct fw_keeper_driver_ops){
		.arg = r,
		.ticks = r->cfg.ops.ticks,
		.wall = wall_ns,
		.log = r->cfg.ops.log,
		.should_stop = should_stop,
		.testclock_init = testclock_init,
		.testclock_poll = testclock_poll,
		.on_tick = on_tick,
		.stats = stats,
		.highest_issued = highest_issued,
	};
	if (fw_keeper_driver_start(&dc, &r->driver)) {
		r->keeper = NULL;
		return -1; /* logged */
	}
	r->keeper = fw_keeper_driver_keeper(r->driver);
#ifdef FW_RESPONDER_FLEET
	if (r->fleet != NULL)
		fw_fleet_app_attach(r->fleet, r->keeper);
#endif
	return 0;
}

FW_API struct fw_keeper *fw_responder_keeper(struct fw_responder *r)
{
	return r->keeper;
}

FW_API void fw_responder_run(struct fw_responder *r)
{
	fw_keeper_driver_run(r->driver);
}

FW_API int fw_responder_keeper_stop(struct fw_responder *r)
{
	return r->driver ? fw_keeper_driver_stop(r->driver) : 0;
}

FW_API void fw_responder_fleet_stop(struct fw_responder *r)
{
#ifdef FW_RESPONDER_FLEET
	fw_fleet_app_free(r->fleet);
#endif
	r->fleet = NULL;
}

FW_API int fw_responder_fleet_release(struct fw_responder *r)
{
#ifdef FW_RESPONDER_FLEET
	if (r->fleet != NULL)
		return fw_fleet_app_release(r->fleet, FW_RESPONDER_RELEASE_MS);
#endif
	(void)r;
	return 0;
}

FW_API void fw_responder_free(struct fw_responder *r)
{
	if (r == NULL)
		return;
	fw_responder_metrics_stop(r);
	fw_responder_fleet_stop(r);
	fw_keeper_driver_free(r->driver);
	free(r);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock in a fleet: worker IDs claimed through ZooKeeper. The shared
 * glue (lib/fleet/fw_fleet_app.h) runs on the keeper thread and hands the
 * registry's results to the timekeeper; workers see them in their keeper
 * snapshot. Without [fleet] zookeeper nothing here runs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "flakesock.h"
#include "fw_err.h"

#ifdef FSOCK_HAVE_FLEET
#include "fw_responder_fleet.h"
#include "fw_state_lock.h"

static void log_cb(void *arg, enum fw_fleet_level lvl, const char *msg)
{
	char ts[FW_ISO8601_LEN];
	(void)arg;
	fprintf(stderr, "%s flakesock: %s%s\n", fw_format_iso8601(fsock_unix_ms(), ts),
		lvl == FW_FLEET_ERR    ? "ERROR "
		: lvl == FW_FLEET_WARN ? "WARNING "
				       : "",
		msg);
}

int fsock_fleet_start(struct fsock_ctx *ctx)
{
	char err[4096];
	int rc = fw_responder_fleet_start(&ctx->conf, &ctx->layout, ctx->n_workers,
				    fw_state_lock_stamp(ctx->lock), log_cb, NULL, &ctx->fleet, err,
				    sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "flakesock: %s\n", err);
		fprintf(stderr, "flakesock: refusing to start (%s)\n", fw_strerror(rc));
		return -1;
	}
	return 0;
}

uint32_t fsock_fleet_first_worker(const struct fsock_ctx *ctx, uint32_t i)
{
	if (ctx->fleet != NULL)
		return fw_fleet_app_worker(ctx->fleet, i);
	return (uint32_t)fw_conf_worker(&ctx->conf, i);
}

void fsock_fleet_attach(struct fsock_ctx *ctx)
{
	if (ctx->fleet != NULL)
		fw_fleet_app_attach(ctx->fleet, ctx->keeper);
}

void fsock_fleet_tick(struct fsock_ctx *ctx, uint32_t events, uint64_t tick, uint64_t wall_ns)
{
	if (ctx->fleet != NULL)
		fw_fleet_app_tick(ctx->fleet, ctx->keeper, events, tick, wall_ns);
}

void fsock_fleet_stop(struct fsock_ctx *ctx)
{
	fw_fleet_app_free(ctx->fleet);
	ctx->fleet = NULL;
}

#else /* no libzookeeper: [fleet] zookeeper is refused */
#include "fw_fleet_none.h"

int fsock_fleet_start(struct fsock_ctx *ctx)
{
	char msg[256];

	if (fw_fleet_none_check(ctx->conf.fleet.zookeeper, ctx->conf.fleet.etcd, "flakesock", msg,
				sizeof(msg))) {
		fprintf(stderr, "flakesock: %s\n", msg);
		return -1;
	}
	return 0;
}

uint32_t fsock_fleet_first_worker(const struct fsock_ctx *ctx, uint32_t i)
{
	return (uint32_t)fw_conf_worker(&ctx->conf, i);
}

void fsock_fleet_attach(struct fsock_ctx *ctx)
{
	(void)ctx;
}

void fsock_fleet_tick(struct fsock_ctx *ctx, uint32_t events, uint64_t tick, uint64_t wall_ns)
{
	(void)ctx, (void)events, (void)tick, (void)wall_ns;
}

void fsock_fleet_stop(struct fsock_ctx *ctx)
{
	(void)ctx;
}
#endif

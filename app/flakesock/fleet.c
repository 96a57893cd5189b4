/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock in a fleet: worker IDs claimed through ZooKeeper (lib/fleet).
 * The registry runs its own thread; every keeper tick copies its per-slot
 * results into the timekeeper (fw_keeper_set_worker for a new worker ID or
 * floor, fw_keeper_set_lease for a renewed lease), and workers see them in
 * their keeper snapshot, once per batch, like the mark. Without [fleet]
 * zookeeper nothing here runs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flakesock.h"
#include "fw_err.h"

#ifdef FSOCK_HAVE_FLEET
#include "fw_fleet.h"

struct fsock_fleet {
	struct fw_fleet *reg;
	struct fw_fleet_slot cur[FSOCK_MAX_WORKERS]; /* what the keeper was given */
	bool ended_logged[FSOCK_MAX_WORKERS];
	int32_t retiring[FSOCK_MAX_WORKERS]; /* replaced ID to retire once swapped, or -1 */
	uint64_t start_floor;                /* layout ms: the mark read at start */
};

static void log_cb(void *arg, enum fw_fleet_level lvl, const char *msg)
{
	char ts[FW_ISO8601_LEN];
	(void)arg;
	fprintf(stderr, "%s flakesock: %s%s\n", fw_format_iso8601(fsock_unix_ms(), ts),
		lvl == FW_FLEET_ERR ? "ERROR " : lvl == FW_FLEET_WARN ? "WARNING " : "", msg);
}

int fsock_fleet_start(struct fsock_ctx *ctx)
{
	const struct fw_conf *c = &ctx->conf;
	char host[FW_FLEET_IDENTITY_MAX], err[4096];
	struct fw_fleet_config fc;

	if (!c->fleet.zookeeper[0])
		return 0;
	struct fsock_fleet *ff = calloc(1, sizeof(*ff));
	if (ff == NULL)
		return -1;
	fw_fleet_config_default(&fc);
	fc.connect = c->fleet.zookeeper;
	fc.root = c->fleet.root;
	if (c->fleet.identity[0]) {
		fc.identity = c->fleet.identity;
	} else {
		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		fc.identity = host;
	}
	fc.cache_file = c->fleet.cache_file;
	fc.layout = ctx->layout;
	fc.lease_ms = c->fleet.lease_ms;
	fc.renew_ms = c->fleet.renew_ms;
	fc.session_timeout_ms = c->fleet.session_timeout_ms;
	fc.start_wait_ms = c->fleet.start_wait_ms;
	fc.max_offset_ms = c->fleet.max_offset_ms;
	fc.log = log_cb;
	int rc = fw_fleet_create(&fc, ctx->n_workers, &ff->reg, err, sizeof(err));
	if (rc == 0) {
		bool cached;
		rc = fw_fleet_start(ff->reg, &cached, err, sizeof(err));
	}
	if (rc != 0) {
		fprintf(stderr, "flakesock: %s\n", err);
		fprintf(stderr, "flakesock: refusing to start (%s)\n", fw_strerror(rc));
		fw_fleet_free(ff->reg);
		free(ff);
		return -1;
	}
	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		fw_fleet_slot(ff->reg, i, &ff->cur[i]);
		ff->retiring[i] = FW_FLEET_WORKER_NONE;
	}
	ctx->fleet = ff;
	return 0;
}

uint32_t fsock_fleet_first_worker(const struct fsock_ctx *ctx, uint32_t i)
{
	if (ctx->fleet != NULL)
		return ctx->fleet->cur[i].worker < 0 ? 0u : (uint32_t)ctx->fleet->cur[i].worker;
	return (uint32_t)fw_conf_worker(&ctx->conf, i);
}

/* The floor a slot's generator gets: the fleet's, and never below the mark read at start. */
static uint64_t floor_of(const struct fsock_fleet *ff, const struct fw_fleet_slot *s)
{
	return FW_MAX(s->floor_ms, ff->start_floor);
}

void fsock_fleet_attach(struct fsock_ctx *ctx)
{
	struct fsock_fleet *ff = ctx->fleet;
	struct fw_keeper_status st;
	if (ff == NULL)
		return;
	fw_keeper_status(ctx->keeper, &st);
	ff->start_floor = st.floor_unix_ms > ctx->layout.epoch_ms
				  ? st.floor_unix_ms - ctx->layout.epoch_ms
				  : 0;
	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		const struct fw_fleet_slot *s = &ff->cur[i];
		/* no worker ID (ZooKeeper down, no cache): lease 0, every reply NO_LEASE */
		fw_keeper_set_worker(ctx->keeper, i, fsock_fleet_first_worker(ctx, i),
				     floor_of(ff, s), s->worker < 0 ? 0 : s->lease_ms);
	}
}

void fsock_fleet_tick(struct fsock_ctx *ctx, uint32_t events)
{
	struct fsock_fleet *ff = ctx->fleet;
	char ts[FW_ISO8601_LEN], ts2[FW_ISO8601_LEN];
	if (ff == NULL)
		return;
	struct fw_keeper_status kst;
	fw_keeper_status(ctx->keeper, &kst);
	uint64_t now_unix = kst.now_unix_ms;
	uint64_t now_l = now_unix > ctx->layout.epoch_ms ? now_unix - ctx->layout.epoch_ms : 0;

	/* [clock] backstep = new_worker: a backward step beyond step_ms replaces
	 * every worker ID; each old one is retired at the last ms it issued. */
	if ((events & FW_KEEPER_EV_BACK_STEP) &&
	    ctx->conf.clock.backstep == FW_CONF_BACKSTEP_NEW_WORKER) {
		fprintf(stderr,
			"%s flakesock: WARNING system clock stepped back beyond [clock] step_ms "
			"and backstep = new_worker: claiming a fresh worker ID for every worker\n",
			fw_format_iso8601(fsock_unix_ms(), ts));
		for (uint32_t i = 0; i < ctx->n_workers; i++)
			fw_fleet_replace(ff->reg, i);
	}

	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		struct fw_fleet_slot s, *c = &ff->cur[i];
		uint64_t last;
		fw_fleet_slot(ff->reg, i, &s);
		if (s.gen != c->gen) {
			/* a new worker ID (or a raised floor): the worker swaps at its next batch */
			if (c->worker >= 0 && s.worker != c->worker && !c->lost)
				ff->retiring[i] = c->worker;
			fw_keeper_set_worker(ctx->keeper, i, s.worker < 0 ? 0u : (uint32_t)s.worker,
					     floor_of(ff, &s), s.worker < 0 ? 0 : s.lease_ms);
			ff->ended_logged[i] = false;
			*c = s;
		} else if (s.lease_ms != c->lease_ms) {
			fw_keeper_set_lease(ctx->keeper, i, s.lease_ms);
			*c = s;
		}
		if (ff->retiring[i] >= 0 && fw_keeper_worker_retired(ctx->keeper, i, &last)) {
			/* the old ID issued nothing above @last and never will again */
			fw_fleet_retire(ff->reg, ff->retiring[i], last);
			ff->retiring[i] = FW_FLEET_WORKER_NONE;
		}
		if (s.worker >= 0 && now_l > s.lease_ms && !ff->ended_logged[i]) {
			fprintf(stderr,
				"%s flakesock: WARNING worker %d: its confirmed lease ended at %s; "
				"answering NO_LEASE until ZooKeeper confirms a new one\n",
				fw_format_iso8601(fsock_unix_ms(), ts), s.worker,
				fw_format_iso8601(s.lease_ms + ctx->layout.epoch_ms, ts2));
			ff->ended_logged[i] = true;
		} else if (s.worker >= 0 && now_l <= s.lease_ms && ff->ended_logged[i]) {
			fprintf(stderr, "%s flakesock: worker %d: lease confirmed again; issuing\n",
				fw_format_iso8601(fsock_unix_ms(), ts), s.worker);
			ff->ended_logged[i] = false;
		}
	}
}

void fsock_fleet_stop(struct fsock_ctx *ctx)
{
	if (ctx->fleet == NULL)
		return;
	fw_fleet_free(ctx->fleet->reg);
	free(ctx->fleet);
	ctx->fleet = NULL;
}

#else /* no libzookeeper: [fleet] zookeeper is refused */

struct fsock_fleet {
	int unused;
};

int fsock_fleet_start(struct fsock_ctx *ctx)
{
	if (ctx->conf.fleet.zookeeper[0]) {
		fprintf(stderr, "flakesock: [fleet] zookeeper is set but this flakesock was built "
				"without the ZooKeeper client (libzookeeper-mt-dev)\n");
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

void fsock_fleet_tick(struct fsock_ctx *ctx, uint32_t events)
{
	(void)ctx, (void)events;
}

void fsock_fleet_stop(struct fsock_ctx *ctx)
{
	(void)ctx;
}
#endif

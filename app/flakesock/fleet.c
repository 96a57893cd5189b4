/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock in a fleet: worker IDs claimed through ZooKeeper (lib/fleet).
 * The registry runs its own thread; the keeper thread copies its per-slot
 * results into each worker's fields (a seqlock for worker ID and floor, an
 * atomic lease limit), and workers apply them once per batch. Without
 * [fleet] zookeeper nothing here runs and lease_ms stays UINT64_MAX.
 */
#include <errno.h>
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
	uint64_t applied_gen[FSOCK_MAX_WORKERS];
	int32_t worker[FSOCK_MAX_WORKERS];
	uint64_t lease[FSOCK_MAX_WORKERS];
	uint64_t retired_seen[FSOCK_MAX_WORKERS];
	bool ended_logged[FSOCK_MAX_WORKERS];
	bool retiring[FSOCK_MAX_WORKERS]; /* replaced: retire the old ID once swapped */
	uint64_t max_seen;     /* highest system clock reading (backstep detection) */
	bool backstep;         /* a backward step is being answered with new workers */
};

static void log_cb(void *arg, enum fw_fleet_level lvl, const char *msg)
{
	char ts[FW_ISO8601_LEN];
	(void)arg;
	fprintf(stderr, "%s flakesock: %s%s\n", fw_format_iso8601(fsock_unix_ms(), ts),
		lvl == FW_FLEET_ERR ? "ERROR " : lvl == FW_FLEET_WARN ? "WARNING " : "", msg);
}

static void publish_slot(struct fsock_worker *w, const struct fw_fleet_slot *sl)
{
	uint64_t s = atomic_load_explicit(&w->fleet_seq, memory_order_relaxed);
	atomic_store_explicit(&w->fleet_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&w->fleet_worker, sl->worker < 0 ? 0u : (uint32_t)sl->worker,
			      memory_order_relaxed);
	atomic_store_explicit(&w->fleet_floor, sl->floor_ms, memory_order_relaxed);
	atomic_store_explicit(&w->fleet_lease, sl->lease_ms, memory_order_relaxed);
	atomic_store_explicit(&w->fleet_seq, s + 2, memory_order_release);
}

int fsock_fleet_start(struct fsock_ctx *ctx)
{
	const struct fw_conf *c = &ctx->conf;
	char host[FW_FLEET_IDENTITY_MAX], err[4096];
	struct fw_fleet_config fc;

	for (uint32_t i = 0; i < ctx->n_workers; i++)
		ctx->workers[i].lease_ms = UINT64_MAX;
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
	ctx->fleet = ff;
	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		struct fw_fleet_slot sl;
		fw_fleet_slot(ff->reg, i, &sl);
		ff->worker[i] = sl.worker;
		ff->applied_gen[i] = sl.gen;
		ff->lease[i] = sl.lease_ms;
		/* before the workers start: their first batch applies it */
		publish_slot(&ctx->workers[i], &sl);
		ctx->workers[i].lease_ms = 0;
	}
	ff->max_seen = fsock_unix_ms();
	return 0;
}

uint32_t fsock_fleet_first_worker(const struct fsock_ctx *ctx, uint32_t i)
{
	if (ctx->fleet != NULL)
		return atomic_load(&ctx->workers[i].fleet_worker);
	return (uint32_t)fw_conf_worker(&ctx->conf, i);
}

void fsock_fleet_tick(struct fsock_ctx *ctx, uint64_t unix_now)
{
	struct fsock_fleet *ff = ctx->fleet;
	char ts[FW_ISO8601_LEN], ts2[FW_ISO8601_LEN];
	if (ff == NULL)
		return;
	uint64_t now_l = unix_now > ctx->layout.epoch_ms ? unix_now - ctx->layout.epoch_ms : 0;

	/* [clock] backstep = new_worker: a backward step beyond step_ms retires every
	 * worker ID and claims fresh ones, which issue at the system clock again. */
	if (unix_now > ff->max_seen)
		ff->max_seen = unix_now;
	if (ctx->conf.clock.backstep == FW_CONF_BACKSTEP_NEW_WORKER &&
	    unix_now + ctx->conf.clock.step_ms < ff->max_seen) {
		fprintf(stderr,
			"%s flakesock: WARNING system clock stepped back %" PRIu64
			" ms ([clock] backstep = new_worker): retiring every worker ID and claiming "
			"fresh ones\n",
			fw_format_iso8601(unix_now, ts), ff->max_seen - unix_now);
		for (uint32_t i = 0; i < ctx->n_workers; i++) {
			fw_fleet_replace(ff->reg, i);
			ff->retiring[i] = true;
		}
		ff->max_seen = unix_now;
	}

	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		struct fsock_worker *w = &ctx->workers[i];
		struct fw_fleet_slot s;
		fw_fleet_slot(ff->reg, i, &s);
		if (s.gen != ff->applied_gen[i] || s.lease_ms != ff->lease[i]) {
			/* a new worker ID, floor or lease: the worker applies it at its next batch */
			if (s.gen != ff->applied_gen[i])
				ff->ended_logged[i] = false;
			ff->applied_gen[i] = s.gen;
			ff->worker[i] = s.worker;
			ff->lease[i] = s.lease_ms;
			publish_slot(w, &s);
		}
		uint64_t seq = atomic_load_explicit(&w->retired_seq, memory_order_acquire);
		if (seq != ff->retired_seen[i]) {
			ff->retired_seen[i] = seq;
			uint32_t old = atomic_load(&w->retired_worker);
			if (ff->retiring[i] && (int32_t)old != s.worker) {
				/* the old ID issued nothing above retired_ms and never will again */
				fw_fleet_retire(ff->reg, (int32_t)old, atomic_load(&w->retired_ms));
				ff->retiring[i] = false;
			}
		}
		if (s.worker >= 0 && now_l > s.lease_ms && !ff->ended_logged[i]) {
			fprintf(stderr,
				"%s flakesock: WARNING worker %d: its confirmed lease ended at %s; "
				"answering NO_LEASE until ZooKeeper confirms a new one\n",
				fw_format_iso8601(unix_now, ts), s.worker,
				fw_format_iso8601(s.lease_ms + ctx->layout.epoch_ms, ts2));
			ff->ended_logged[i] = true;
		} else if (s.worker >= 0 && now_l <= s.lease_ms && ff->ended_logged[i]) {
			fprintf(stderr, "%s flakesock: worker %d: lease confirmed again; issuing\n",
				fw_format_iso8601(unix_now, ts), s.worker);
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

void fsock_fleet_apply(struct fsock_worker *w)
{
	struct fsock_ctx *ctx = w->ctx;
	uint64_t s1 = atomic_load_explicit(&w->fleet_seq, memory_order_acquire);
	if (s1 == w->fleet_applied || (s1 & 1))
		return;
	uint32_t worker = atomic_load_explicit(&w->fleet_worker, memory_order_relaxed);
	uint64_t floor = atomic_load_explicit(&w->fleet_floor, memory_order_relaxed);
	uint64_t lease = atomic_load_explicit(&w->fleet_lease, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&w->fleet_seq, memory_order_relaxed) != s1)
		return; /* being rewritten: next batch */
	uint32_t old = w->serve.gen.cfg.worker;
	if (worker != old) {
		uint64_t last = fw_gen_last_ms(&w->serve.gen);
		struct fw_gen_config gc = w->serve.gen.cfg;
		struct fw_serve_stats keep = w->serve.stats;
		struct fw_serve_config sc = w->serve.cfg; /* fw_serve_init clears *s first */
		uint32_t extra = w->serve.extra_flags;
		gc.worker = worker;
		if (fw_serve_init(&w->serve, &ctx->layout, &gc, &sc) != 0)
			return; /* cannot happen: the registry hands out IDs of this layout */
		w->serve.stats = keep;
		w->serve.extra_flags = extra;
		atomic_store_explicit(&w->retired_worker, old, memory_order_relaxed);
		atomic_store_explicit(&w->retired_ms, last, memory_order_relaxed);
		atomic_store_explicit(&w->retired_seq, s1, memory_order_release);
	}
	fw_gen_set_floor(&w->serve.gen, FW_MAX(floor, ctx->floor_ms));
	w->lease_ms = lease;
	w->fleet_applied = s1;
}

#else /* no libzookeeper: [fleet] zookeeper is refused */

struct fsock_fleet {
	int unused;
};

int fsock_fleet_start(struct fsock_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->n_workers; i++)
		ctx->workers[i].lease_ms = UINT64_MAX;
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

void fsock_fleet_tick(struct fsock_ctx *ctx, uint64_t unix_now)
{
	(void)ctx, (void)unix_now;
}

void fsock_fleet_stop(struct fsock_ctx *ctx)
{
	(void)ctx;
}

void fsock_fleet_apply(struct fsock_worker *w)
{
	(void)w;
}
#endif

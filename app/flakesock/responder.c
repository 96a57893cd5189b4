/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock's side of the responder core (lib/responder, fw_responder.h):
 * the core claims the worker IDs ([fleet]), drives the keeper on the main
 * thread ("keeper") on CLOCK_MONOTONIC_RAW ticks and serves /metrics; this
 * file gives it the ticks, the workers, the log (stderr), the stats line and
 * flakesock's own drop reasons. The keeper's time never steps back: after the
 * system clock steps back, workers keep issuing from it (slewing toward the
 * system clock), exactly as flakewire does.
 */
#include <stdio.h>
#include <string.h>

#include "flakesock.h"
#include "fw_time.h"

/* "<time> flakesock: <line>": the keeper's, /metrics' and the test clock's lines */
static void log_line(void *arg, enum fw_log_level level, const char *line)
{
	char ts[FW_ISO8601_LEN];

	(void)arg, (void)level;
	fprintf(stderr, "%s flakesock: %s\n", fw_format_iso8601(fw_wall_ms(), ts), line);
}

/* the registry's lines carry their level word, as they always did */
static void fleet_line(void *arg, enum fw_log_level level, const char *line)
{
	char ts[FW_ISO8601_LEN];

	(void)arg;
	fprintf(stderr, "%s flakesock: %s%s\n", fw_format_iso8601(fw_wall_ms(), ts),
		level == FW_LOG_ERR       ? "ERROR "
		: level == FW_LOG_WARNING ? "WARNING "
					  : "",
		line);
}

static bool should_stop(void *arg)
{
	const struct fsock_ctx *ctx = arg;

	return *ctx->stop;
}

static bool running(void *arg)
{
	struct fsock_ctx *ctx = arg;

	return atomic_load_explicit(&ctx->running, memory_order_acquire);
}

static void worker(void *arg, uint32_t i, struct fw_responder_worker *w)
{
	struct fsock_ctx *ctx = arg;
	struct fsock_worker *t = &ctx->workers[i];

	*w = (struct fw_responder_worker){.key = i, .slot = t->kw.slot, .serve = &t->serve};
}

static uint32_t drops(void *arg, uint32_t i, struct fw_responder_drop *out, uint32_t cap)
{
	const struct fsock_ctx *ctx = arg;
	const struct fsock_worker *t = &ctx->workers[i];

	if (cap < 3)
		return 0;
	out[0] = (struct fw_responder_drop){"source", t->drop_source};
	out[1] = (struct fw_responder_drop){"reflector_port", t->drop_reflector};
	out[2] = (struct fw_responder_drop){"martian", t->drop_martian};
	return 3;
}

static struct fw_serve_stats prev_stats; /* the keeper thread's: totals at the last line */

static void stats(void *arg, double secs)
{
	const struct fsock_ctx *ctx = arg;
	struct fw_serve_stats t, *prev = &prev_stats;

	memset(&t, 0, sizeof(t));
	for (uint32_t i = 0; i < ctx->n_workers; i++)
		fw_serve_stats_add(&t, &ctx->workers[i].serve.stats);
	uint64_t drops = 0;
	for (int i = 0; i < FW_SERVE_DROP_COUNT; i++)
		drops += t.drops[i];
	for (uint32_t i = 0; i < ctx->n_workers; i++)
		drops += ctx->workers[i].drop_source + ctx->workers[i].drop_reflector +
			 ctx->workers[i].drop_martian;
	printf("stats: %.0f req/s %.0f ids/s | requests %llu ids %llu ok %llu retry %llu "
	       "unsafe %llu refused %llu bad %llu drops %llu\n",
	       (double)(t.requests - prev->requests) / secs, (double)(t.ids - prev->ids) / secs,
	       (unsigned long long)t.requests, (unsigned long long)t.ids,
	       (unsigned long long)t.status[FW_WIRE_ST_OK],
	       (unsigned long long)t.status[FW_WIRE_ST_RETRY_AFTER],
	       (unsigned long long)t.status[FW_WIRE_ST_CLOCK_UNSAFE],
	       (unsigned long long)t.status[FW_WIRE_ST_REFUSED],
	       (unsigned long long)(t.status[FW_WIRE_ST_BAD_REQUEST] +
				    t.status[FW_WIRE_ST_BAD_VERSION]),
	       (unsigned long long)drops);
	fflush(stdout);
	*prev = t;
}

int fsock_responder_create(struct fsock_ctx *ctx)
{
	struct fw_responder_config rc = {
		.conf = &ctx->conf,
		.layout = ctx->layout,
		.name = "flakesock",
		.n_workers = ctx->n_workers,
		.worker_label = "thread",
		.workers_help = "Worker threads (worker IDs)",
		.drops_help = "Datagrams dropped without a reply, by reason",
		.state_stamp = fw_state_lock_stamp(ctx->lock),
		.ticks_name = "ticks",
		.pause_holds = "workers and keeper",
		/* ns, and the keeper and the workers read fw_responder_monoraw_ticks */
		.fault_ticks_per_ms = 1000000,
		.status_env = "FLAKESOCK_TEST_STATUS",
		.ops =
			{
				.arg = ctx,
				.ticks = fw_responder_monoraw_ticks,
				.log = {log_line, NULL},
				.fleet_log = {fleet_line, NULL},
				.should_stop = should_stop,
				.worker = worker,
				.slots_set = running,
				.serving = running,
				.stats = stats,
				.drops = drops,
			},
	};
	return fw_responder_create(&rc, &ctx->core);
}

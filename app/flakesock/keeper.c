/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper thread: flakesock's side of the keeper driver (lib/keeper,
 * fw_keeper_driver.h), the same driver as flakewire's control thread, on
 * CLOCK_MONOTONIC_RAW ticks instead of the TSC. Its time never steps back:
 * after the system clock steps back, workers keep issuing from it (slewing
 * toward the system clock), exactly as flakewire does. This file gives the
 * driver the ticks, the test-clock hooks, the fleet glue's tick, the log
 * (stderr) and the stats line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "flakesock.h"
#include "fw_err.h"
#include "fw_responder_conf.h"
#include "fw_keeper_driver.h"

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void log_line(const char *fmt, ...)
{
	char ts[FW_ISO8601_LEN];
	va_list ap;
	fprintf(stderr, "%s flakesock: ", fw_format_iso8601(fsock_unix_ms(), ts));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void keeper_log(void *arg, enum fw_log_level level, const char *line)
{
	(void)arg;
	(void)level;
	log_line("%s", line);
}

uint64_t fsock_wall_ns(void)
{
	return fsock_testclock_ns(fw_keeper_realtime_ns());
}

static bool should_stop(void *arg)
{
	const struct fsock_ctx *ctx = arg;

	return *ctx->stop;
}

static int testclock_init(void *arg, struct fw_keeper *k)
{
	struct fsock_ctx *ctx = arg;

	ctx->keeper = k; /* the test clock holds its slots in a pause */
	return fsock_testclock_init(ctx);
}

static void testclock_poll(void *arg, struct fw_keeper *k)
{
	(void)k;
	fsock_testclock_poll(arg);
}

static void on_tick(void *arg, uint32_t events, uint64_t tick, uint64_t wall_ns)
{
	fsock_fleet_tick(arg, events, tick, wall_ns);
}

static struct fw_serve_stats prev_stats; /* the keeper thread's: totals at the last line */

static void print_stats(struct fsock_ctx *ctx, struct fw_serve_stats *prev, double secs);

static void stats(void *arg, double interval_s)
{
	print_stats(arg, &prev_stats, interval_s);
}

/* workers are stopped: the exact highest ms issued replaces the reservation */
static uint64_t highest_issued(void *arg)
{
	const struct fsock_ctx *ctx = arg;
	uint64_t highest = 0;

	for (uint32_t i = 0; i < ctx->n_workers; i++)
		highest = FW_MAX(highest, fw_gen_last_ms(&ctx->workers[i].serve.gen));
	return highest;
}

int fsock_keeper_start(struct fsock_ctx *ctx)
{
	const struct fw_conf *c = &ctx->conf;
	struct fw_keeper_driver_config dc;
	uint32_t ids[FSOCK_MAX_WORKERS];

	for (uint32_t i = 0; i < ctx->n_workers; i++)
		ids[i] = fsock_fleet_first_worker(ctx, i);
	char err[128];

	if (fw_responder_driver_config(&dc, c, ctx->layout.epoch_ms, ctx->n_workers, ids,
				       "flakesock", err, sizeof(err))) {
		log_line("%s", err);
		return -1;
	}
	dc.ops = (struct fw_keeper_driver_ops){
		.arg = ctx,
		.ticks = fw_keeper_monoraw_ticks,
		.wall = fsock_wall_ns,
		.log = {keeper_log, NULL},
		.should_stop = should_stop,
		.testclock_init = testclock_init,
		.testclock_poll = testclock_poll,
		.on_tick = on_tick,
		.stats = stats,
		.highest_issued = highest_issued,
	};
	if (fw_keeper_driver_start(&dc, &ctx->driver)) {
		ctx->keeper = NULL;
		return -1; /* logged */
	}
	ctx->keeper = fw_keeper_driver_keeper(ctx->driver);
	return 0;
}

void fsock_keeper_worker_init(struct fsock_ctx *ctx, struct fsock_worker *w)
{
	struct fw_keeper_slot *slots = fw_keeper_slots(ctx->keeper, NULL);

	fw_keeper_worker_init(&w->kw, &slots[w->index], &w->serve.gen);
}

static void print_stats(struct fsock_ctx *ctx, struct fw_serve_stats *prev, double secs)
{
	struct fw_serve_stats t;
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

void fsock_keeper_run(struct fsock_ctx *ctx)
{
	fw_keeper_driver_run(ctx->driver);
}

int fsock_keeper_stop(struct fsock_ctx *ctx)
{
	int rc = fw_keeper_driver_stop(ctx->driver);

	fw_keeper_driver_free(ctx->driver);
	ctx->driver = NULL;
	ctx->keeper = NULL;
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper thread: a thin driver of the timekeeper (lib/keeper), the same
 * state machine as flakewire's control thread, on CLOCK_MONOTONIC_RAW ticks
 * instead of the TSC. Its time never steps back: after the system clock
 * steps back, workers keep issuing from it (slewing toward the system
 * clock), exactly as flakewire does. This file samples the clocks, sleeps,
 * routes the keeper's lines to stderr and prints the stats line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "flakesock.h"
#include "fw_err.h"
#include "fw_keeper_conf.h"

#define TICK_MS 10

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

static void keeper_log(void *arg, enum fw_keeper_level level, const char *line)
{
	(void)arg;
	(void)level;
	log_line("%s", line);
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

uint64_t fsock_wall_ns(void)
{
	return fsock_testclock_ns(fw_keeper_realtime_ns());
}

static void sample(uint64_t *tick, uint64_t *ns)
{
	fw_keeper_sample(fw_keeper_monoraw_ticks, fsock_wall_ns, tick, ns);
}

int fsock_keeper_start(struct fsock_ctx *ctx)
{
	const struct fw_conf *c = &ctx->conf;
	struct fw_keeper_config kc;
	uint32_t ids[FSOCK_MAX_WORKERS];
	uint64_t t0, n0, t1, n1;
	int rc;

	for (uint32_t i = 0; i < ctx->n_workers; i++)
		ids[i] = fsock_fleet_first_worker(ctx, i);
	fw_keeper_config_from_conf(&kc, c, ctx->layout.epoch_ms);
	kc.n_workers = ctx->n_workers;
	kc.worker_ids = ids;
	kc.name = "flakesock";
	kc.log = keeper_log;
	rc = fw_keeper_create(&kc, &ctx->keeper);
	if (rc) {
		log_line("timekeeper: %s", fw_strerror(rc));
		return -1;
	}
	if (fsock_testclock_init(ctx))
		return -1;
	sample(&t0, &n0);
	sleep_ms(c->clock.calibrate_ms);
	sample(&t1, &n1);
	rc = fw_keeper_start(ctx->keeper, t0, n0, t1, n1, NULL);
	if (rc == FW_ECAL)
		log_line("clock calibration failed: %s", fw_strerror(rc));
	return rc ? -1 : 0; /* the keeper logged why */
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
		drops += ctx->workers[i].drop_source + ctx->workers[i].drop_reflector;
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
	uint64_t t = 0, next_stats = 0;
	uint64_t stats_ms = (uint64_t)ctx->conf.stats.interval_s * 1000;
	struct fw_serve_stats prev;

	memset(&prev, 0, sizeof(prev));
	next_stats = stats_ms;
	while (!*ctx->stop) {
		uint64_t tick, ns;

		sleep_ms(TICK_MS);
		t += TICK_MS;
		fsock_testclock_poll(ctx);
		sample(&tick, &ns);
		fsock_fleet_tick(ctx, fw_keeper_tick(ctx->keeper, tick, ns), tick, ns);
		if (stats_ms && t >= next_stats) {
			print_stats(ctx, &prev, (double)ctx->conf.stats.interval_s);
			next_stats = t + stats_ms;
		}
	}
}

int fsock_keeper_stop(struct fsock_ctx *ctx)
{
	uint64_t highest = 0;

	/* workers are stopped: the exact highest ms issued replaces the reservation */
	for (uint32_t i = 0; i < ctx->n_workers; i++)
		highest = FW_MAX(highest, fw_gen_last_ms(&ctx->workers[i].serve.gen));
	int rc = fw_keeper_stop(ctx->keeper, highest, NULL);
	fw_keeper_free(ctx->keeper);
	ctx->keeper = NULL;
	return rc;
}

/*
 * The test-clock hooks do nothing in flakesock. They are weak so that
 * flakesock-testclock (these objects plus testclock.c) replaces them; no
 * setting or environment variable reaches them in the flakesock binary.
 */
__attribute__((weak)) int fsock_testclock_init(struct fsock_ctx *ctx)
{
	(void)ctx;
	return 0;
}

__attribute__((weak)) void fsock_testclock_poll(struct fsock_ctx *ctx)
{
	(void)ctx;
}

__attribute__((weak)) uint64_t fsock_testclock_ns(uint64_t ns)
{
	return ns;
}

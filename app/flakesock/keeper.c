/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "flakesock.h"
#include "fw_err.h"
#include "fw_mark.h"

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

/* Writes and publishes a new mark (unix ms). Workers see it on their next batch. */
static int reserve(struct fsock_ctx *ctx, uint64_t unix_mark)
{
	int rc = fw_mark_write(ctx->conf.state.file, unix_mark);
	if (rc != 0)
		return rc;
	/* A mark before the epoch (clock behind an epoch set ahead) allows no ms. */
	uint64_t epoch = ctx->layout.epoch_ms;
	atomic_store_explicit(&ctx->mark_ms, unix_mark > epoch ? unix_mark - epoch : 0,
			      memory_order_release);
	return 0;
}

int fsock_keeper_start(struct fsock_ctx *ctx)
{
	const char *path = ctx->conf.state.file;
	uint64_t mark = 0, now = fsock_unix_ms();
	int rc = fw_mark_read(path, &mark);

	if (rc == -ENOENT) {
		log_line("state file %s does not exist: first start", path);
		mark = 0;
	} else if (rc != 0) {
		log_line("state file %s: %s; refusing to start: restore it, or, if no ID from "
			 "this node can be above a known time, write that time with "
			 "'flakectl mark %s --set UNIX_MS --force'",
			 path, fw_strerror(rc), path);
		return -1;
	} else {
		char ts[FW_ISO8601_LEN];
		log_line("state file %s: IDs were reserved up to %s (%llu)", path,
			 fw_format_iso8601(mark, ts), (unsigned long long)mark);
	}
	if (mark > now && ctx->conf.state.start_policy == FW_CONF_START_FAIL &&
	    mark - now > ctx->conf.state.mark_ahead_ms) {
		log_line("system clock is %llu ms behind the mark and [state] start_policy = fail",
			 (unsigned long long)(mark - now));
		return -1;
	}
	if (mark > now)
		log_line("system clock is %llu ms behind the mark: answering retry-after until it "
			 "passes it",
			 (unsigned long long)(mark - now));

	ctx->floor_ms = mark > ctx->layout.epoch_ms ? mark - ctx->layout.epoch_ms : 0;
	/* Reserve from the clock, not from the old mark: a crash loop while the
	 * clock is behind must not push the mark further ahead each time. */
	rc = reserve(ctx, FW_MAX(mark, now + ctx->conf.state.mark_ahead_ms));
	if (rc != 0) {
		log_line("cannot write state file %s: %s", path, fw_strerror(rc));
		return -1;
	}
	return 0;
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
	const struct timespec tick = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
	uint64_t ahead = ctx->conf.state.mark_ahead_ms;
	uint64_t last_stats = fsock_unix_ms();
	struct fw_serve_stats prev;
	bool failing = false;

	memset(&prev, 0, sizeof(prev));
	while (!*ctx->stop) {
		nanosleep(&tick, NULL);
		uint64_t now = fsock_unix_ms();
		uint64_t mark = atomic_load(&ctx->mark_ms) + ctx->layout.epoch_ms;
		/* Extend at half the lead; on failure keep the old mark, so workers
		 * answer retry-after instead of issuing beyond what is persisted. */
		if (mark < now + ahead / 2) {
			int rc = reserve(ctx, now + ahead);
			if (rc != 0 && !failing)
				log_line("cannot persist the mark to %s: %s; IDs stop at the old "
					 "mark until it can be written",
					 ctx->conf.state.file, fw_strerror(rc));
			else if (rc == 0 && failing)
				log_line("mark persisted again to %s; issuing resumes",
					 ctx->conf.state.file);
			failing = rc != 0;
			atomic_store(&ctx->mark_failing, failing);
			if (failing)
				atomic_fetch_add(&ctx->mark_failures, 1);
		}
		uint32_t interval = ctx->conf.stats.interval_s;
		if (interval != 0 && now - last_stats >= interval * 1000ull) {
			print_stats(ctx, &prev, (double)(now - last_stats) / 1000.0);
			last_stats = now;
		}
	}
}

int fsock_keeper_stop(struct fsock_ctx *ctx)
{
	uint64_t last = ctx->floor_ms;
	for (uint32_t i = 0; i < ctx->n_workers; i++)
		last = FW_MAX(last, atomic_load(&ctx->workers[i].last_ms));
	int rc = fw_mark_write(ctx->conf.state.file, last + ctx->layout.epoch_ms);
	if (rc != 0)
		log_line("cannot write the final mark to %s: %s (the reserved mark stays, a "
			 "restart waits for it)",
			 ctx->conf.state.file, fw_strerror(rc));
	else
		log_line("stopped; mark %llu persisted to %s",
			 (unsigned long long)(last + ctx->layout.epoch_ms), ctx->conf.state.file);
	return rc;
}

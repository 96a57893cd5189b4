/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The injectable clock of flakesock-testclock: flakesock's own objects with
 * this file in place of testclock_none.c (the hooks of flakesock.h).
 * Only tests/system/faults run it; flakesock has no code that reads a fault
 * file. The fault file (FLAKEWIRE_TEST_CLOCK, keys offset_ms, tsc_ppm or
 * tick_ppm, pause_ms) is read by lib/keeper's testclock.c (fw_testclock.h),
 * shared with flakewire-testclock. A pause holds every worker (the keeper's
 * slots are held mid-write) while the clocks go on.
 *
 * FLAKESOCK_TEST_STATUS=PATH: every 100 ms the keeper's state is written
 * there as one JSON object with the keys of flakewire's /flakewire/clock
 * telemetry (generation, offset_ns, slew_ppb, flags, mark_unix_ms, ...) plus
 * gen_unsafe, so the fault tests read both responders the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flakesock.h"
#include "fw_testclock.h"
#include "fw_time.h"

static struct {
	char status[PATH_MAX];
	uint64_t pauses;
	unsigned polls;
} tc;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "flakesock: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t fsock_testclock_ns(uint64_t ns)
{
	return fw_testclock_apply(ns);
}

static void write_status(struct fsock_ctx *ctx)
{
	struct fw_keeper_status st;
	struct fw_clock_cal nominal;
	char tmp[PATH_MAX + 8];
	uint64_t unsafe = 0;
	FILE *f;

	if (!tc.status[0] || !ctx->keeper)
		return;
	fw_keeper_status(ctx->keeper, &st);
	nominal = st.cal;
	nominal.mult = st.cal.nominal_mult;
	for (uint32_t i = 0; i < ctx->n_workers; i++)
		unsafe += fw_gen_stats(&ctx->workers[i].serve.gen)
				  ->unsafe; /* racy read: tests only */
	snprintf(tmp, sizeof(tmp), "%s.tmp", tc.status);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f,
		"{\"hz\": %.0f, \"nominal_hz\": %.0f, \"offset_ns\": %" PRId64
		", \"slew_ppb\": %d, \"flags\": %u, \"generation\": %" PRIu64
		", \"mark_unix_ms\": %" PRIu64 ", \"floor_unix_ms\": %" PRIu64
		", \"mark_writes\": %" PRIu64 ", \"mark_failures\": %" PRIu64
		", \"mark_failing\": %d, \"clock_events\": %" PRIu64 ", \"epoch_ms\": %" PRIu64
		", \"gen_unsafe\": %" PRIu64 ", \"pauses\": %" PRIu64 "}\n",
		fw_clock_hz(&st.cal), fw_clock_hz(&nominal), st.cal.offset_ns, st.cal.slew_ppb,
		st.cal.flags, st.cal.generation, st.mark_unix_ms, st.floor_unix_ms, st.mark_writes,
		st.mark_failures, st.mark_failing ? 1 : 0, st.clock_events, ctx->layout.epoch_ms,
		unsafe, tc.pauses);
	fclose(f);
	rename(tmp, tc.status);
}

static void poll_file(struct fsock_ctx *ctx, bool may_pause)
{
	struct fw_testclock_faults f;
	char msg[512];
	int rc = fw_testclock_reload(&f, msg, sizeof(msg));

	if (rc < 0)
		say("%s", msg);
	if (rc <= 0)
		return;
	say("test clock: system clock offset %+" PRId64 " ms, ticks %+" PRId64 " ppm", f.offset_ms,
	    f.ppm);
	if (f.pause_ms && may_pause && ctx->keeper) {
		say("test clock: pause %" PRId64 " ms (workers and keeper stop)", f.pause_ms);
		fw_keeper_hold(ctx->keeper, true);
		fw_sleep_ms((uint32_t)f.pause_ms);
		fw_keeper_hold(ctx->keeper, false);
		tc.pauses++;
		say("test clock: pause %" PRIu64 " over", tc.pauses);
	}
}

void fsock_testclock_poll(struct fsock_ctx *ctx)
{
	poll_file(ctx, true);
	if (++tc.polls % 10 == 0)
		write_status(ctx);
}

int fsock_testclock_init(struct fsock_ctx *ctx)
{
	const char *path = getenv("FLAKEWIRE_TEST_CLOCK");
	const char *status = getenv("FLAKESOCK_TEST_STATUS");

	if (status && *status) {
		if (strlen(status) >= sizeof(tc.status) - 8) {
			say("test clock: FLAKESOCK_TEST_STATUS is too long");
			return -1;
		}
		snprintf(tc.status, sizeof(tc.status), "%s", status);
	}
	if (!path || !*path) {
		say("test clock: FLAKEWIRE_TEST_CLOCK is not set: no clock faults");
		return 0;
	}
	if (fw_testclock_open(path)) {
		say("test clock: FLAKEWIRE_TEST_CLOCK is too long");
		return -1;
	}
	say("TEST CLOCK: system-clock samples pass through the faults in %s "
	    "(flakesock-testclock is for fault tests only)",
	    path);
	poll_file(ctx, false);
	return 0;
}

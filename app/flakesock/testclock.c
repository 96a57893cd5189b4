/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The injectable clock of flakesock-testclock: flakesock's own objects plus
 * this file, whose definitions replace the weak no-op hooks of keeper.c.
 * Only tests/system/faults run it; flakesock has no code that reads a fault
 * file. The fault file is the one of flakewire-testclock (testclock.c
 * there): FLAKEWIRE_TEST_CLOCK=PATH, lines offset_ms=N, tick_ppm=P (alias
 * tsc_ppm: the tick source runs P ppm fast), pause_ms=N (workers stop: every
 * keeper slot is held mid-write).
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

__extension__ typedef __int128 s128;

#define FILE_MAX 4096
#define PPM_MAX  100000

static struct {
	bool on;
	char path[PATH_MAX];
	char status[PATH_MAX];
	uint64_t hash;
	bool have_hash;
	int64_t offset_ns;
	int64_t ppm;
	uint64_t anchor_real;
	uint64_t anchor_fake;
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

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t scaled(uint64_t real)
{
	s128 d = (s128)real - (s128)tc.anchor_real;

	return (uint64_t)((s128)tc.anchor_fake + d * 1000000 / (1000000 + tc.ppm));
}

uint64_t fsock_testclock_ns(uint64_t ns)
{
	if (!tc.on)
		return ns;
	return (uint64_t)((int64_t)scaled(ns) + tc.offset_ns);
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static int parse(char *text, int64_t *offset_ms, int64_t *ppm, int64_t *pause_ms)
{
	char *save = NULL;

	*offset_ms = *ppm = *pause_ms = 0;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), *eq, *end;
		long long v;

		if (hash)
			*hash = '\0';
		line += strspn(line, " \t\r");
		if (*line == '\0')
			continue;
		eq = strchr(line, '=');
		if (!eq)
			goto bad;
		*eq = '\0';
		errno = 0;
		v = strtoll(eq + 1, &end, 10);
		if (errno || end == eq + 1 || end[strspn(end, " \t\r")] != '\0')
			goto bad;
		if (!strcmp(line, "offset_ms") && v > -INT64_MAX / 1000000 &&
		    v < INT64_MAX / 1000000)
			*offset_ms = v;
		else if ((!strcmp(line, "tsc_ppm") || !strcmp(line, "tick_ppm")) && v > -PPM_MAX &&
			 v < PPM_MAX)
			*ppm = v;
		else if (!strcmp(line, "pause_ms") && v >= 0 && v <= 60000)
			*pause_ms = v;
		else
			goto bad;
		continue;
	bad:
		say("test clock: %s: bad line \"%s\" (keys offset_ms, tsc_ppm, pause_ms)", tc.path,
		    line);
		return -1;
	}
	return 0;
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
		unsafe += fw_gen_stats(&ctx->workers[i].serve.gen)->unsafe; /* racy read: tests only */
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
	char buf[FILE_MAX + 1];
	size_t n = 0;
	int64_t offset_ms, ppm, pause_ms;
	FILE *f;

	if (!tc.on)
		return;
	f = fopen(tc.path, "r");
	if (f) {
		n = fread(buf, 1, FILE_MAX, f);
		fclose(f);
	}
	buf[n] = '\0';
	uint64_t h = fnv1a(buf, n);
	if (tc.have_hash && h == tc.hash)
		return;
	tc.hash = h;
	tc.have_hash = true;
	if (parse(buf, &offset_ms, &ppm, &pause_ms))
		return;
	if (ppm != tc.ppm) {
		uint64_t real = fw_keeper_realtime_ns();

		tc.anchor_fake = scaled(real);
		tc.anchor_real = real;
		tc.ppm = ppm;
	}
	tc.offset_ns = offset_ms * 1000000;
	say("test clock: system clock offset %+" PRId64 " ms, ticks %+" PRId64 " ppm", offset_ms,
	    ppm);
	if (pause_ms && may_pause && ctx->keeper) {
		say("test clock: pause %" PRId64 " ms (workers and keeper stop)", pause_ms);
		fw_keeper_hold(ctx->keeper, true);
		sleep_ms((uint32_t)pause_ms);
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

	if (status && *status)
		snprintf(tc.status, sizeof(tc.status), "%s", status);
	if (!path || !*path) {
		say("test clock: FLAKEWIRE_TEST_CLOCK is not set: no clock faults");
		return 0;
	}
	if (strlen(path) >= sizeof(tc.path) || strlen(tc.status) >= sizeof(tc.status) - 1) {
		say("test clock: FLAKEWIRE_TEST_CLOCK is too long");
		return -1;
	}
	snprintf(tc.path, sizeof(tc.path), "%s", path);
	tc.on = true;
	say("TEST CLOCK: system-clock samples pass through the faults in %s "
	    "(flakesock-testclock is for fault tests only)",
	    tc.path);
	poll_file(ctx, false);
	return 0;
}

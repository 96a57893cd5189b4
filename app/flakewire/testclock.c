/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The injectable clock of flakewire-testclock: the responder built from the
 * very objects of flakewire plus this file, whose definitions replace the
 * weak no-op hooks of clock_pub.c. Only tests/system/faults run it; the
 * flakewire binary has no code that reads a fault file.
 *
 * FLAKEWIRE_TEST_CLOCK=PATH names the fault file. The control thread reads
 * it at start and every tick (10 ms); a missing file means no fault. Lines
 * "key=value", '#' starts a comment:
 *   offset_ms=N  added to every system-clock sample: -3 is the system clock
 *                stepped back 3 ms, 3600000 stepped forward an hour
 *   tsc_ppm=P    from when it is read, the TSC runs P ppm fast against the
 *                system clock (samples advance 1 / (1 + P/1e6) as fast)
 *   pause_ms=N   once each time the file's content changes: lcores, the
 *                telemetry thread and the control thread stop for N ms while
 *                the TSC and the system clock go on, as in a VM pause (the
 *                clock publication is held mid-write, so every reader waits)
 * Only the control thread's samples change: lcores see every fault through
 * the published calibration, the production path.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_app.h"

__extension__ typedef __int128 s128;

#define FILE_MAX 4096
#define PPM_MAX  100000 /* 10%: beyond that it is not a rate error but a broken clock */

static struct {
	bool on;
	char path[PATH_MAX];
	uint64_t hash; /* of the content last applied */
	bool have_hash;
	int64_t offset_ns;
	int64_t ppm;
	uint64_t anchor_real; /* real sample where the current ppm took effect */
	uint64_t anchor_fake; /* its scaled value (offset not included) */
	uint64_t pauses;
} tc;

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

uint64_t fw_testclock_ns(uint64_t ns)
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

/* Holds every keeper slot's seqlock odd: lcores spin until it is released. */
static void pause_all(struct fw_app *app, uint32_t ms)
{
	FW_LOG(WARNING, "test clock: pause %u ms (lcores, telemetry and control stop)", ms);
	fw_keeper_hold(app->keeper, true);
	sleep_ms(ms);
	fw_keeper_hold(app->keeper, false);
	tc.pauses++;
	FW_LOG(WARNING, "test clock: pause %" PRIu64 " over", tc.pauses);
}

/* Parses @text; returns 0 with the values set, or -1 (logged) on a bad line. */
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
		else if (!strcmp(line, "tsc_ppm") && v > -PPM_MAX && v < PPM_MAX)
			*ppm = v;
		else if (!strcmp(line, "pause_ms") && v >= 0 && v <= 60000)
			*pause_ms = v;
		else
			goto bad;
		continue;
	bad:
		FW_LOG(ERR, "test clock: %s: bad line \"%s\" (keys offset_ms, tsc_ppm, pause_ms)",
		       tc.path, line);
		return -1;
	}
	return 0;
}

/* Applies the fault file when its content changed; pauses only from the control thread. */
static void poll_file(struct fw_app *app, bool may_pause)
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
	tc.hash = h; /* a bad file is reported once, and changes nothing */
	tc.have_hash = true;
	if (parse(buf, &offset_ms, &ppm, &pause_ms))
		return;
	if (ppm != tc.ppm) {
		uint64_t real = fw_realtime_ns();

		tc.anchor_fake = scaled(real);
		tc.anchor_real = real;
		tc.ppm = ppm;
	}
	tc.offset_ns = offset_ms * 1000000;
	FW_LOG(WARNING, "test clock: system clock offset %+" PRId64 " ms, TSC %+" PRId64 " ppm",
	       offset_ms, ppm);
	if (pause_ms && may_pause)
		pause_all(app, (uint32_t)pause_ms);
}

void fw_testclock_poll(struct fw_app *app)
{
	poll_file(app, true);
}

int fw_testclock_init(struct fw_app *app)
{
	const char *path = getenv("FLAKEWIRE_TEST_CLOCK");

	if (!path || !*path) {
		FW_LOG(WARNING, "test clock: FLAKEWIRE_TEST_CLOCK is not set: no clock faults");
		return 0;
	}
	if (strlen(path) >= sizeof(tc.path)) {
		FW_LOG(ERR, "test clock: FLAKEWIRE_TEST_CLOCK is too long");
		return -1;
	}
	snprintf(tc.path, sizeof(tc.path), "%s", path);
	tc.on = true;
	FW_LOG(WARNING,
	       "TEST CLOCK: system-clock samples pass through the faults in %s "
	       "(flakewire-testclock is for fault tests only)",
	       tc.path);
	poll_file(app, false);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared fault file of the test-clock builds (fw_testclock.h). */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_keeper.h"
#include "fw_testclock.h"
#include "fw_time.h"

__extension__ typedef __int128 s128;

#define FILE_MAX 4096
#define PPM_MAX  900000 /* 90 %: a tick source 10 times slow (or 90 % fast), the most tested */
#define BACK_MAX (366LL * 24 * 3600 * 1000) /* a year of ticks back, at most */

static struct {
	bool on;
	char path[PATH_MAX];
	uint64_t hash; /* of the content last seen */
	bool have_hash;
	int64_t offset_ns;
	int64_t ppm;
	uint64_t anchor_real;         /* real sample where the current ppm took effect */
	uint64_t anchor_fake;         /* its scaled value (offset not included) */
	uint64_t ticks_per_ms;        /* 0: tick faults refused */
	_Atomic uint64_t tick_back;   /* ticks subtracted from every tick reading */
	_Atomic uint64_t worker_back; /* more ticks subtracted from the workers' readings */
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

uint64_t fw_testclock_apply(uint64_t real_ns)
{
	if (!tc.on)
		return real_ns;
	return (uint64_t)((int64_t)scaled(real_ns) + tc.offset_ns);
}

uint64_t fw_testclock_ticks(uint64_t ticks)
{
	return ticks - atomic_load_explicit(&tc.tick_back, memory_order_relaxed);
}

uint64_t fw_testclock_worker_ticks(uint64_t ticks)
{
	return fw_testclock_ticks(ticks) -
	       atomic_load_explicit(&tc.worker_back, memory_order_relaxed);
}

int fw_testclock_open(const char *path, uint64_t ticks_per_ms)
{
	if (!path || !*path)
		return 0;
	if (strlen(path) >= sizeof(tc.path))
		return -1;
	snprintf(tc.path, sizeof(tc.path), "%s", path);
	tc.ticks_per_ms = ticks_per_ms;
	tc.on = true;
	return 0;
}

bool fw_testclock_on(void)
{
	return tc.on;
}

const char *fw_testclock_path(void)
{
	return tc.path;
}

static int parse(char *text, struct fw_testclock_faults *f, char *msg, size_t len)
{
	char *save = NULL;

	memset(f, 0, sizeof(*f));
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
			f->offset_ms = v;
		else if ((!strcmp(line, "tsc_ppm") || !strcmp(line, "tick_ppm")) && v > -PPM_MAX &&
			 v < PPM_MAX)
			f->ppm = v;
		else if (!strcmp(line, "pause_ms") && v >= 0 && v <= 60000)
			f->pause_ms = v;
		else if (!strcmp(line, "tick_back_ms") && tc.ticks_per_ms && v >= 0 &&
			 v <= BACK_MAX)
			f->tick_back_ms = v;
		else if (!strcmp(line, "worker_back_ms") && tc.ticks_per_ms && v >= 0 &&
			 v <= BACK_MAX)
			f->worker_back_ms = v;
		else
			goto bad;
		continue;
	bad:
		snprintf(msg, len,
			 "test clock: %s: bad line \"%s\" (keys offset_ms, tsc_ppm, pause_ms%s)",
			 tc.path, line,
			 tc.ticks_per_ms ? ", tick_back_ms, worker_back_ms"
					 : "; tick_back_ms: not in this build, nor worker_back_ms");
		return -1;
	}
	return 0;
}

int fw_testclock_reload(struct fw_testclock_faults *f, char *msg, size_t len)
{
	char buf[FILE_MAX + 1];
	size_t n = 0;
	FILE *fp;

	if (!tc.on)
		return 0;
	fp = fopen(tc.path, "r");
	if (fp) {
		n = fread(buf, 1, FILE_MAX, fp);
		fclose(fp);
	}
	buf[n] = '\0';
	uint64_t h = fnv1a(buf, n);
	if (tc.have_hash && h == tc.hash)
		return 0;
	tc.hash = h; /* a bad file is reported once, and changes nothing */
	tc.have_hash = true;
	if (parse(buf, f, msg, len))
		return -1;
	if (f->ppm != tc.ppm) {
		uint64_t real = fw_wall_ns();

		tc.anchor_fake = scaled(real);
		tc.anchor_real = real;
		tc.ppm = f->ppm;
	}
	tc.offset_ns = f->offset_ms * 1000000;
	atomic_store_explicit(&tc.tick_back, (uint64_t)f->tick_back_ms * tc.ticks_per_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&tc.worker_back, (uint64_t)f->worker_back_ms * tc.ticks_per_ms,
			      memory_order_relaxed);
	return 1;
}

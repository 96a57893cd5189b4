/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test-clock builds' fault file (lib/keeper/fw_testclock.h), its tick
 * fault: tick_back_ms moves every tick reading back by that many ms of
 * ticks, only where the owner said its ticks pass through it (a rate given
 * at open); elsewhere the line is refused and the ticks are untouched. The
 * other faults stay on the system-clock samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_testclock.h"

static char path[] = "/tmp/fw-test-testclock.XXXXXX";

static void put(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The state is the process's one fault file: the tests run in this order. */
static void test_tick_back_refused_without_a_rate(void **state)
{
	struct fw_testclock_faults f;
	char msg[256] = "";

	(void)state;
	assert_int_equal(fw_testclock_open(path, 0), 0);
	put("tick_back_ms=5\n");
	assert_int_equal(fw_testclock_reload(&f, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "tick_back_ms: not in this build"));
	assert_int_equal(fw_testclock_ticks(7000000000ull), 7000000000ull);
}

static void test_tick_back_moves_the_ticks_back(void **state)
{
	struct fw_testclock_faults f;
	char msg[256] = "";
	uint64_t wall = 1800000000000000000ull;

	(void)state;
	assert_int_equal(fw_testclock_open(path, 1000000), 0); /* ns ticks */
	put("tick_back_ms=1500\n");
	assert_int_equal(fw_testclock_reload(&f, msg, sizeof(msg)), 1);
	assert_int_equal(f.tick_back_ms, 1500);
	assert_int_equal(fw_testclock_ticks(7000000000ull), 5500000000ull);
	assert_int_equal(fw_testclock_apply(wall), wall); /* the system clock untouched */
	assert_int_equal(fw_testclock_reload(&f, msg, sizeof(msg)), 0); /* unchanged */
	assert_int_equal(fw_testclock_ticks(7000000000ull), 5500000000ull);
	put("tick_back_ms=-1\n");
	assert_int_equal(fw_testclock_reload(&f, msg, sizeof(msg)), -1);
	assert_int_equal(fw_testclock_ticks(7000000000ull), 5500000000ull); /* nothing changed */
	put("offset_ms=-3\n");
	assert_int_equal(fw_testclock_reload(&f, msg, sizeof(msg)), 1);
	assert_int_equal(fw_testclock_ticks(7000000000ull), 7000000000ull); /* the fault gone */
	assert_int_equal(fw_testclock_apply(wall), wall - 3000000);
	/* worker_back_ms: the workers' readings only, on top of tick_back_ms */
	put("tick_back_ms=1000\nworker_back_ms=500\n");
	assert_int_equal(fw_testclock_reload(&f, msg, sizeof(msg)), 1);
	assert_int_equal(f.worker_back_ms, 500);
	assert_int_equal(fw_testclock_ticks(7000000000ull), 6000000000ull);
	assert_int_equal(fw_testclock_worker_ticks(7000000000ull), 5500000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tick_back_refused_without_a_rate),
		cmocka_unit_test(test_tick_back_moves_the_ticks_back),
	};
	int fd = mkstemp(path);
	int rc;

	if (fd < 0)
		return 1;
	close(fd);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The injectable clock of flakewire-testclock: the responder built from the
 * very objects of flakewire but with this file in place of testclock_none.c
 * (the hooks of clock_pub.h). Only tests/system/faults run it; the
 * flakewire binary has no code that reads a fault file. The fault file
 * (FLAKEWIRE_TEST_CLOCK, keys offset_ms, tsc_ppm, pause_ms) is read by
 * lib/keeper's testclock.c (fw_testclock.h), shared with flakesock-testclock.
 * A pause holds every lcore (the keeper's slots are held mid-write) and the
 * telemetry thread, while the TSC and the system clock go on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "app.h"
#include "clock_pub.h"
#include "log.h"
#include "fw_testclock.h"
#include "fw_time.h"

static uint64_t pauses;

uint64_t fw_testclock_ns(uint64_t ns)
{
	return fw_testclock_apply(ns);
}

static void poll_file(struct fw_app *app, bool may_pause)
{
	struct fw_testclock_faults f;
	char msg[512];
	int rc = fw_testclock_reload(&f, msg, sizeof(msg));

	if (rc < 0)
		FW_LOG(ERR, "%s", msg);
	if (rc <= 0)
		return;
	FW_LOG(WARNING, "test clock: system clock offset %+" PRId64 " ms, TSC %+" PRId64 " ppm",
	       f.offset_ms, f.ppm);
	if (f.pause_ms && may_pause && app->keeper) {
		FW_LOG(WARNING,
		       "test clock: pause %" PRId64 " ms (lcores, telemetry and control stop)",
		       f.pause_ms);
		fw_keeper_hold(app->keeper, true);
		fw_sleep_ms((uint32_t)f.pause_ms);
		fw_keeper_hold(app->keeper, false);
		pauses++;
		FW_LOG(WARNING, "test clock: pause %" PRIu64 " over", pauses);
	}
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
	if (fw_testclock_open(path)) {
		FW_LOG(ERR, "test clock: FLAKEWIRE_TEST_CLOCK is too long");
		return -1;
	}
	FW_LOG(WARNING,
	       "TEST CLOCK: system-clock samples pass through the faults in %s "
	       "(flakewire-testclock is for fault tests only)",
	       path);
	poll_file(app, false);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The injectable clock of the test-clock builds (flakewire-testclock,
 * flakesock-testclock): each responder's own objects with this file in
 * place of testclock_none.c. Only tests/system/faults and alerts run them;
 * the installed responders have no code that reads a fault file. The fault
 * file (FLAKEWIRE_TEST_CLOCK, keys offset_ms, tsc_ppm or tick_ppm, pause_ms,
 * tick_back_ms) is read by lib/keeper's testclock.c (fw_testclock.h). A
 * pause holds every worker (the keeper's slots are held mid-write) while the
 * clocks go on. tick_back_ms moves the ticks of fw_responder_monoraw_ticks
 * back, for flakesock's keeper and workers alike (flakewire's lcores read
 * the TSC inline: its build refuses the key).
 *
 * The responder's status_env (flakesock: FLAKESOCK_TEST_STATUS=PATH): every
 * 10 keeper ticks the keeper's state is written there as one JSON object
 * with the keys of flakewire's /flakewire/clock telemetry (generation,
 * offset_ns, slew_ppb, flags, mark_unix_ms, ...) plus gen_unsafe, so the
 * fault tests read both responders the same way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_testclock.h"
#include "fw_time.h"
#include "responder_impl.h"

uint64_t fw_responder_testclock_ns(uint64_t ns)
{
	return fw_testclock_apply(ns);
}

FW_API uint64_t fw_responder_monoraw_ticks(void)
{
	return fw_testclock_ticks(fw_keeper_monoraw_ticks());
}

FW_API uint64_t fw_responder_worker_ticks(void)
{
	return fw_testclock_worker_ticks(fw_keeper_monoraw_ticks());
}

static void write_status(struct fw_responder *r)
{
	struct fw_keeper_status st;
	struct fw_clock_cal nominal;
	char tmp[PATH_MAX + 8];
	uint64_t unsafe = 0;
	FILE *f;

	if (!r->tc.status[0] || !r->keeper)
		return;
	fw_keeper_status(r->keeper, &st);
	nominal = st.cal;
	nominal.mult = st.cal.nominal_mult;
	for (uint32_t i = 0; i < r->cfg.n_workers; i++) {
		struct fw_responder_worker w;
		r->cfg.ops.worker(r->cfg.ops.arg, i, &w);
		unsafe += fw_gen_stats(&w.serve->gen)->unsafe; /* racy read: tests only */
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", r->tc.status);
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
		st.mark_failures, st.mark_failing ? 1 : 0, st.clock_events, r->cfg.layout.epoch_ms,
		unsafe, r->tc.pauses);
	fclose(f);
	rename(tmp, r->tc.status);
}

static void poll_file(struct fw_responder *r, bool may_pause)
{
	const struct fw_log *log = &r->cfg.ops.log;
	struct fw_testclock_faults f;
	char msg[512];
	int rc = fw_testclock_reload(&f, msg, sizeof(msg));

	if (rc < 0)
		fw_log(log, FW_LOG_ERR, "%s", msg);
	if (rc <= 0)
		return;
	fw_log(log, FW_LOG_WARNING,
	       "test clock: system clock offset %+" PRId64 " ms, %s %+" PRId64
	       " ppm, %s back %" PRId64 " ms, the workers' %" PRId64 " ms more",
	       f.offset_ms, r->cfg.ticks_name, f.ppm, r->cfg.ticks_name, f.tick_back_ms,
	       f.worker_back_ms);
	if (f.pause_ms && may_pause && r->keeper) {
		fw_log(log, FW_LOG_WARNING, "test clock: pause %" PRId64 " ms (%s stop)",
		       f.pause_ms, r->cfg.pause_holds);
		fw_keeper_hold(r->keeper, true);
		fw_sleep_ms((uint32_t)f.pause_ms);
		fw_keeper_hold(r->keeper, false);
		r->tc.pauses++;
		fw_log(log, FW_LOG_WARNING, "test clock: pause %" PRIu64 " over", r->tc.pauses);
	}
}

void fw_responder_testclock_poll(struct fw_responder *r)
{
	poll_file(r, true);
	if (++r->tc.polls % 10 == 0)
		write_status(r);
}

int fw_responder_testclock_init(struct fw_responder *r)
{
	const struct fw_log *log = &r->cfg.ops.log;
	const char *path = getenv("FLAKEWIRE_TEST_CLOCK");
	const char *status = r->cfg.status_env ? getenv(r->cfg.status_env) : NULL;

	if (status && *status) {
		if (strlen(status) >= sizeof(r->tc.status) - 8) {
			fw_log(log, FW_LOG_ERR, "test clock: %s is too long", r->cfg.status_env);
			return -1;
		}
		snprintf(r->tc.status, sizeof(r->tc.status), "%s", status);
	}
	if (!path || !*path) {
		fw_log(log, FW_LOG_WARNING,
		       "test clock: FLAKEWIRE_TEST_CLOCK is not set: no clock faults");
		return 0;
	}
	if (fw_testclock_open(path, r->cfg.fault_ticks_per_ms)) {
		fw_log(log, FW_LOG_ERR, "test clock: FLAKEWIRE_TEST_CLOCK is too long");
		return -1;
	}
	fw_log(log, FW_LOG_WARNING,
	       "TEST CLOCK: system-clock samples pass through the faults in %s "
	       "(%s-testclock is for fault tests only)",
	       path, r->cfg.name);
	poll_file(r, false);
	return 0;
}

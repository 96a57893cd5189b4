/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timekeeper against a scripted clock and a scripted mark store: ticks
 * run at a known rate (2.1 GHz, like a TSC), the system clock is true time
 * plus an offset the test steps, and the mark "file" can fail on demand.
 * Workers are generators driven through fw_keeper_worker_burst, as the
 * responders' burst loops drive theirs.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_gen.h"
#include "fw_keeper.h"
#include "fw_keeper_serve.h"
#include "fw_layout.h"
#include "fw_time.h"
#include "fw_wire.h"

__extension__ typedef unsigned __int128 u128;

#define NS_PER_MS 1000000ULL
#define NS_PER_S  1000000000ULL
#define HZ        2100000000ULL
#define EPOCH_MS  FW_DEFAULT_EPOCH_MS
/* true time 0 of the script: one day after the epoch */
#define T0_NS     ((EPOCH_MS + 86400000ULL) * NS_PER_MS)

struct store {
	bool present;
	uint64_t mark;
	int read_rc;  /* forced read result when non-zero */
	int write_rc; /* forced write result when non-zero */
	unsigned writes;
};

struct script {
	uint64_t t;  /* true ns since T0 */
	int64_t off; /* system clock - true, ns */
	/* the tick source: HZ from true time 0, or hz from true time rate_t on
	 * (ticks rate_tick there), minus back ticks (gone back) */
	uint64_t hz, rate_t, rate_tick, back;
	struct store st;
	struct fw_keeper_io io;
	struct fw_keeper_config cfg;
	uint32_t workers[2];
	struct fw_keeper *k;
	struct fw_layout layout;
	struct fw_gen gen[2];
	struct fw_keeper_worker w[2];
};

/* The last WARNING and ERR lines and the number of lines logged. */
static char last_warning[512];
static char last_error[FW_LOG_LINE_MAX];
static unsigned lines;

static void capture(void *arg, enum fw_log_level level, const char *line)
{
	(void)arg;
	lines++;
	if (level == FW_LOG_WARNING)
		snprintf(last_warning, sizeof(last_warning), "%s", line);
	if (level == FW_LOG_ERR)
		snprintf(last_error, sizeof(last_error), "%s", line);
}

static int st_read(void *arg, uint64_t *ms)
{
	struct store *s = arg;
	if (s->read_rc)
		return s->read_rc;
	if (!s->present)
		return -ENOENT;
	*ms = s->mark;
	return 0;
}

static int st_write(void *arg, uint64_t ms)
{
	struct store *s = arg;
	if (s->write_rc)
		return s->write_rc;
	s->present = true;
	s->mark = ms;
	s->writes++;
	return 0;
}

static uint64_t ticks(const struct script *s)
{
	if (s->hz)
		return s->rate_tick + (uint64_t)((u128)(s->t - s->rate_t) * s->hz / NS_PER_S) -
		       s->back;
	return 1000 + (uint64_t)((u128)s->t * HZ / NS_PER_S) - s->back;
}

/* From now on the tick source runs at @hz (continuous). */
static void set_rate(struct script *s, uint64_t hz)
{
	s->rate_tick = ticks(s) + s->back;
	s->rate_t = s->t;
	s->hz = hz;
}

static uint64_t wall(const struct script *s)
{
	return T0_NS + s->t + (uint64_t)s->off;
}

static uint64_t true_ms(const struct script *s)
{
	return (T0_NS + s->t) / NS_PER_MS;
}

static void setup_cfg(struct script *s)
{
	memset(s, 0, sizeof(*s));
	s->io = (struct fw_keeper_io){st_read, st_write, &s->st};
	fw_keeper_config_default(&s->cfg);
	s->cfg.io = &s->io;
	s->cfg.state_file = NULL;
	s->cfg.mark_ahead_ms = 3000;
	s->cfg.reanchor_ms = 1000;
	s->cfg.clock.horizon_ms = 1000;
	s->cfg.epoch_ms = EPOCH_MS;
	s->workers[0] = 1;
	s->workers[1] = 2;
	s->cfg.n_workers = 2;
	s->cfg.worker_ids = s->workers;
	s->cfg.name = "flakewire";
	s->cfg.log = (struct fw_log){capture, NULL};
}

/* Calibrates over 100 ms of script time and starts; returns fw_keeper_start's code. */
static int start(struct script *s, struct fw_keeper_start_info *info)
{
	assert_int_equal(fw_keeper_create(&s->cfg, &s->k), 0);
	uint64_t t0 = ticks(s), n0 = wall(s);
	s->t += 100 * NS_PER_MS;
	int rc = fw_keeper_start(s->k, t0, n0, ticks(s), wall(s), info);
	if (rc)
		return rc;
	uint32_t n;
	struct fw_keeper_slot *slots = fw_keeper_slots(s->k, &n);
	assert_int_equal(n, 2);
	assert_int_equal(fw_layout_init(&s->layout, EPOCH_MS, 0, 10, 12, 0), 0);
	for (int i = 0; i < 2; i++) {
		struct fw_gen_config gc;
		fw_gen_config_default(&gc);
		gc.worker = s->workers[i];
		assert_int_equal(fw_gen_init(&s->gen[i], &s->layout, &gc), 0);
		fw_keeper_worker_init(&s->w[i], &slots[i], &s->gen[i]);
	}
	return 0;
}

/* Advances script time by @ms in 10 ms keeper ticks; ORs the events. */
static uint32_t run(struct script *s, uint64_t ms)
{
	uint32_t ev = 0;
	for (uint64_t i = 0; i < ms / 10; i++) {
		s->t += 10 * NS_PER_MS;
		ev |= fw_keeper_tick(s->k, ticks(s), wall(s));
	}
	return ev;
}

/* One burst of worker @i: issues one ID; returns fw_gen_next's code. */
static int burst(struct script *s, int i, uint64_t *id, struct fw_keeper_snap *snap)
{
	struct fw_keeper_snap tmp;
	if (!snap)
		snap = &tmp;
	uint64_t now = fw_keeper_worker_burst(&s->w[i], &s->gen[i], ticks(s), snap);
	return fw_gen_next(&s->gen[i], now, id);
}

static uint64_t id_ms(const struct script *s, uint64_t id)
{
	return (id >> (s->layout.worker_bits + s->layout.seq_bits + s->layout.dc_bits)) + EPOCH_MS;
}

static uint64_t id_worker(const struct script *s, uint64_t id)
{
	return (id >> s->layout.seq_bits) & ((1u << s->layout.worker_bits) - 1);
}

static void teardown(struct script *s)
{
	fw_keeper_free(s->k);
}

static void test_create_rejects(void **state)
{
	(void)state;
	struct script s;
	struct fw_keeper *k = NULL;
	setup_cfg(&s);
	s.cfg.n_workers = 0;
	assert_int_equal(fw_keeper_create(&s.cfg, &k), -EINVAL);
	s.cfg.n_workers = FW_KEEPER_WORKERS_MAX + 1;
	assert_int_equal(fw_keeper_create(&s.cfg, &k), -EINVAL);
	s.cfg.n_workers = 2;
	s.cfg.io = NULL; /* no file either */
	assert_int_equal(fw_keeper_create(&s.cfg, &k), -EINVAL);
	assert_null(k);
}

/* First start: nothing on disk; the mark is reserved ahead before workers issue. */
static void test_first_start_reserves(void **state)
{
	(void)state;
	struct script s;
	struct fw_keeper_start_info info;
	struct fw_keeper_snap snap;
	uint64_t id;

	setup_cfg(&s);
	assert_int_equal(start(&s, &info), 0);
	assert_int_equal(info.read_rc, -ENOENT);
	assert_int_equal(info.reserve_rc, 0);
	assert_true(s.st.present);
	assert_in_range(s.st.mark, true_ms(&s) + 2990, true_ms(&s) + 3010);
	assert_int_equal(burst(&s, 0, &id, &snap), 0);
	assert_int_equal(snap.mark_ms, s.st.mark - EPOCH_MS);
	assert_int_equal(snap.lease_ms, FW_KEEPER_NO_LIMIT);
	assert_int_equal(snap.floor_ms, 0);
	assert_int_equal(id_worker(&s, id), 1);
	assert_in_range(id_ms(&s, id), true_ms(&s) - 1, true_ms(&s) + 1);
	teardown(&s);
}

/* The mark keeps moving ahead of the clock, and a worker never passes the persisted one. */
static void test_mark_stays_ahead(void **state)
{
	(void)state;
	struct script s;
	uint64_t id;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	for (int i = 0; i < 100; i++) {
		uint32_t ev = run(&s, 100);
		(void)ev;
		assert_true(s.st.mark >= true_ms(&s) + 1500);
		assert_int_equal(burst(&s, 1, &id, NULL), 0);
		assert_true(id_ms(&s, id) <= s.st.mark);
	}
	assert_true(s.st.writes >= 3);
	teardown(&s);
}

/* Restart: issues only above the mark read; reserves from the clock, not the mark. */
static void test_restart_above_mark(void **state)
{
	(void)state;
	struct script s;
	struct fw_keeper_start_info info;
	uint64_t id;

	setup_cfg(&s);
	s.st.present = true;
	s.st.mark = (T0_NS / NS_PER_MS) + 2000; /* 2 s ahead: a crash right after a start */
	assert_int_equal(start(&s, &info), 0);
	assert_int_equal(info.read_rc, 0);
	assert_int_equal(info.behind_ms, 1900);
	/* reserved from the clock (now + 3000), which is above the old mark */
	assert_in_range(s.st.mark, true_ms(&s) + 2990, true_ms(&s) + 3010);
	int rc = burst(&s, 0, &id, NULL);
	assert_int_equal(rc, FW_ERETRY);
	run(&s, 2000);
	assert_int_equal(burst(&s, 0, &id, NULL), 0);
	assert_true(id_ms(&s, id) > (T0_NS / NS_PER_MS) + 2000);
	teardown(&s);
}

/* start_policy fail refuses when far behind; wait starts and waits. */
static void test_start_policy(void **state)
{
	(void)state;
	struct script s;
	struct fw_keeper_start_info info;

	setup_cfg(&s);
	s.st.present = true;
	s.st.mark = (T0_NS / NS_PER_MS) + 3600000;
	s.cfg.start_policy = FW_KEEPER_START_FAIL;
	assert_int_equal(start(&s, &info), FW_EMARK_AHEAD);
	assert_int_equal(info.behind_ms, 3600000 - 100);
	assert_int_equal(s.st.writes, 0); /* the file is left as it is */
	teardown(&s);

	setup_cfg(&s);
	s.st.present = true;
	s.st.mark = (T0_NS / NS_PER_MS) + 3600000;
	s.cfg.start_policy = FW_KEEPER_START_WAIT;
	assert_int_equal(start(&s, &info), 0);
	assert_int_equal(s.st.mark, (T0_NS / NS_PER_MS) + 3600000); /* not pushed further */
	uint64_t id;
	assert_int_equal(burst(&s, 0, &id, NULL), FW_ERETRY);
	teardown(&s);
}

/* A corrupt or unreadable mark refuses the start and writes nothing. */
static void test_corrupt_refuses(void **state)
{
	(void)state;
	struct script s;

	setup_cfg(&s);
	s.st.read_rc = FW_ESTATE_CORRUPT;
	assert_int_equal(start(&s, NULL), FW_ESTATE_CORRUPT);
	assert_int_equal(s.st.writes, 0);
	teardown(&s);
	setup_cfg(&s);
	s.st.read_rc = -EACCES;
	assert_int_equal(start(&s, NULL), -EACCES);
	teardown(&s);
}

/*
 * The system clock steps back by more than step_ms (1 s, 1 h): the keeper's
 * time never goes back, workers keep issuing from it (no CLOCK_UNSAFE, no
 * stall), replies carry BACKSTEP and SLEWING, and the owner hears of it once.
 */
static void check_back_step(int64_t step_ms)
{
	struct script s;
	struct fw_keeper_snap snap;
	uint64_t id, last = 0, prev_now;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	run(&s, 2000);
	assert_int_equal(burst(&s, 0, &last, NULL), 0);
	prev_now = fw_keeper_worker_burst(&s.w[0], &s.gen[0], ticks(&s), &snap);
	s.off = -step_ms * (int64_t)NS_PER_MS;
	uint32_t ev = 0;
	unsigned refused = 0;
	for (int i = 0; i < 500; i++) { /* 5 s */
		ev |= run(&s, 10);
		uint64_t now = fw_keeper_worker_burst(&s.w[0], &s.gen[0], ticks(&s), &snap);
		assert_true(now >= prev_now);
		prev_now = now;
		int rc = fw_gen_next(&s.gen[0], now, &id);
		if (rc) {
			refused++;
			continue;
		}
		assert_true(id > last);
		last = id;
	}
	assert_int_equal(refused, 0);
	assert_true(ev & FW_KEEPER_EV_BACK_STEP);
	assert_true(snap.state & FW_KEEPER_S_BACK_STEP);
	assert_true(snap.wire_flags & FW_WIRE_F_BACKSTEP);
	assert_true(snap.wire_flags & FW_WIRE_F_SLEWING);
	assert_true(snap.offset_ns < -(int64_t)(step_ms - 10) * (int64_t)NS_PER_MS);
	/* IDs stay on real time, not on the stepped-back system clock */
	assert_in_range(id_ms(&s, last), true_ms(&s) - 10, true_ms(&s) + 10);
	struct fw_keeper_status st;
	fw_keeper_status(s.k, &st);
	assert_int_equal(st.back_steps, 1);
	assert_true(st.back_step);
	/* one WARNING naming the responder, not one per re-anchor */
	assert_non_null(strstr(last_warning, "ms behind flakewire: slewing at -500.0 ppm, "
					     "never stepping back"));
	unsigned before = lines;
	run(&s, 20000);
	assert_int_equal(lines, before); /* the next one is due after 30 s */
	run(&s, 11000);
	assert_int_equal(lines, before + 1);
	teardown(&s);
}

static void test_back_step_1s_keeps_issuing(void **state)
{
	(void)state;
	check_back_step(1000);
}

static void test_back_step_1h_keeps_issuing(void **state)
{
	(void)state;
	check_back_step(3600000);
}

/* A small backward step (3 ms) is slewed away, and the BACK_STEP edge never fires. */
/*
 * Readers read a slot's snapshot, then the status (the telemetry's clock
 * command, /metrics): the status must never be older than the slot. The
 * keeper logs its step-back line after publishing the slots and before its
 * call returns, so a log callback sees what such a reader would.
 */
static unsigned torn_checks, torn;

static void read_slot_then_status(void *arg, enum fw_log_level level, const char *line)
{
	struct fw_keeper *k = *(struct fw_keeper **)arg;
	struct fw_keeper_snap snap;
	struct fw_keeper_status st;

	capture(NULL, level, line);
	if (!k || !fw_keeper_slots(k, NULL))
		return;
	fw_keeper_read(&fw_keeper_slots(k, NULL)[0], &snap);
	fw_keeper_status(k, &st);
	if (!(snap.state & FW_KEEPER_S_BACK_STEP))
		return;
	torn_checks++;
	if (!st.back_step || st.back_steps == 0 || st.clock_events == 0 ||
	    st.cal.generation < snap.cal.generation)
		torn++;
}

static void test_status_not_older_than_slots(void **state)
{
	struct script s;

	(void)state;
	setup_cfg(&s);
	s.cfg.log = (struct fw_log){read_slot_then_status, &s.k};
	torn_checks = torn = 0;
	assert_int_equal(start(&s, NULL), 0);
	run(&s, 2000);
	s.off = -3600000 * (int64_t)NS_PER_MS;
	assert_true(run(&s, 1500) & FW_KEEPER_EV_BACK_STEP);
	assert_true(torn_checks > 0);
	assert_int_equal(torn, 0);
	teardown(&s);
}

static void test_small_back_step_slews(void **state)
{
	(void)state;
	struct script s;
	struct fw_keeper_snap snap;
	uint64_t id;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	run(&s, 2000);
	s.off = -3 * (int64_t)NS_PER_MS;
	uint32_t ev = run(&s, 1500);
	assert_false(ev & FW_KEEPER_EV_BACK_STEP);
	assert_true(ev & FW_KEEPER_EV_OFFSET);
	assert_int_equal(burst(&s, 0, &id, &snap), 0);
	assert_true(snap.wire_flags & FW_WIRE_F_SLEWING);
	run(&s, 10000);
	assert_int_equal(burst(&s, 0, &id, &snap), 0);
	assert_false(snap.wire_flags & FW_WIRE_F_SLEWING);
	assert_true(snap.offset_ns > -(int64_t)NS_PER_MS);
	teardown(&s);
}

/* Forward step: time steps forward, the mark follows before workers issue there. */
static void test_forward_step(void **state)
{
	(void)state;
	struct script s;
	uint64_t id;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	run(&s, 1000);
	s.off = 3600000 * (int64_t)NS_PER_MS;
	uint32_t ev = run(&s, 1100);
	assert_true(ev & FW_KEEPER_EV_FWD_STEP);
	assert_true(ev & FW_KEEPER_EV_MARK);
	assert_int_equal(burst(&s, 0, &id, NULL), 0);
	assert_in_range(id_ms(&s, id), true_ms(&s) + 3600000 - 10, true_ms(&s) + 3600000 + 10);
	assert_true(id_ms(&s, id) <= s.st.mark);
	teardown(&s);
}

/* Persist fails: workers stop at the mark on disk (RETRY_AFTER), resume when it works. */
static void test_mark_failure(void **state)
{
	(void)state;
	struct script s;
	struct fw_keeper_snap snap;
	uint64_t id;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	uint64_t on_disk = s.st.mark;
	s.st.write_rc = -ENOSPC;
	uint32_t ev = run(&s, 5000);
	assert_true(ev & FW_KEEPER_EV_MARK_FAIL);
	assert_int_equal(s.st.mark, on_disk);
	int rc = burst(&s, 0, &id, &snap);
	assert_int_equal(rc, FW_EMARK);
	assert_false(s.w[0].by_lease); /* RETRY_AFTER, not NO_LEASE */
	assert_true(snap.state & FW_KEEPER_S_MARK_FAIL);
	struct fw_keeper_status st;
	fw_keeper_status(s.k, &st);
	assert_true(st.mark_failing);
	assert_int_equal(st.last_write_rc, -ENOSPC);
	assert_in_range(st.mark_failures, 20, 60); /* retried every 100 ms, not every tick */
	s.st.write_rc = 0;
	ev = run(&s, 200);
	assert_true(ev & FW_KEEPER_EV_MARK_OK);
	assert_int_equal(burst(&s, 0, &id, &snap), 0);
	assert_false(snap.state & FW_KEEPER_S_MARK_FAIL);
	teardown(&s);
}

/*
 * Workers 0 and 1 issue one ID each per 10 ms keeper tick for @ms: every ID
 * above the worker's previous one (*last), none refused after the first
 * @grace_ms. Returns the number refused.
 */
static unsigned issue_for(struct script *s, uint64_t ms, uint64_t grace_ms, uint64_t last[2])
{
	unsigned refused = 0;

	for (uint64_t i = 0; i < ms / 10; i++) {
		for (int w = 0; w < 2; w++) {
			uint64_t id;
			int rc = burst(s, w, &id, NULL);
			if (rc) {
				assert_true(i * 10 < grace_ms);
				refused++;
				continue;
			}
			assert_true(id > last[w]);
			last[w] = id;
		}
		run(s, 10);
	}
	return refused;
}

/*
 * The tick source goes back @back_ms (0: to 0, a TSC reset): at its next tick the
 * keeper re-anchors the ticks on the time reached, and the workers issue
 * again at once, above every ID they issued. (Before: CLOCK_UNSAFE until
 * the ticks were back where they were.)
 */
static void check_ticks_back(uint64_t back_ms)
{
	struct script s;
	uint64_t last[2] = {0, 0};
	struct fw_keeper_status st;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	assert_int_equal(issue_for(&s, 3000, 0, last), 0);
	uint64_t before_ms = id_ms(&s, FW_MAX(last[0], last[1]));
	last_warning[0] = '\0';
	s.back = back_ms ? back_ms * (HZ / 1000) : ticks(&s) - 5; /* 0: a reset to 0 */
	/* the workers' first bursts may come before the keeper's tick: refused or not, never
	 * below; within one keeper tick they issue again, and for the next 10 s */
	unsigned refused = issue_for(&s, 10000, 20, last);
	assert_true(refused <= 2);
	assert_non_null(strstr(last_warning, "tick source went back"));
	assert_non_null(strstr(last_warning, "re-anchored"));
	fw_keeper_status(s.k, &st);
	assert_int_equal(st.ticks_backs, 1);
	/* time went on from where it was: the IDs' times are 10 s on, not 10 s - back */
	uint64_t after_ms = id_ms(&s, FW_MAX(last[0], last[1]));
	assert_in_range(after_ms - before_ms, 9900, 10100);
	/* the rate is learnt again, and the mark stays ahead of the time issued */
	assert_true(s.st.mark >= after_ms);
	print_message("ticks back %llu ms: %u refused, %llu ms issued over 10 s\n",
		      (unsigned long long)back_ms, refused,
		      (unsigned long long)(after_ms - before_ms));
	teardown(&s);
}

static void test_ticks_back_reanchors(void **state)
{
	(void)state;
	check_ticks_back(1500);
	check_ticks_back(30); /* under max_backstep_ms: it would have waited 30 ms */
	check_ticks_back(0);  /* the tick source reset to 0 */
}

/*
 * From 2 s after start the tick source runs @ppm off its calibrated rate (a
 * TSC rate change, or a test clock's rate fault): the keeper learns the new
 * rate within a few seconds, whatever it is, and the workers never refuse.
 */
static void check_rate(int64_t ppm)
{
	struct script s;
	uint64_t last[2] = {0, 0};
	struct fw_keeper_status st;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	assert_int_equal(issue_for(&s, 2000, 0, last), 0);
	uint64_t hz = (uint64_t)((int64_t)HZ + (int64_t)HZ / 1000000 * ppm);
	set_rate(&s, hz);
	unsigned learnt = 0;
	for (unsigned sec = 1; sec <= 20; sec++) {
		assert_int_equal(issue_for(&s, 1000, 0, last), 0);
		fw_keeper_status(s.k, &st);
		double nominal = (double)NS_PER_S * 4294967296.0 / (double)st.cal.nominal_mult;
		double off = (nominal - (double)hz) / (double)hz * 1e6;
		if (!learnt && off > -100 && off < 100)
			learnt = sec;
	}
	print_message("ticks %+lld ppm: nominal rate within 100 ppm after %u s\n", (long long)ppm,
		      learnt);
	assert_true(learnt > 0 && learnt <= 5);
	/* learnt, it stays learnt: within 100 ppm at the end too */
	fw_keeper_status(s.k, &st);
	double nominal = (double)NS_PER_S * 4294967296.0 / (double)st.cal.nominal_mult;
	assert_true(fabs((nominal - (double)hz) / (double)hz * 1e6) < 100);
	teardown(&s);
}

static void test_rate_50pct_fast_learnt(void **state)
{
	(void)state;
	check_rate(500000);
}

static void test_rate_30pct_slow_learnt(void **state)
{
	(void)state;
	check_rate(-300000);
}

static void test_rate_2000ppm_learnt(void **state)
{
	(void)state;
	check_rate(2000);
}

/* A lease below the mark stops the worker at the lease and says so (NO_LEASE). */
static void test_lease_limit(void **state)
{
	(void)state;
	struct script s;
	uint64_t id;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	uint64_t lease = true_ms(&s) - EPOCH_MS + 500;
	assert_int_equal(fw_keeper_set_lease(s.k, 0, lease), 0);
	assert_int_equal(fw_keeper_set_lease(s.k, 9, lease), -EINVAL);
	assert_int_equal(burst(&s, 0, &id, NULL), 0);
	assert_true(s.w[0].by_lease);
	run(&s, 1000);
	assert_int_equal(burst(&s, 0, &id, NULL), FW_EMARK);
	assert_true(s.w[0].by_lease); /* the lease stopped it: NO_LEASE */
	/* the other slot has no lease: the mark is its limit */
	assert_int_equal(burst(&s, 1, &id, NULL), 0);
	assert_false(s.w[1].by_lease);
	/* renewal: issuing resumes */
	assert_int_equal(fw_keeper_set_lease(s.k, 0, lease + 3600000), 0);
	assert_int_equal(burst(&s, 0, &id, NULL), 0);
	assert_false(s.w[0].by_lease); /* now the mark is the lower limit */
	teardown(&s);
}

/* A worker swap: new worker ID above its floor, the old one retired at its last ms. */
static void test_worker_swap(void **state)
{
	(void)state;
	struct script s;
	uint64_t id, last_old, retired;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	assert_int_equal(burst(&s, 0, &last_old, NULL), 0);
	assert_false(fw_keeper_worker_retired(s.k, 0, &retired));
	uint64_t floor = true_ms(&s) - EPOCH_MS + 20;
	assert_int_equal(fw_keeper_set_worker(s.k, 0, 77, floor, FW_KEEPER_NO_LIMIT), 0);
	assert_false(fw_keeper_worker_retired(s.k, 0, &retired)); /* not applied yet */
	run(&s, 30);
	assert_int_equal(burst(&s, 0, &id, NULL), 0);
	assert_int_equal(id_worker(&s, id), 77);
	assert_true(id_ms(&s, id) - EPOCH_MS > floor);
	assert_true(fw_keeper_worker_retired(s.k, 0, &retired));
	assert_int_equal(retired, id_ms(&s, last_old) - EPOCH_MS);
	/* slot 1 untouched */
	assert_int_equal(burst(&s, 1, &id, NULL), 0);
	assert_int_equal(id_worker(&s, id), 2);
	teardown(&s);
}

/*
 * Issue 32: the mark written at stop covers every worker ID the slot ever
 * issued under, retired or not. Worker 77 issues ahead of the clock (its
 * floor), 88 then issues at the clock, 99 replaces 88: the retirement point
 * and the final mark stay at or above 77's last ms, though 88's is lower.
 */
static void test_retired_max_covers_every_swap(void **state)
{
	(void)state;
	struct script s;
	uint64_t id, written;
	struct fw_keeper_snap snap;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	assert_int_equal(burst(&s, 0, &id, &snap), 0);
	/* the slot's generator issued up to an hour ahead (before a backward step) */
	uint64_t high = id_ms(&s, id) - EPOCH_MS + 3600 * 1000;
	s.gen[0].cur_ms = high;
	snap.worker_id = 77;
	snap.worker_gen = 1001;
	snap.floor_ms = 0;
	assert_int_equal(fw_keeper_worker_swap(&s.w[0], &snap, &s.gen[0]), 0);
	assert_int_equal(burst(&s, 0, &id, NULL), 0); /* 77 issues at the clock, below */
	assert_true(id_ms(&s, id) - EPOCH_MS < high);
	snap.worker_id = 88;
	snap.worker_gen = 1002;
	assert_int_equal(fw_keeper_worker_swap(&s.w[0], &snap, &s.gen[0]), 0);
	uint64_t r = atomic_load(&fw_keeper_slots(s.k, NULL)[0].retired_ms);
	if (r < high)
		fail_msg("retired_ms %llu after 77's swap: below %llu, what the first ID issued",
			 (unsigned long long)r, (unsigned long long)high);
	assert_int_equal(fw_keeper_stop(s.k, 0, &written), 0);
	assert_true(written >= high + EPOCH_MS); /* the stop's mark covers it */
	teardown(&s);
}

/*
 * Issue 35: one state per worker, the one /readyz, the gauge and `flakectl
 * status` read: each condition alone, then on a started keeper.
 */
static void test_worker_state(void **state)
{
	(void)state;
	struct fw_keeper_snap s = {.lease_ms = FW_KEEPER_NO_LIMIT, .floor_ms = 90, .mark_ms = 2000};
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 999, 10), FW_KEEPER_W_ISSUING);
	s.lease_ms = 999; /* the confirmed lease ended */
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 999, 10), FW_KEEPER_W_NO_LEASE);
	s.lease_ms = 0; /* no worker ID */
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 0, 10), FW_KEEPER_W_NO_LEASE);
	s.lease_ms = 1000; /* ends this very ms: still issuing */
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 0, 10), FW_KEEPER_W_ISSUING);
	s.lease_ms = FW_KEEPER_NO_LIMIT;
	s.floor_ms = 1000; /* a takeover's floor, or the mark at start, not yet passed */
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 0, 10), FW_KEEPER_W_WAITING);
	/* a mark 2 minutes ahead at start: the worker's last ms is its floor, never issued
	 * (doc/runbook.md's "Try it here" showed clock_unsafe while the wire said RETRY_AFTER) */
	s.floor_ms = 121000;
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 121000, 10), FW_KEEPER_W_WAITING);
	s.floor_ms = 90;
	s.mark_ms = 999; /* the reservation on disk is behind the clock */
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 0, 10), FW_KEEPER_W_WAITING);
	s.mark_ms = 2000;
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 1010, 10), FW_KEEPER_W_ISSUING); /* borrow */
	assert_int_equal(fw_keeper_wstate_of(&s, 1000, 1011, 10), FW_KEEPER_W_CLOCK_UNSAFE);
	assert_string_equal(fw_keeper_wstate_name(FW_KEEPER_W_NO_LEASE), "no_lease");

	struct script sc;
	uint64_t id;
	setup_cfg(&sc);
	assert_int_equal(fw_keeper_worker_state(sc.k, 0, 10),
			 FW_KEEPER_W_WAITING); /* not started */
	assert_int_equal(start(&sc, NULL), 0);
	run(&sc, 30);
	assert_int_equal(fw_keeper_worker_state(sc.k, 0, 10), FW_KEEPER_W_ISSUING);
	assert_int_equal(burst(&sc, 0, &id, NULL), 0);
	assert_int_equal(fw_keeper_set_lease(sc.k, 0, 0), 0);
	assert_int_equal(fw_keeper_worker_state(sc.k, 0, 10), FW_KEEPER_W_NO_LEASE);
	assert_int_equal(fw_keeper_worker_state(sc.k, 1, 10), FW_KEEPER_W_ISSUING); /* its own */
	uint64_t ahead = true_ms(&sc) - EPOCH_MS + 60000;
	assert_int_equal(fw_keeper_set_worker(sc.k, 1, 9, ahead, FW_KEEPER_NO_LIMIT), 0);
	assert_int_equal(fw_keeper_worker_state(sc.k, 1, 10), FW_KEEPER_W_WAITING);
	teardown(&sc);
}

/*
 * The ID in the OK reply to a single-ID request answered by @srv at @now,
 * and its header, as the responders' fast path answers it (the second
 * request of the ms: the first one opens the generator's fast path).
 */
static uint64_t serve_one(struct fw_serve *srv, uint64_t now, struct fw_wire_reply *r)
{
	uint8_t b[64];
	int n = 0;

	for (int i = 0; i < 2; i++) {
		memset(b, 0, sizeof(b));
		assert_int_equal(fw_wire_write_request(b, sizeof(b), FW_WIRE_OP_ID, 1, 5, true),
				 32);
		n = fw_serve_answer_fast(srv, now, b, 32, sizeof(b), false);
	}
	assert_int_equal(fw_wire_parse_reply(b, (size_t)n, r), 0);
	assert_int_equal(r->hdr.status, FW_WIRE_ST_OK);
	return r->body.ids[0];
}

/*
 * fw_keeper_serve_burst, the clock step both responders take per burst:
 * after a fleet worker swap, the burst's replies name the new worker in
 * their header as in their IDs, and the snapshot's flags reach the serve.
 */
static void test_serve_burst_swap(void **state)
{
	(void)state;
	struct script s;
	struct fw_serve srv;
	struct fw_keeper_snap snap;
	struct fw_wire_reply r;
	struct fw_gen_config gc;
	uint32_t n;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	fw_gen_config_default(&gc);
	gc.worker = s.workers[0];
	assert_int_equal(fw_serve_init(&srv, &s.layout, &gc, NULL), 0);
	fw_keeper_worker_init(&s.w[0], &fw_keeper_slots(s.k, &n)[0], &srv.gen);

	srv.extra_flags = 0xff; /* overwritten by the snapshot */
	uint64_t now = fw_keeper_serve_burst(&s.w[0], &srv, ticks(&s), &snap);
	assert_int_equal(srv.extra_flags, snap.wire_flags);
	uint64_t id = serve_one(&srv, now, &r);
	assert_int_equal(r.hdr.worker, 1);
	assert_int_equal(id_worker(&s, id), 1);

	uint64_t floor = true_ms(&s) - EPOCH_MS + 20;
	assert_int_equal(fw_keeper_set_worker(s.k, 0, 77, floor, FW_KEEPER_NO_LIMIT), 0);
	run(&s, 30);
	now = fw_keeper_serve_burst(&s.w[0], &srv, ticks(&s), &snap);
	id = serve_one(&srv, now, &r);
	assert_int_equal(id_worker(&s, id), 77);
	assert_int_equal(r.hdr.worker, 77);
	teardown(&s);
}

/* A clean stop persists the highest ms issued, not the reservation. */
static void test_stop_persists_last(void **state)
{
	(void)state;
	struct script s;
	uint64_t id, written = 0;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	run(&s, 500);
	assert_int_equal(burst(&s, 1, &id, NULL), 0);
	assert_int_equal(fw_keeper_stop(s.k, fw_gen_last_ms(&s.gen[1]), &written), 0);
	assert_int_equal(written, id_ms(&s, id));
	assert_int_equal(s.st.mark, id_ms(&s, id));
	teardown(&s);
}

/* Readers never see a torn snapshot while the owner publishes. */
struct race {
	struct fw_keeper *k;
	struct fw_keeper_slot *slot;
	atomic_int done;
	atomic_ulong reads, torn;
};

static void *reader(void *arg)
{
	struct race *r = arg;
	struct fw_keeper_snap s;
	while (!atomic_load_explicit(&r->done, memory_order_acquire)) {
		fw_keeper_read(r->slot, &s);
		atomic_fetch_add_explicit(&r->reads, 1, memory_order_relaxed);
		if (s.floor_ms + 1 != s.lease_ms || s.worker_id != (uint32_t)(s.floor_ms & 1023))
			atomic_fetch_add_explicit(&r->torn, 1, memory_order_relaxed);
	}
	return NULL;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_seqlock_no_torn_reads(void **state)
{
	(void)state;
	struct script s;
	struct race r = {0};
	pthread_t th;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	assert_int_equal(fw_keeper_set_worker(s.k, 0, 0, 0, 1), 0);
	r.k = s.k;
	r.slot = fw_keeper_slots(s.k, NULL);
	assert_int_equal(pthread_create(&th, NULL, reader, &r), 0);
	/*
	 * Publish until the reader has overlapped with the writer for many reads: on a
	 * loaded 2-core machine the reader thread may not run at all during a fixed
	 * number of publishes. Bounded at 20 s of wall time.
	 */
	double until = wall_s() + 20.0;
	uint64_t i = 1;
	while (i < 300000 || (atomic_load(&r.reads) < 100000 && wall_s() < until)) {
		fw_keeper_set_worker(s.k, 0, (uint32_t)(i & 1023), i, i + 1);
		i++;
	}
	atomic_store_explicit(&r.done, 1, memory_order_release);
	pthread_join(th, NULL);
	assert_true(atomic_load(&r.reads) >= 100000);
	assert_int_equal(atomic_load(&r.torn), 0);
	teardown(&s);
}

/*
 * The other half of the seqlock, deterministic: while the keeper's write is
 * open (seq odd: fw_keeper_hold), a reader does not return; once it is
 * closed the reader returns a whole snapshot: the one before or the one
 * published at the release (hold(false) closes the open write first, so
 * the old one may still be read whole before the new one is written).
 */
struct held_read {
	struct fw_keeper_slot *slot;
	struct fw_keeper_snap snap;
	atomic_int done;
};

static void *held_reader(void *arg)
{
	struct held_read *h = arg;
	fw_keeper_read(h->slot, &h->snap);
	atomic_store(&h->done, 1);
	return NULL;
}

static void test_seqlock_reader_waits(void **state)
{
	(void)state;
	struct script s;
	struct held_read h = {0};
	pthread_t th;

	setup_cfg(&s);
	assert_int_equal(start(&s, NULL), 0);
	h.slot = fw_keeper_slots(s.k, NULL);
	struct fw_keeper_snap before, after;
	fw_keeper_read(h.slot, &before);
	fw_keeper_hold(s.k, true);
	assert_int_equal(fw_keeper_set_worker(s.k, 0, 33, 100, 101), 0); /* published at release */
	assert_int_equal(pthread_create(&th, NULL, held_reader, &h), 0);
	struct timespec ms50 = {0, 50 * 1000 * 1000};
	nanosleep(&ms50, NULL);
	assert_int_equal(atomic_load(&h.done), 0); /* still waiting on the open write */
	fw_keeper_hold(s.k, false);
	pthread_join(th, NULL);
	fw_keeper_read(h.slot, &after);
	assert_int_equal(after.worker_id, 33);
	assert_int_equal(after.floor_ms, 100);
	assert_int_equal(after.lease_ms, 101);
	assert_true(memcmp(&h.snap, &before, sizeof(before)) == 0 ||
		    memcmp(&h.snap, &after, sizeof(after)) == 0);
	teardown(&s);
}

/* ---- the mark file itself (io NULL): its layout and its record ---- */

struct fdir {
	char dir[64];
	char mark[96];
};

static void fdir_make(struct fdir *f)
{
	strcpy(f->dir, "/tmp/fw_keeper_XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->mark, sizeof(f->mark), "%s/mark", f->dir);
}

static void fdir_rm(struct fdir *f)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
}

static void file_cfg(struct script *s, const struct fdir *f)
{
	setup_cfg(s);
	s->cfg.io = NULL;
	s->cfg.state_file = f->mark;
}

/* One run on the file: start (expecting @want), 1 s of ticks, stop. */
static void file_run(struct script *s, int want)
{
	struct fw_keeper_start_info info;
	int rc = start(s, &info);
	assert_int_equal(rc, want);
	if (rc == 0) {
		run(s, 1000);
		assert_int_equal(fw_keeper_stop(s->k, 0, NULL), 0);
	}
	teardown(s);
}

/* A start with another epoch or widths than the mark fences refuses, naming both. */
static void test_file_layout_refuses(void **state)
{
	(void)state;
	struct fdir f;
	struct script s;
	char want[FW_MARK_LAYOUT_LEN];
	fdir_make(&f);
	file_cfg(&s, &f);
	file_run(&s, 0); /* a first start writes the mark in its layout */

	file_cfg(&s, &f);
	s.cfg.epoch_ms = EPOCH_MS + 5000; /* the issue's probe: the epoch 5 s later */
	last_error[0] = '\0';
	file_run(&s, FW_EMARK_LAYOUT);
	assert_non_null(strstr(last_error, f.mark));
	assert_non_null(strstr(last_error, "fences the ID layout epoch_ms 1767225600000 "));
	struct fw_mark_layout l = s.cfg.layout;
	l.epoch_ms = EPOCH_MS + 5000;
	assert_non_null(strstr(last_error, fw_mark_layout_format(&l, want)));
	assert_non_null(strstr(last_error, "flakectl mark"));
	assert_non_null(strstr(last_error, "--convert"));

	file_cfg(&s, &f);
	s.cfg.layout.sequence_bits = 10; /* a narrower sequence */
	file_run(&s, FW_EMARK_LAYOUT);
	file_cfg(&s, &f);
	s.cfg.layout.datacenter_bits = 2;
	s.cfg.layout.datacenter = 1;
	file_run(&s, FW_EMARK_LAYOUT);
	/* the layout it was written in still starts */
	file_cfg(&s, &f);
	file_run(&s, 0);
	fdir_rm(&f);
}

/* A mark deleted once written refuses the start, naming the file and a safe mark. */
static void test_file_lost_mark_refuses(void **state)
{
	(void)state;
	struct fdir f;
	struct script s;
	struct fw_keeper_start_info info;
	char rec[128];
	fdir_make(&f);
	file_cfg(&s, &f);
	file_run(&s, 0);
	assert_int_equal(unlink(f.mark), 0);

	file_cfg(&s, &f);
	last_error[0] = '\0';
	assert_int_equal(start(&s, &info), FW_EMARK_LOST);
	assert_int_equal(info.read_rc, FW_EMARK_LOST);
	assert_non_null(strstr(last_error, f.mark));
	assert_non_null(strstr(last_error, "refusing to start"));
	/* the advice covers a node that issued ahead of a clock stepped back by step_ms */
	uint64_t margin = s.cfg.mark_ahead_ms + s.cfg.clock.step_ns / NS_PER_MS;
	assert_true(info.advice_unix >= info.now_unix + margin);
	char adv[32];
	snprintf(adv, sizeof(adv), "%llu", (unsigned long long)info.advice_unix);
	assert_non_null(strstr(last_error, adv));
	teardown(&s);

	/* a state without the record starts (a first start, or one whose first write failed) */
	snprintf(rec, sizeof(rec), "%s.written", f.mark);
	assert_int_equal(unlink(rec), 0);
	file_cfg(&s, &f);
	file_run(&s, 0);
	fdir_rm(&f);
}

/* A format 1 mark is read as the configured layout and rewritten with it at the first reservation.
 */
static void test_file_v1_rewritten(void **state)
{
	(void)state;
	struct fdir f;
	struct script s;
	struct fw_keeper_start_info info;
	struct fw_mark m;
	fdir_make(&f);
	file_cfg(&s, &f);
	s.cfg.layout.worker_bits = 8;
	s.cfg.layout.sequence_bits = 14;
	uint64_t old = true_ms(&s) + 2000;
	char head[64], text[128];
	int n = snprintf(head, sizeof(head), "flakewire-mark 1\nunix_ms %llu\n",
			 (unsigned long long)old);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < n; i++) {
		h ^= (unsigned char)head[i];
		h *= 0x100000001b3ULL;
	}
	n = snprintf(text, sizeof(text), "%scheck %016llx\n", head, (unsigned long long)h);
	FILE *fp = fopen(f.mark, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, (size_t)n, fp), (size_t)n);
	assert_int_equal(fclose(fp), 0);

	assert_int_equal(start(&s, &info), 0);
	assert_int_equal(info.mark_unix, old);
	assert_int_equal(fw_keeper_worker_last(s.k, 0), 0);
	assert_int_equal(fw_mark_read_full(f.mark, &m), 0);
	assert_int_equal(m.format, 2);
	struct fw_mark_layout want = s.cfg.layout;
	want.epoch_ms = EPOCH_MS;
	assert_true(fw_mark_layout_equal(&m.layout, &want));
	assert_true(m.unix_ms >= old);
	assert_int_equal(fw_mark_recorded(f.mark), 1);
	teardown(&s);
	fdir_rm(&f);
}

static uint64_t real_wall(void *arg)
{
	(void)arg;
	return fw_wall_ns();
}

/* The tick sources: monotonic raw ticks and real time move forward. */
static void test_sources(void **state)
{
	(void)state;
	uint64_t a = fw_keeper_monoraw_ticks(), t, n;
	fw_keeper_sample(fw_keeper_monoraw_ticks, real_wall, NULL, &t, &n);
	assert_true(t >= a);
	assert_true(n > T0_NS - 86400000ULL * NS_PER_MS); /* after the epoch */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_first_start_reserves),
		cmocka_unit_test(test_mark_stays_ahead),
		cmocka_unit_test(test_restart_above_mark),
		cmocka_unit_test(test_start_policy),
		cmocka_unit_test(test_corrupt_refuses),
		cmocka_unit_test(test_back_step_1s_keeps_issuing),
		cmocka_unit_test(test_back_step_1h_keeps_issuing),
		cmocka_unit_test(test_status_not_older_than_slots),
		cmocka_unit_test(test_small_back_step_slews),
		cmocka_unit_test(test_forward_step),
		cmocka_unit_test(test_mark_failure),
		cmocka_unit_test(test_ticks_back_reanchors),
		cmocka_unit_test(test_rate_50pct_fast_learnt),
		cmocka_unit_test(test_rate_30pct_slow_learnt),
		cmocka_unit_test(test_rate_2000ppm_learnt),
		cmocka_unit_test(test_lease_limit),
		cmocka_unit_test(test_worker_swap),
		cmocka_unit_test(test_retired_max_covers_every_swap),
		cmocka_unit_test(test_worker_state),
		cmocka_unit_test(test_serve_burst_swap),
		cmocka_unit_test(test_stop_persists_last),
		cmocka_unit_test(test_seqlock_no_torn_reads),
		cmocka_unit_test(test_seqlock_reader_waits),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_file_layout_refuses),
		cmocka_unit_test(test_file_lost_mark_refuses),
		cmocka_unit_test(test_file_v1_rewritten),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

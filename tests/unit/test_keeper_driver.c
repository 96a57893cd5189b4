/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper driver both responders use (lib/keeper/fw_keeper_driver.h),
 * with a fake tick source and system clock: calibration over the window,
 * one tick per tick_ms with its events handed on, the stats line when due,
 * the test-clock hooks, the stop flag, and the exact mark persisted at stop.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fw_keeper_driver.h"

#define START_NS ((FW_DEFAULT_EPOCH_MS + 86400000ULL) * 1000000ULL)

/* A clock that moves 1 ms per read: calibration sees time pass without waiting. */
static _Atomic uint64_t fake_ns;

static uint64_t fake_ticks(void)
{
	return atomic_fetch_add(&fake_ns, 1000000) + 1000000;
}

struct owner {
	unsigned ticks, stats, polls, inits;
	atomic_uint walls; /* fake_wall calls with this owner as arg */
	unsigned stop_after;
	uint64_t highest;
	uint64_t written;
	int init_rc;
	struct fw_keeper *seen;
};

static uint64_t fake_wall(void *arg)
{
	atomic_fetch_add(&((struct owner *)arg)->walls, 1);
	return START_NS + atomic_load(&fake_ns);
}

static int st_read(void *arg, uint64_t *ms)
{
	(void)arg;
	(void)ms;
	return -ENOENT;
}

static int st_write(void *arg, uint64_t ms)
{
	((struct owner *)arg)->written = ms;
	return 0;
}

static bool should_stop(void *arg)
{
	const struct owner *o = arg;
	return o->ticks >= o->stop_after;
}

static int tc_init(void *arg, struct fw_keeper *k)
{
	struct owner *o = arg;
	o->inits++;
	o->seen = k;
	return o->init_rc;
}

static void tc_poll(void *arg, struct fw_keeper *k)
{
	struct owner *o = arg;
	assert_ptr_equal(k, o->seen);
	o->polls++;
}

static void on_tick(void *arg, uint32_t events, uint64_t tick, uint64_t wall_ns)
{
	(void)events;
	(void)tick;
	(void)wall_ns;
	((struct owner *)arg)->ticks++;
}

static void stats(void *arg, double interval_s)
{
	assert_true(interval_s > 0.049 && interval_s < 0.051);
	((struct owner *)arg)->stats++;
}

static uint64_t highest(void *arg)
{
	return ((struct owner *)arg)->highest;
}

static void config(struct fw_keeper_driver_config *dc, struct owner *o, struct fw_keeper_io *io,
		   uint32_t *ids)
{
	memset(dc, 0, sizeof(*dc));
	*io = (struct fw_keeper_io){st_read, st_write, o};
	fw_keeper_config_default(&dc->keeper);
	dc->keeper.io = io;
	dc->keeper.n_workers = 1;
	dc->keeper.worker_ids = ids;
	dc->calibrate_ms = 1;
	dc->tick_ms = 1;
	dc->stats_ms = 50;
	dc->ops = (struct fw_keeper_driver_ops){
		.arg = o,
		.ticks = fake_ticks,
		.wall = fake_wall,
		.should_stop = should_stop,
		.testclock_init = tc_init,
		.testclock_poll = tc_poll,
		.on_tick = on_tick,
		.stats = stats,
		.highest_issued = highest,
	};
}

static void test_run_and_stop(void **state)
{
	(void)state;
	struct fw_keeper_driver_config dc;
	struct fw_keeper_driver *d;
	struct fw_keeper_io io;
	uint32_t ids[1] = {7};
	struct owner o = {.stop_after = 200};

	config(&dc, &o, &io, ids);
	assert_int_equal(fw_keeper_driver_start(&dc, &d), 0);
	assert_int_equal(o.inits, 1);
	assert_ptr_equal(fw_keeper_driver_keeper(d), o.seen);
	struct fw_keeper_status st;
	fw_keeper_status(fw_keeper_driver_keeper(d), &st);
	assert_true(st.mark_unix_ms > 0); /* started: the first mark reserved */
	fw_keeper_driver_run(d);
	assert_int_equal(o.ticks, 200); /* stopped when should_stop said so */
	/* the system clock was read through the owner's arg: 5 tries per sample, a sample
	 * per tick and two for the calibration */
	assert_true(atomic_load(&o.walls) >= 5 * (200 + 2));
	assert_int_equal(o.polls, 200); /* the test clock polled before each tick */
	assert_int_equal(o.stats, 200 / 50);
	/* at stop the highest ms issued (layout ms) is persisted as the mark (unix ms) */
	o.highest = 123456;
	assert_int_equal(fw_keeper_driver_stop(d), 0);
	assert_int_equal(o.written, FW_DEFAULT_EPOCH_MS + 123456);
	fw_keeper_driver_free(d);
	fw_keeper_driver_free(NULL);
}

static void test_start_refused(void **state)
{
	(void)state;
	struct fw_keeper_driver_config dc;
	struct fw_keeper_driver *d = NULL;
	struct fw_keeper_io io;
	uint32_t ids[1] = {7};
	struct owner o = {.init_rc = -1};

	config(&dc, &o, &io, ids);
	assert_int_not_equal(fw_keeper_driver_start(&dc, &d), 0); /* the test clock refused */
	assert_null(d);
	dc.ops.should_stop = NULL; /* a required callback missing */
	assert_int_equal(fw_keeper_driver_start(&dc, &d), -EINVAL);
	assert_int_equal(fw_keeper_driver_start(NULL, &d), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_and_stop),
		cmocka_unit_test(test_start_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

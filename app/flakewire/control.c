/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: flakewire's side of the keeper driver (lib/keeper,
 * fw_keeper_driver.h), which calibrates the TSC against CLOCK_REALTIME,
 * ticks the timekeeper (re-anchoring by slewing, keeping the persisted mark
 * ahead of what lcores may issue, the start policy) and persists the exact
 * mark at the end. This file gives it the TSC, the test-clock hooks, the
 * fleet glue's tick, the log and the stats line; the policy is the
 * keeper's (fw_keeper.h), the same for flakesock.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "app.h"
#include "clock_pub.h"
#include "control.h"
#include "fleet.h"
#include "fw_responder_conf.h"
#include "fw_keeper_driver.h"
#include "log.h"
#include "stats.h"

/* The control thread's own state (app->control). */
struct fw_control {
	struct fw_app *app;
	struct fw_keeper_driver *driver;
	pthread_t thread;
	bool started;
	struct fw_stats_line line; /* the totals at the last stats line */
};

static void keeper_log(void *arg, enum fw_log_level level, const char *line)
{
	(void)arg;
	switch (level) {
	case FW_LOG_ERR:
		FW_LOG(ERR, "%s", line);
		break;
	case FW_LOG_WARNING:
		FW_LOG(WARNING, "%s", line);
		break;
	default:
		FW_LOG(INFO, "%s", line);
		break;
	}
}

static bool should_stop(void *arg)
{
	const struct fw_control *ctl = arg;

	return *ctl->app->quit;
}

static int testclock_init(void *arg, struct fw_keeper *k)
{
	struct fw_control *ctl = arg;

	ctl->app->keeper = k; /* the test clock holds its slots in a pause */
	return fw_testclock_init(ctl->app);
}

static void testclock_poll(void *arg, struct fw_keeper *k)
{
	const struct fw_control *ctl = arg;

	(void)k;
	fw_testclock_poll(ctl->app);
}

static void on_tick(void *arg, uint32_t events, uint64_t tick, uint64_t wall_ns)
{
	const struct fw_control *ctl = arg;

	fw_fleet_wire_tick(ctl->app, events, tick, wall_ns);
}

static void stats(void *arg, double interval_s)
{
	struct fw_control *ctl = arg;

	fw_stats_line(ctl->app, &ctl->line, interval_s);
}

/* lcores are stopped: the exact highest ms issued replaces the reservation */
static uint64_t highest_issued(void *arg)
{
	const struct fw_control *ctl = arg;
	uint64_t highest = 0;

	for (uint32_t i = 0; i < ctl->app->n_lcores; i++)
		highest = FW_MAX(highest, fw_gen_last_ms(&ctl->app->lcore[i].serve.gen));
	return highest;
}

int fw_control_start_state(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	struct fw_keeper_driver_config dc;
	uint32_t ids[FW_KEEPER_WORKERS_MAX];

	if (app->n_lcores > FW_KEEPER_WORKERS_MAX) {
		FW_LOG(ERR, "%u lcores: at most %u workers", app->n_lcores, FW_KEEPER_WORKERS_MAX);
		return -1;
	}
	struct fw_control *ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -1;
	ctl->app = app;
	app->control = ctl;
	for (uint32_t i = 0; i < app->n_lcores; i++)
		ids[i] = app->lcore[i].worker_id;
	char err[128];
	if (fw_responder_driver_config(&dc, c, app->layout.epoch_ms, app->n_lcores, ids,
				       "flakewire", err, sizeof(err))) {
		FW_LOG(ERR, "%s", err);
		return -1;
	}
	dc.ops = (struct fw_keeper_driver_ops){
		.arg = ctl,
		.ticks = fw_tsc_ticks_precise,
		.wall = fw_wall_ns,
		.log = {keeper_log, NULL},
		.should_stop = should_stop,
		.testclock_init = testclock_init,
		.testclock_poll = testclock_poll,
		.on_tick = on_tick,
		.stats = stats,
		.highest_issued = highest_issued,
	};
	/* the state's directory exists: fw_responder_state_lock made it (main.c) */
	if (fw_keeper_driver_start(&dc, &ctl->driver)) {
		app->keeper = NULL;
		return -1; /* logged */
	}
	app->keeper = fw_keeper_driver_keeper(ctl->driver);
	struct fw_keeper_status st;
	fw_keeper_status(app->keeper, &st);
	double hz = fw_clock_hz(&st.cal);
	double nominal = (double)rte_get_tsc_hz();
	FW_LOG(INFO,
	       "clock: TSC %.0f Hz measured over %u ms against CLOCK_REALTIME; "
	       "rte_get_tsc_hz() %.0f Hz is %+.0f ppm off",
	       hz, c->clock.calibrate_ms, nominal, (nominal - hz) / hz * 1e6);
	struct fw_keeper_slot *slots = fw_keeper_slots(app->keeper, NULL);
	for (uint32_t i = 0; i < app->n_lcores; i++)
		fw_keeper_worker_init(&app->lcore[i].kw, &slots[i], &app->lcore[i].serve.gen);
	return 0;
}

static void *control_main(void *arg)
{
	struct fw_control *ctl = arg;

	fw_keeper_driver_run(ctl->driver);
	return NULL;
}

int fw_control_start(struct fw_app *app)
{
	struct fw_control *ctl = app->control;

	if (!ctl || !ctl->driver)
		return -1;
	int rc = rte_ctrl_thread_create(&ctl->thread, "fw-control", NULL, control_main, ctl);
	if (rc) {
		FW_LOG(ERR, "cannot start the control thread: %s", strerror(rc));
		return -1;
	}
	ctl->started = true;
	return 0;
}

void fw_control_stop(struct fw_app *app)
{
	struct fw_control *ctl = app->control;

	if (!ctl)
		return;
	if (ctl->started)
		pthread_join(ctl->thread, NULL);
	ctl->started = false;
	if (ctl->driver)
		fw_keeper_driver_stop(ctl->driver);
	/*
	 * The driver and its keeper stay allocated: telemetry may read the
	 * keeper's slots until EAL cleanup.
	 */
}

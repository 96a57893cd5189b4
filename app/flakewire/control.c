/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: a thin driver of the timekeeper (lib/keeper), which
 * calibrates the TSC against CLOCK_REALTIME, re-anchors by slewing, keeps
 * the persisted mark ahead of what lcores may issue and applies the start
 * policy. This file samples the clocks, sleeps, routes the keeper's lines
 * to the log and prints the stats line; the policy is the keeper's (see
 * fw_keeper.h and the README's fault table, which hold for flakesock too).
 */
#include <errno.h>
#include <pthread.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "app.h"
#include "clock_pub.h"
#include "control.h"
#include "fleet.h"
#include "fw_err.h"
#include "fw_keeper_conf.h"
#include "log.h"
#include "stats.h"

#define TICK_MS 10

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static void keeper_log(void *arg, enum fw_keeper_level level, const char *line)
{
	(void)arg;
	switch (level) {
	case FW_KEEPER_LOG_ERR:
		FW_LOG(ERR, "%s", line);
		break;
	case FW_KEEPER_LOG_WARNING:
		FW_LOG(WARNING, "%s", line);
		break;
	default:
		FW_LOG(INFO, "%s", line);
		break;
	}
}

/* A (tsc, system clock) pair: the only place the system clock is read. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
	fw_keeper_sample(fw_tsc_ticks_precise, fw_wall_ns, tsc, ns);
}

/* The control thread's own state (app->control). */
struct fw_control {
	pthread_t thread;
	struct fw_stats_line line; /* the totals at the last stats line */
};

static void make_state_dir(const char *file)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", file);
	if (mkdir(dirname(dir), 0755) && errno != EEXIST)
		FW_LOG(WARNING, "cannot create the directory of %s: %s", file, strerror(errno));
}

static int keeper_create(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	struct fw_keeper_config kc;
	uint32_t ids[FW_KEEPER_WORKERS_MAX];

	if (app->n_lcores > FW_KEEPER_WORKERS_MAX) {
		FW_LOG(ERR, "%u lcores: at most %u workers", app->n_lcores, FW_KEEPER_WORKERS_MAX);
		return -1;
	}
	for (uint32_t i = 0; i < app->n_lcores; i++)
		ids[i] = app->lcore[i].worker_id;
	fw_keeper_config_from_conf(&kc, c, app->layout.epoch_ms);
	kc.n_workers = app->n_lcores;
	kc.worker_ids = ids;
	kc.name = "flakewire";
	kc.log = keeper_log;
	int rc = fw_keeper_create(&kc, &app->keeper);
	if (rc)
		FW_LOG(ERR, "timekeeper: %s", fw_strerror(rc));
	return rc ? -1 : 0;
}

int fw_control_start_state(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	uint64_t t0, n0, t1, n1;

	if (keeper_create(app) || fw_testclock_init(app))
		return -1;
	make_state_dir(c->state.file);
	sample(&t0, &n0);
	sleep_ms(c->clock.calibrate_ms);
	sample(&t1, &n1);
	int rc = fw_keeper_start(app->keeper, t0, n0, t1, n1, NULL);
	if (rc == FW_ECAL)
		FW_LOG(ERR, "clock calibration failed: %s", fw_strerror(rc));
	if (rc)
		return -1; /* the keeper logged why */
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
	struct fw_app *app = arg;
	const struct fw_conf *c = &app->conf;
	uint64_t t = 0, next_stats = 0;
	uint64_t stats_ms = (uint64_t)c->stats.interval_s * 1000;

	next_stats = stats_ms;
	while (!*app->quit) {
		uint64_t tsc, ns;

		sleep_ms(TICK_MS);
		t += TICK_MS;
		fw_testclock_poll(app);
		sample(&tsc, &ns);
		uint32_t ev = fw_keeper_tick(app->keeper, tsc, ns);
		fw_fleet_wire_tick(app, ev, tsc, ns);
		if (stats_ms && t >= next_stats) {
			fw_stats_line(app, &app->control->line, (double)c->stats.interval_s);
			next_stats = t + stats_ms;
		}
	}
	return NULL;
}

int fw_control_start(struct fw_app *app)
{
	struct fw_control *ctl = calloc(1, sizeof(*ctl));

	if (!ctl)
		return -1;
	app->control = ctl;
	int rc = rte_ctrl_thread_create(&ctl->thread, "fw-control", NULL, control_main, app);
	if (rc) {
		FW_LOG(ERR, "cannot start the control thread: %s", strerror(rc));
		app->control = NULL;
		free(ctl);
		return -1;
	}
	return 0;
}

void fw_control_stop(struct fw_app *app)
{
	uint64_t highest = 0;

	if (app->control) {
		pthread_join(app->control->thread, NULL);
		free(app->control);
		app->control = NULL;
	}
	if (!app->keeper)
		return;
	/* lcores are stopped: the exact highest ms issued replaces the reservation */
	for (uint32_t i = 0; i < app->n_lcores; i++)
		highest = FW_MAX(highest, fw_gen_last_ms(&app->lcore[i].serve.gen));
	fw_keeper_stop(app->keeper, highest, NULL);
	/* the keeper stays allocated: telemetry may read its slots until EAL cleanup */
}

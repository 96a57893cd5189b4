/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: calibrates the TSC against CLOCK_REALTIME at start,
 * re-anchors by slewing every reanchor_ms, and keeps the persisted mark
 * ahead of what lcores may issue. Lcores only ever issue up to the mark
 * published here, and it is published only after it is on disk: when
 * persisting fails the mark stays where it is, lcores reach it and answer
 * RETRY_AFTER, and this thread keeps trying.
 *
 * The system clock stepped back by more than step_ms: flakewire's own clock
 * never steps back, it goes on issuing from it while slewing at max_slew_ppm
 * toward the system clock, and every reply carries FW_WIRE_F_BACKSTEP (with
 * SLEWING) until the offset is under step_ms again. Uniqueness rests on that
 * monotonic clock and the persisted mark, never on the system clock; refusing
 * instead would turn an NTP correction of an hour into an hour of outage.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "fw_app.h"
#include "fw_err.h"
#include "fw_mark.h"
#include "fw_wire.h"

#define TICK_MS        10
#define MARK_RETRY_MS  100
#define SLEWING_LOG_NS 1000000 /* offsets from 1 ms on are logged and flagged */
#define CLOCK_LOG_MS   30000   /* while nothing changes, a clock line this often */

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static uint64_t epoch_ms_of(const struct fw_app *app, uint64_t unix_ms)
{
	return unix_ms > app->layout.epoch_ms ? unix_ms - app->layout.epoch_ms : 0;
}

static void publish(struct fw_app *app)
{
	struct fw_clock_snap s = {
		.cal = app->cal,
		.mark_ms = epoch_ms_of(app, app->mark_unix_ms),
		.offset_ns = app->cal.offset_ns,
	};
	int64_t off = app->cal.offset_ns;

	if ((app->cal.flags & FW_CLOCK_F_SLEWING) &&
	    (off >= SLEWING_LOG_NS || -off >= SLEWING_LOG_NS))
		s.wire_flags = FW_WIRE_F_SLEWING;
	if (app->cal.flags & FW_CLOCK_F_BACK_STEP)
		s.wire_flags |= FW_WIRE_F_BACKSTEP;
	fw_clock_pub_write(&app->pub, &s);
}

static uint64_t clock_now_ms(const struct fw_app *app)
{
	return fw_clock_ms(&app->cal, rte_rdtsc());
}

/* A (tsc, system clock) pair: the only place the system clock is read. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
	fw_clock_sample(tsc, ns);
	*ns = fw_testclock_ns(*ns);
}

static int calibrate(struct fw_app *app)
{
	uint64_t t0, n0, t1, n1;
	int rc;

	sample(&t0, &n0);
	sleep_ms(app->conf.clock.calibrate_ms);
	sample(&t1, &n1);
	rc = fw_clock_calibrate(&app->cal, t0, n0, t1, n1);
	if (rc) {
		FW_LOG(ERR, "clock calibration failed: %s", fw_strerror(rc));
		return -1;
	}
	double hz = fw_clock_hz(&app->cal);
	double nominal = (double)rte_get_tsc_hz();
	FW_LOG(INFO,
	       "clock: TSC %.0f Hz measured over %u ms against CLOCK_REALTIME; "
	       "rte_get_tsc_hz() %.0f Hz is %+.0f ppm off",
	       hz, app->conf.clock.calibrate_ms, nominal, (nominal - hz) / hz * 1e6);
	return 0;
}

static void make_state_dir(const char *file)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", file);
	if (mkdir(dirname(dir), 0755) && errno != EEXIST)
		FW_LOG(WARNING, "cannot create the directory of %s: %s", file, strerror(errno));
}

/* Persists a new mark; publishes it only once it is on disk. */
static int extend_mark(struct fw_app *app, uint64_t target)
{
	int rc = fw_mark_write(app->conf.state.file, target);

	if (rc) {
		app->mark_failures++;
		if (!app->mark_failing)
			FW_LOG(ERR,
			       "mark: cannot persist %lu to %s: %s; lcores answer RETRY_AFTER "
			       "once they reach %lu",
			       (unsigned long)target, app->conf.state.file, fw_strerror(rc),
			       (unsigned long)app->mark_unix_ms);
		app->mark_failing = true;
		return rc;
	}
	if (app->mark_failing)
		FW_LOG(INFO, "mark: persisting works again (%lu)", (unsigned long)target);
	app->mark_failing = false;
	app->mark_writes++;
	app->mark_unix_ms = target;
	publish(app);
	return 0;
}

int fw_control_start_state(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	uint64_t mark = 0;
	int rc;

	fw_clock_policy_default(&app->policy);
	app->policy.max_slew_ppm = c->clock.max_slew_ppm;
	app->policy.horizon_ms = c->clock.reanchor_ms;
	app->policy.step_ns = (uint64_t)c->clock.step_ms * 1000000u;
	if (fw_testclock_init(app) || calibrate(app))
		return -1;

	make_state_dir(c->state.file);
	rc = fw_mark_read(c->state.file, &mark);
	if (rc == -ENOENT) {
		FW_LOG(INFO, "mark: %s does not exist: first start", c->state.file);
		mark = 0;
	} else if (rc) {
		FW_LOG(ERR,
		       "mark: cannot read %s: %s; refusing to start: the IDs issued before are "
		       "unknown. Fix: restore the file, or write a mark at or above the last "
		       "time this node may have issued IDs (its last run's end plus "
		       "[state] mark_ahead_ms) with 'flakectl mark %s --set UNIX_MS --force', "
		       "then start again",
		       c->state.file, fw_strerror(rc), c->state.file);
		return -1;
	}
	app->floor_unix_ms = mark;
	uint64_t now = clock_now_ms(app);
	if (mark > now) {
		uint64_t behind = mark - now;
		if (c->state.start_policy == FW_CONF_START_FAIL &&
		    behind > c->state.mark_ahead_ms) {
			FW_LOG(ERR,
			       "mark: system clock is %lu ms behind the persisted mark %lu "
			       "(start_policy = fail)",
			       (unsigned long)behind, (unsigned long)mark);
			return -1;
		}
		FW_LOG(WARNING,
		       "mark: system clock is %lu ms behind the persisted mark %lu "
		       "(start_policy = %s): answering RETRY_AFTER until it passes",
		       (unsigned long)behind, (unsigned long)mark,
		       fw_conf_start_policy_name(c->state.start_policy));
	}
	if (mark) {
		for (uint32_t i = 0; i < app->n_lcores; i++)
			fw_gen_set_floor(&app->lcore[i].serve.gen, epoch_ms_of(app, mark));
		FW_LOG(INFO, "mark: read %lu from %s: issuing above it", (unsigned long)mark,
		       c->state.file);
	}
	app->mark_unix_ms = mark;
	publish(app);
	/*
	 * Reserve from the clock, not from the mark: nothing can be issued up to
	 * the mark anyway, and reserving past it would push the mark a further
	 * mark_ahead_ms into the future at every start of a crash loop.
	 */
	if (extend_mark(app, FW_MAX(now + c->state.mark_ahead_ms, mark)) == 0)
		FW_LOG(INFO, "mark: reserved up to %lu (%lu ms ahead of the clock) in %s",
		       (unsigned long)app->mark_unix_ms, (unsigned long)(app->mark_unix_ms - now),
		       c->state.file);
	return 0;
}

/*
 * Re-anchors and publishes. Logs a step at once, and an offset of 1 ms or
 * more when its kind changes (behind by more than step_ms, off by 1 ms or
 * more, back under 1 ms) and every CLOCK_LOG_MS while it lasts: a backward
 * step of an hour is slewed away over months, one line a second would bury
 * the log. @t: the control thread's ms counter.
 */
static void reanchor(struct fw_app *app, uint64_t t, uint64_t *next_log)
{
	struct fw_clock_cal next;
	uint64_t tsc, ns;
	uint32_t before = app->cal.flags;
	bool was_big =
		app->cal.offset_ns >= SLEWING_LOG_NS || -app->cal.offset_ns >= SLEWING_LOG_NS;

	sample(&tsc, &ns);
	if (fw_clock_reanchor(&app->cal, &app->policy, tsc, ns, &next))
		return;
	app->cal = next;
	publish(app);

	int64_t off = next.offset_ns;
	bool big = off >= SLEWING_LOG_NS || -off >= SLEWING_LOG_NS;
	bool changed = ((before ^ next.flags) & FW_CLOCK_F_BACK_STEP) || big != was_big;
	if (next.flags & FW_CLOCK_F_FWD_STEP) {
		app->clock_events++;
		FW_LOG(WARNING, "clock: system clock jumped ahead by %.3f ms: stepped forward",
		       (double)off / 1e6);
		return;
	}
	if (!changed && !(big && t >= *next_log))
		return;
	*next_log = t + CLOCK_LOG_MS;
	if (changed)
		app->clock_events++;
	if (next.flags & FW_CLOCK_F_BACK_STEP)
		FW_LOG(WARNING,
		       "clock: system clock is %.3f ms behind flakewire: slewing at %.1f ppm, "
		       "never stepping back; replies carry BACKSTEP",
		       (double)-off / 1e6, (double)next.slew_ppb / 1e3);
	else
		FW_LOG(INFO,
		       "clock: offset %+.3f ms, slewing at %+.1f ppm (%.0f Hz, generation %lu)",
		       (double)off / 1e6, (double)next.slew_ppb / 1e3, fw_clock_hz(&next),
		       (unsigned long)next.generation);
}

static void *control_main(void *arg)
{
	struct fw_app *app = arg;
	const struct fw_conf *c = &app->conf;
	uint64_t t = 0, next_anchor = c->clock.reanchor_ms, next_stats = 0, next_mark_try = 0;
	uint64_t next_clock_log = 0;
	uint64_t stats_ms = (uint64_t)c->stats.interval_s * 1000;

	next_stats = stats_ms;
	while (!*app->quit) {
		sleep_ms(TICK_MS);
		t += TICK_MS;
		fw_testclock_poll(app);
		if (t >= next_anchor) {
			reanchor(app, t, &next_clock_log);
			next_anchor = t + c->clock.reanchor_ms;
		}
		uint64_t now = clock_now_ms(app);
		if (t >= next_mark_try && app->mark_unix_ms < now + c->state.mark_ahead_ms / 2) {
			if (extend_mark(app, now + c->state.mark_ahead_ms))
				next_mark_try = t + MARK_RETRY_MS;
		}
		if (stats_ms && t >= next_stats) {
			fw_stats_line(app, (double)c->stats.interval_s);
			next_stats = t + stats_ms;
		}
	}
	return NULL;
}

int fw_control_start(struct fw_app *app)
{
	int rc = rte_ctrl_thread_create(&app->control, "fw-control", NULL, control_main, app);

	if (rc) {
		FW_LOG(ERR, "cannot start the control thread: %s", strerror(rc));
		return -1;
	}
	app->control_started = true;
	return 0;
}

void fw_control_stop(struct fw_app *app)
{
	uint64_t highest = 0;

	if (app->control_started)
		pthread_join(app->control, NULL);
	app->control_started = false;
	/* lcores are stopped: the exact highest ms issued replaces the reservation */
	for (uint32_t i = 0; i < app->n_lcores; i++)
		highest = FW_MAX(highest, fw_gen_last_ms(&app->lcore[i].serve.gen));
	uint64_t final = FW_MAX(app->floor_unix_ms, highest ? highest + app->layout.epoch_ms : 0);
	if (!final)
		final = clock_now_ms(app);
	int rc = fw_mark_write(app->conf.state.file, final);
	if (rc)
		FW_LOG(ERR, "mark: cannot persist %lu at exit: %s (the reservation %lu stays)",
		       (unsigned long) final, fw_strerror(rc), (unsigned long)app->mark_unix_ms);
	else
		FW_LOG(INFO, "mark: persisted %lu (at or above every ID issued) to %s",
		       (unsigned long) final, app->conf.state.file);
}

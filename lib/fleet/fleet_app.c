/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_fleet_app.h"

struct fw_fleet_app {
	struct fw_fleet *reg;
	uint32_t n;
	uint64_t epoch_ms;
	bool new_worker;      /* [clock] backstep = new_worker */
	uint64_t start_floor; /* layout ms: the mark the keeper read at start */
	struct fw_log log;
	struct fw_fleet_slot cur[FW_FLEET_SLOTS_MAX]; /* what the keeper was given */
	int32_t retiring[FW_FLEET_SLOTS_MAX];         /* replaced ID, retired once swapped */
	bool ended_logged[FW_FLEET_SLOTS_MAX];
	bool stepping;                        /* new_worker: waiting for every slot's new ID */
	int32_t replaced[FW_FLEET_SLOTS_MAX]; /* new_worker: the slot's ID when it was asked */
};

int fw_fleet_app_create(struct fw_fleet *reg, uint32_t n_workers, uint64_t epoch_ms,
			bool new_worker, struct fw_log log, struct fw_fleet_app **out)
{
	struct fw_fleet_app *a = calloc(1, sizeof(*a));
	*out = NULL;
	if (a == NULL || n_workers > FW_FLEET_SLOTS_MAX) {
		free(a);
		fw_fleet_free(reg);
		return a ? -EINVAL : -ENOMEM;
	}
	a->reg = reg;
	a->n = n_workers;
	a->epoch_ms = epoch_ms;
	a->new_worker = new_worker;
	a->log = log;
	for (uint32_t i = 0; i < n_workers; i++) {
		fw_fleet_slot(a->reg, i, &a->cur[i]);
		a->retiring[i] = FW_FLEET_WORKER_NONE;
	}
	*out = a;
	return 0;
}

uint32_t fw_fleet_app_worker(const struct fw_fleet_app *a, uint32_t i)
{
	return a->cur[i].worker < 0 ? 0u : (uint32_t)a->cur[i].worker;
}

static uint64_t floor_of(const struct fw_fleet_app *a, const struct fw_fleet_slot *s)
{
	return FW_MAX(s->floor_ms, a->start_floor);
}

void fw_fleet_app_attach(struct fw_fleet_app *a, struct fw_keeper *k)
{
	struct fw_keeper_status st;
	fw_keeper_status(k, &st);
	a->start_floor = st.floor_unix_ms > a->epoch_ms ? st.floor_unix_ms - a->epoch_ms : 0;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct fw_fleet_slot *s = &a->cur[i];
		fw_keeper_set_worker(k, i, fw_fleet_app_worker(a, i), floor_of(a, s),
				     s->worker < 0 ? 0 : s->lease_ms);
	}
}

/* A new worker ID or floor for slot @i: the worker swaps at its next burst. */
static void apply(struct fw_fleet_app *a, struct fw_keeper *k, uint32_t i,
		  const struct fw_fleet_slot *s)
{
	struct fw_fleet_slot *c = &a->cur[i];
	if (c->worker >= 0 && s->worker != c->worker && !c->lost)
		a->retiring[i] = c->worker;
	fw_keeper_set_worker(k, i, s->worker < 0 ? 0u : (uint32_t)s->worker, floor_of(a, s),
			     s->worker < 0 ? 0 : s->lease_ms);
	a->ended_logged[i] = false;
	*c = *s;
}

/*
 * backstep = new_worker, once the registry published every slot's fresh ID
 * (fw_fleet_replace_all: all or none): swaps every slot and steps the time
 * back with the workers held, so that no worker ever reads a fresh worker
 * ID with the old (ahead) time, nor an old worker ID with the stepped time
 * (either would see its own clock go back: CLOCK_UNSAFE or RETRY_AFTER).
 * Returns false while some slot's replacement is not published yet.
 */
static bool swap_and_step(struct fw_fleet_app *a, struct fw_keeper *k,
			  const struct fw_fleet_slot *s, uint64_t tick, uint64_t wall_ns)
{
	for (uint32_t i = 0; i < a->n; i++)
		if (s[i].worker == a->replaced[i] || s[i].worker < 0)
			return false;
	fw_keeper_hold(k, true);
	for (uint32_t i = 0; i < a->n; i++)
		apply(a, k, i, &s[i]);
	fw_keeper_step_to_wall(k, tick, wall_ns);
	fw_keeper_hold(k, false);
	a->stepping = false;
	return true;
}

void fw_fleet_app_tick(struct fw_fleet_app *a, struct fw_keeper *k, uint32_t events, uint64_t tick,
		       uint64_t wall_ns)
{
	char ts[FW_ISO8601_LEN];
	struct fw_keeper_status kst;
	struct fw_fleet_slot s[FW_FLEET_SLOTS_MAX];
	fw_keeper_status(k, &kst);
	uint64_t now_l = kst.now_unix_ms > a->epoch_ms ? kst.now_unix_ms - a->epoch_ms : 0;

	if ((events & FW_KEEPER_EV_BACK_STEP) && a->new_worker && !a->stepping) {
		fw_log(&a->log, FW_LOG_WARNING,
		       "fleet: system clock stepped back beyond [clock] step_ms and backstep = "
		       "new_worker: claiming a fresh worker ID for every worker");
		for (uint32_t i = 0; i < a->n; i++)
			a->replaced[i] = a->cur[i].worker;
		fw_fleet_replace_all(a->reg);
		a->stepping = true;
	}
	for (uint32_t i = 0; i < a->n; i++)
		fw_fleet_slot(a->reg, i, &s[i]);
	bool swapped = a->stepping && swap_and_step(a, k, s, tick, wall_ns);
	for (uint32_t i = 0; i < a->n; i++) {
		struct fw_fleet_slot *c = &a->cur[i];
		uint64_t last;
		if (swapped) {
			/* applied above */
		} else if (s[i].gen != c->gen && !a->stepping) {
			apply(a, k, i, &s[i]);
		} else if (s[i].gen != c->gen && s[i].worker == c->worker) {
			/* stepping: a new floor (takeover) of the same ID is no swap */
			apply(a, k, i, &s[i]);
		} else if (s[i].gen == c->gen && s[i].lease_ms != c->lease_ms) {
			fw_keeper_set_lease(k, i, s[i].lease_ms);
			*c = s[i];
		}
		if (a->retiring[i] >= 0 && fw_keeper_worker_retired(k, i, &last)) {
			/* the old ID issued nothing above @last and never will again */
			fw_fleet_retire(a->reg, a->retiring[i], FW_MAX(last, a->start_floor));
			a->retiring[i] = FW_FLEET_WORKER_NONE;
		}
		if (c->worker >= 0 && now_l > c->lease_ms && !a->ended_logged[i]) {
			fw_log(&a->log, FW_LOG_WARNING,
			       "fleet: worker %d: its confirmed lease ended at %s; answering "
			       "NO_LEASE until the registry confirms a new one",
			       c->worker, fw_format_iso8601(c->lease_ms + a->epoch_ms, ts));
			a->ended_logged[i] = true;
		} else if (c->worker >= 0 && now_l <= c->lease_ms && a->ended_logged[i]) {
			fw_log(&a->log, FW_LOG_INFO,
			       "fleet: worker %d: lease confirmed again; issuing", c->worker);
			a->ended_logged[i] = false;
		}
	}
}

struct fw_fleet *fw_fleet_app_registry(struct fw_fleet_app *a)
{
	return a->reg;
}

int fw_fleet_app_release(struct fw_fleet_app *a, uint32_t timeout_ms)
{
	return a ? fw_fleet_stop_release(a->reg, timeout_ms) : -EINVAL;
}

void fw_fleet_app_free(struct fw_fleet_app *a)
{
	if (a == NULL)
		return;
	fw_fleet_free(a->reg);
	free(a);
}

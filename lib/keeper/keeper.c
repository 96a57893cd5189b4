/* SPDX-License-Identifier: BSD-3-Clause */
/* The timekeeper state machine (fw_keeper.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_err.h"
#include "fw_keeper.h"
#include "fw_mark.h"
#include "fw_seqlock.h"
#include "fw_time.h"
#include "fw_wire.h"

#define NS_PER_MS     1000000ull
#define OFFSET_BIG_NS 1000000 /* offsets from 1 ms on are flagged SLEWING and logged */
#define DEFAULT_AHEAD 300     /* [state] mark_ahead_ms, lib/conf */
#define DEFAULT_RETRY 100
#define CLOCK_LOG_MS  30000 /* while an offset lasts, a clock line this often */
/* The tick source going back less than this is noise (a TSC read on another core): ignored. */
#define TICKS_BACK_NS 1000000

struct slot_state {
	uint32_t worker_id;
	uint64_t floor_ms;
	uint64_t lease_ms;
	uint64_t gen;
};

struct fw_keeper {
	struct fw_keeper_config cfg;
	struct fw_keeper_io io;
	struct fw_mark_layout layout; /* what the mark fences: cfg.layout at cfg.epoch_ms */
	struct fw_mark found;         /* the file's mark as read at start (files only) */
	struct fw_clock_cal cal;
	uint64_t anchor_ns;   /* keeper time (ns) of the last anchor */
	uint64_t now_unix_ms; /* keeper time at the last call */
	uint64_t mark_unix;   /* persisted and published */
	uint64_t floor_unix;  /* read at start */
	uint64_t next_try_ns; /* keeper time before which a failed persist is not retried */
	bool failing;
	bool big_offset;
	bool back_step;
	bool held;
	bool started;
	uint64_t last_ns;        /* the highest keeper time (ns) a sample reached */
	uint64_t ticks_backs;    /* times the tick source went back and was re-anchored */
	uint64_t next_clock_log; /* keeper unix ms */
	int last_write_rc;
	uint64_t mark_writes, mark_failures, back_steps, clock_events;
	struct slot_state *st;
	struct fw_keeper_slot *slots;     /* n_workers, cache aligned */
	FW_SEQLOCK(fw_keeper_status) pub; /* the status for other threads (fw_keeper_status) */
};

static const char *file_name(const struct fw_keeper *k)
{
	return k->cfg.state_file ? k->cfg.state_file : "the mark store";
}

uint64_t fw_keeper_monoraw_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fw_keeper_sample(fw_keeper_ticks_fn ticks, fw_keeper_wall_fn wall, void *wall_arg,
		      uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	/* keep the pair whose tick bracket around the wall-clock read is the tightest */
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = ticks();
		uint64_t n = wall(wall_arg);
		uint64_t t1 = ticks();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tick = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

/* The files: the mark must fence this keeper's layout (fw_mark_open). */
static int file_read(void *arg, uint64_t *unix_ms)
{
	struct fw_keeper *k = arg;
	int rc = fw_mark_open(k->cfg.state_file, &k->layout, &k->found);

	if (rc == 0)
		*unix_ms = k->found.unix_ms;
	return rc;
}

static int file_write(void *arg, uint64_t unix_ms)
{
	struct fw_keeper *k = arg;

	return fw_mark_write(k->cfg.state_file, unix_ms, &k->layout);
}

void fw_keeper_config_default(struct fw_keeper_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	fw_clock_policy_default(&cfg->clock);
	cfg->reanchor_ms = FW_CLOCK_DEFAULT_HORIZON_MS;
	cfg->mark_ahead_ms = DEFAULT_AHEAD;
	cfg->mark_retry_ms = DEFAULT_RETRY;
	cfg->start_policy = FW_KEEPER_START_WAIT;
	cfg->epoch_ms = FW_DEFAULT_EPOCH_MS;
	cfg->layout = (struct fw_mark_layout){
		.epoch_ms = FW_DEFAULT_EPOCH_MS, .worker_bits = 10, .sequence_bits = 12};
}

int fw_keeper_create(const struct fw_keeper_config *cfg, struct fw_keeper **out)
{
	struct fw_keeper *k;

	if (!cfg || !out || cfg->n_workers == 0 || cfg->n_workers > FW_KEEPER_WORKERS_MAX ||
	    !cfg->worker_ids || cfg->reanchor_ms == 0 || cfg->mark_ahead_ms == 0 ||
	    (!cfg->state_file && (!cfg->io || !cfg->io->read_mark || !cfg->io->write_mark)))
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->cfg = *cfg;
	if (k->cfg.mark_retry_ms == 0)
		k->cfg.mark_retry_ms = DEFAULT_RETRY;
	k->io.read_mark = cfg->io && cfg->io->read_mark ? cfg->io->read_mark : file_read;
	k->io.write_mark = cfg->io && cfg->io->write_mark ? cfg->io->write_mark : file_write;
	k->io.arg = cfg->io && cfg->io->read_mark ? cfg->io->arg : (void *)k;
	k->layout = cfg->layout;
	k->layout.epoch_ms = cfg->epoch_ms;
	k->cfg.io = &k->io;
	k->st = calloc(cfg->n_workers, sizeof(*k->st));
	k->slots = aligned_alloc(FW_CACHE_LINE, sizeof(*k->slots) * cfg->n_workers);
	if (!k->st || !k->slots) {
		fw_keeper_free(k);
		return -ENOMEM;
	}
	memset(k->slots, 0, sizeof(*k->slots) * cfg->n_workers);
	for (uint32_t i = 0; i < cfg->n_workers; i++) {
		k->st[i].worker_id = cfg->worker_ids[i];
		k->st[i].lease_ms = FW_KEEPER_NO_LIMIT;
		k->st[i].gen = 1;
	}
	k->cfg.worker_ids = NULL; /* not kept: slot i holds its worker ID */
	if (!k->cfg.name)
		k->cfg.name = "the responder";
	*out = k;
	return 0;
}

void fw_keeper_free(struct fw_keeper *k)
{
	if (!k)
		return;
	free(k->st);
	free(k->slots);
	free(k);
}

static uint64_t layout_ms(const struct fw_keeper *k, uint64_t unix_ms)
{
	return unix_ms > k->cfg.epoch_ms ? unix_ms - k->cfg.epoch_ms : 0;
}

static void publish_slot(struct fw_keeper *k, uint32_t i)
{
	struct fw_keeper_slot *sl = &k->slots[i];
	struct fw_keeper_snap s;
	uint32_t state = 0, wf = 0;
	int64_t off = k->cal.offset_ns;

	if (k->held)
		return; /* fw_keeper_hold(false) publishes */
	if ((k->cal.flags & FW_CLOCK_F_SLEWING) &&
	    (off >= OFFSET_BIG_NS || -off >= OFFSET_BIG_NS)) {
		state |= FW_KEEPER_S_SLEWING;
		wf |= FW_WIRE_F_SLEWING;
	}
	if (k->cal.flags & FW_CLOCK_F_BACK_STEP) {
		state |= FW_KEEPER_S_BACK_STEP;
		wf |= FW_WIRE_F_BACKSTEP;
	}
	if (k->failing)
		state |= FW_KEEPER_S_MARK_FAIL;
	memset(&s, 0, sizeof(s));
	s.cal = k->cal;
	s.epoch_ms = k->cfg.epoch_ms;
	s.mark_ms = layout_ms(k, k->mark_unix);
	s.lease_ms = k->st[i].lease_ms;
	s.floor_ms = k->st[i].floor_ms;
	s.worker_gen = k->st[i].gen;
	s.worker_id = k->st[i].worker_id;
	s.wire_flags = wf;
	s.state = state;
	s.offset_ns = off;

	unsigned seq = atomic_load_explicit(&sl->seq, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy((void *)&sl->snap, &s, sizeof(s));
	atomic_store_explicit(&sl->seq, seq + 2, memory_order_release);
}

static void status_publish(struct fw_keeper *k);

/*
 * Publishes the status, then every slot: a reader that reads a slot and then
 * the status (the telemetry, /metrics) never sees a status older than the
 * slot, such as a BACK_STEP calibration beside a clock_events without it.
 */
static void publish(struct fw_keeper *k)
{
	status_publish(k);
	for (uint32_t i = 0; i < k->cfg.n_workers; i++)
		publish_slot(k, i);
}

/* Persists @target; publishes it only once it is on disk. Returns EV bits. */
static uint32_t extend_mark(struct fw_keeper *k, uint64_t target, uint64_t now_ns)
{
	int rc = k->io.write_mark(k->io.arg, target);
	uint32_t ev = 0;

	k->last_write_rc = rc;
	if (rc) {
		k->mark_failures++;
		k->next_try_ns = now_ns + (uint64_t)k->cfg.mark_retry_ms * NS_PER_MS;
		if (!k->failing) {
			fw_log(&k->cfg.log, FW_LOG_ERR,
			       "mark: cannot persist %llu to %s: %s; workers answer RETRY_AFTER "
			       "once "
			       "they reach %llu",
			       (unsigned long long)target, file_name(k), fw_strerror(rc),
			       (unsigned long long)k->mark_unix);
			k->failing = true;
			publish(k);
			ev |= FW_KEEPER_EV_MARK_FAIL;
		}
		return ev;
	}
	if (k->failing) {
		ev |= FW_KEEPER_EV_MARK_OK;
		fw_log(&k->cfg.log, FW_LOG_INFO, "mark: persisting works again (%llu)",
		       (unsigned long long)target);
	}
	k->failing = false;
	k->mark_writes++;
	k->mark_unix = target;
	publish(k);
	return ev | FW_KEEPER_EV_MARK;
}

static int keeper_start(struct fw_keeper *k, uint64_t t0, uint64_t ns0, uint64_t t1, uint64_t ns1,
			struct fw_keeper_start_info *info)
{
	struct fw_keeper_start_info dummy;
	uint64_t mark = 0;
	int rc;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	rc = fw_clock_calibrate(&k->cal, t0, ns0, t1, ns1);
	if (rc)
		return rc;
	k->anchor_ns = fw_clock_ns(&k->cal, t1);
	k->last_ns = k->anchor_ns;
	uint64_t now = k->anchor_ns / NS_PER_MS;
	k->now_unix_ms = now;
	info->now_unix = now;

	rc = k->io.read_mark(k->io.arg, &mark);
	info->read_rc = rc;
	if (rc == -ENOENT) {
		fw_log(&k->cfg.log, FW_LOG_INFO, "mark: %s does not exist: first start",
		       file_name(k));
		mark = 0;
	} else if (rc == FW_EMARK_LAYOUT) {
		char had[FW_MARK_LAYOUT_LEN], want[FW_MARK_LAYOUT_LEN];
		fw_log(&k->cfg.log, FW_LOG_ERR,
		       "mark: %s fences the ID layout %s, this start has %s; refusing to start: "
		       "its IDs could equal IDs issued under the mark's layout. Fix: stop, then "
		       "convert the mark to the new layout with 'flakectl mark %s --convert "
		       "--config NEW.conf' (or --set id.KEY=VALUE), or start in the mark's layout",
		       file_name(k), fw_mark_layout_format(&k->found.layout, had),
		       fw_mark_layout_format(&k->layout, want), file_name(k));
		return rc;
	} else if (rc) {
		uint64_t tmp = 0, margin = k->cfg.mark_ahead_ms + k->cfg.clock.step_ns / NS_PER_MS;
		uint64_t advice = k->cfg.state_file
					  ? fw_mark_advice(k->cfg.state_file, now, margin, &tmp)
					  : now + margin;
		info->advice_unix = advice;
		fw_log(&k->cfg.log, FW_LOG_ERR,
		       "mark: cannot read %s: %s; refusing to start: the IDs issued before are "
		       "unknown. Fix: restore the file, or write a mark at or above the newest "
		       "one this node logged ('mark: reserved up to M' or 'persisted M') with "
		       "'flakectl mark %s --set UNIX_MS --force', then start again. Without "
		       "that, use at least %llu (%s: a node whose system clock was stepped back "
		       "issued ahead of it; a step beyond [clock] step_ms is logged as 'clock: "
		       "system clock is N ms behind': add N)",
		       file_name(k), fw_strerror(rc), file_name(k), (unsigned long long)advice,
		       tmp && tmp >= now + margin
			       ? "the leftover mark in FILE.tmp"
			       : "the clock plus [state] mark_ahead_ms plus [clock] step_ms");
		return rc;
	}
	if (rc == 0 && k->cfg.state_file && k->io.read_mark == file_read && k->found.format == 1) {
		char want[FW_MARK_LAYOUT_LEN];
		fw_log(&k->cfg.log, FW_LOG_INFO,
		       "mark: %s records no layout (format 1): read as this start's %s, rewritten "
		       "with it at the first reservation",
		       file_name(k), fw_mark_layout_format(&k->layout, want));
	}
	info->mark_unix = mark;
	if (mark > now) {
		bool fail = k->cfg.start_policy == FW_KEEPER_START_FAIL;
		info->behind_ms = mark - now;
		if (fail && info->behind_ms > k->cfg.mark_ahead_ms) {
			fw_log(&k->cfg.log, FW_LOG_ERR,
			       "mark: system clock is %llu ms behind the persisted mark %llu "
			       "(start_policy = fail)",
			       (unsigned long long)info->behind_ms, (unsigned long long)mark);
			return FW_EMARK_AHEAD;
		}
		fw_log(&k->cfg.log, FW_LOG_WARNING,
		       "mark: system clock is %llu ms behind the persisted mark %llu "
		       "(start_policy = %s): answering RETRY_AFTER until it passes",
		       (unsigned long long)info->behind_ms, (unsigned long long)mark,
		       fail ? "fail" : "wait");
	}
	if (mark)
		fw_log(&k->cfg.log, FW_LOG_INFO, "mark: read %llu from %s: issuing above it",
		       (unsigned long long)mark, file_name(k));
	k->floor_unix = mark;
	k->mark_unix = mark;
	for (uint32_t i = 0; i < k->cfg.n_workers; i++)
		k->st[i].floor_ms = layout_ms(k, mark);
	k->started = true;
	publish(k);
	/*
	 * Reserve from the clock, not from the mark: nothing can be issued up to
	 * the mark anyway, and reserving past it would push the mark a further
	 * mark_ahead_ms into the future at every start of a crash loop.
	 */
	extend_mark(k, FW_MAX(now + k->cfg.mark_ahead_ms, mark), k->anchor_ns);
	if (k->last_write_rc == 0)
		fw_log(&k->cfg.log, FW_LOG_INFO,
		       "mark: reserved up to %llu (%llu ms ahead of the clock) in %s",
		       (unsigned long long)k->mark_unix, (unsigned long long)(k->mark_unix - now),
		       file_name(k));
	info->reserve_rc = k->last_write_rc;
	info->reserved_unix = k->mark_unix;
	return 0;
}

static uint32_t keeper_reanchor(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns)
{
	struct fw_clock_cal next;
	uint32_t ev = FW_KEEPER_EV_ANCHOR;

	if (fw_clock_reanchor(&k->cal, &k->cfg.clock, tick, wall_ns, &next))
		return 0;
	k->cal = next;
	k->anchor_ns = fw_clock_ns(&k->cal, tick);
	k->now_unix_ms = k->anchor_ns / NS_PER_MS;

	int64_t off = next.offset_ns;
	bool big = off >= OFFSET_BIG_NS || -off >= OFFSET_BIG_NS;
	bool back = (next.flags & FW_CLOCK_F_BACK_STEP) != 0;
	if (next.flags & FW_CLOCK_F_FWD_STEP) {
		ev |= FW_KEEPER_EV_FWD_STEP;
		k->clock_events++;
	}
	if (back && !k->back_step) {
		ev |= FW_KEEPER_EV_BACK_STEP;
		k->back_steps++;
		k->clock_events++;
	} else if (!back && k->back_step) {
		ev |= FW_KEEPER_EV_BACK_CLEAR;
		k->clock_events++;
	}
	if (big != k->big_offset && !(ev & FW_KEEPER_EV_FWD_STEP)) {
		ev |= FW_KEEPER_EV_OFFSET;
		k->clock_events++;
	}
	bool changed =
		(ev & (FW_KEEPER_EV_BACK_STEP | FW_KEEPER_EV_BACK_CLEAR | FW_KEEPER_EV_OFFSET)) !=
		0;
	k->back_step = back;
	k->big_offset = big;
	publish(k);
	/*
	 * A step at once; an offset of 1 ms or more when its kind changes and
	 * every CLOCK_LOG_MS while it lasts: a backward step of an hour is
	 * slewed away over months, one line a second would bury the log.
	 */
	if (ev & FW_KEEPER_EV_FWD_STEP) {
		fw_log(&k->cfg.log, FW_LOG_WARNING,
		       "clock: system clock jumped ahead by %.3f ms: stepped forward",
		       (double)off / 1e6);
		return ev;
	}
	if (!changed && !(big && k->now_unix_ms >= k->next_clock_log))
		return ev;
	k->next_clock_log = k->now_unix_ms + CLOCK_LOG_MS;
	if (back)
		fw_log(&k->cfg.log, FW_LOG_WARNING,
		       "clock: system clock is %.3f ms behind %s: slewing at %.1f ppm, "
		       "never stepping back; replies carry BACKSTEP",
		       (double)-off / 1e6, k->cfg.name, (double)next.slew_ppb / 1e3);
	else
		fw_log(&k->cfg.log, FW_LOG_INFO,
		       "clock: offset %+.3f ms, slewing at %+.1f ppm (%.0f Hz, generation %llu)",
		       (double)off / 1e6, (double)next.slew_ppb / 1e3, fw_clock_hz(&next),
		       (unsigned long long)next.generation);
	return ev;
}

static int keeper_step_to_wall(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns)
{
	if (!k->started)
		return -EINVAL;
	struct fw_clock_cal c = k->cal;
	int64_t off = (int64_t)(wall_ns - fw_clock_ns(&k->cal, tick));
	c.base_tsc = tick;
	c.base_ns = wall_ns;
	c.mult = c.nominal_mult;
	c.ref_tsc = tick; /* a step: the rate window starts again */
	c.ref_ns = wall_ns;
	c.mid_tsc = 0;
	c.mid_ns = 0;
	c.offset_ns = 0;
	c.slew_ppb = 0;
	c.flags = 0;
	c.generation++;
	k->cal = c;
	k->anchor_ns = wall_ns;
	k->last_ns = wall_ns; /* stepped back on purpose: not the tick source going back */
	k->now_unix_ms = wall_ns / NS_PER_MS;
	k->back_step = false;
	k->big_offset = false;
	k->clock_events++;
	publish(k);
	fw_log(&k->cfg.log, FW_LOG_WARNING,
	       "clock: stepped %.3f ms to the system clock (every worker has a fresh worker ID)",
	       (double)off / 1e6);
	return 0;
}

/*
 * The tick source went back (a TSC reset by a resume from suspend, by
 * firmware or by a hypervisor that does not restore it; CLOCK_MONOTONIC_RAW
 * never does): the workers' time follows the ticks, so under the old
 * calibration it went back too and they would refuse (CLOCK_UNSAFE) until
 * the ticks came back where they were, maybe never. Re-anchor the ticks
 * where they are now on the highest time reached so far: the keeper's last
 * sample or any worker's last issued ms, whichever is later. Time goes on
 * from there, never below what was issued; the rate is learnt again.
 */
static uint32_t ticks_back(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns, uint64_t now_ns)
{
	uint64_t cont = k->last_ns, issued = 0;

	for (uint32_t i = 0; i < k->cfg.n_workers; i++)
		issued = FW_MAX(issued, atomic_load(&k->slots[i].last_ms));
	if (issued && (issued + 1 + k->cfg.epoch_ms) * NS_PER_MS > cont)
		cont = (issued + 1 + k->cfg.epoch_ms) * NS_PER_MS;
	fw_clock_rebase(&k->cal, &k->cfg.clock, tick, wall_ns, cont, &k->cal);
	k->anchor_ns = fw_clock_ns(&k->cal, tick);
	k->now_unix_ms = k->anchor_ns / NS_PER_MS;
	k->back_step = (k->cal.flags & FW_CLOCK_F_BACK_STEP) != 0;
	k->ticks_backs++;
	k->clock_events++;
	publish(k);
	fw_log(&k->cfg.log, FW_LOG_WARNING,
	       "clock: the tick source went back %.3f ms: re-anchored, %s time goes on from "
	       "%.3f ms (its last, or above every ID issued), never below (a TSC reset; "
	       "system clock %+.3f ms from it)",
	       (double)(k->last_ns - now_ns) / 1e6, k->cfg.name, (double)k->anchor_ns / 1e6,
	       (double)k->cal.offset_ns / 1e6);
	return FW_KEEPER_EV_ANCHOR | FW_KEEPER_EV_TICKS_BACK;
}

static uint32_t keeper_tick(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns)
{
	uint32_t ev = 0;

	if (!k->started)
		return 0;
	uint64_t now_ns = fw_clock_ns(&k->cal, tick);
	if (now_ns + TICKS_BACK_NS < k->last_ns) {
		ev |= ticks_back(k, tick, wall_ns, now_ns);
		now_ns = fw_clock_ns(&k->cal, tick);
	}
	if (now_ns >= k->anchor_ns + (uint64_t)k->cfg.reanchor_ms * NS_PER_MS) {
		ev |= keeper_reanchor(k, tick, wall_ns);
		now_ns = fw_clock_ns(&k->cal, tick);
	}
	uint64_t now = now_ns / NS_PER_MS;
	k->now_unix_ms = now;
	k->last_ns = FW_MAX(k->last_ns, now_ns);
	if (now_ns >= k->next_try_ns && k->mark_unix < now + k->cfg.mark_ahead_ms / 2)
		ev |= extend_mark(k, now + k->cfg.mark_ahead_ms, now_ns);
	return ev;
}

static int keeper_stop(struct fw_keeper *k, uint64_t extra_last_ms, uint64_t *written)
{
	uint64_t highest = extra_last_ms;

	for (uint32_t i = 0; i < k->cfg.n_workers; i++) {
		highest = FW_MAX(highest, atomic_load(&k->slots[i].last_ms));
		highest = FW_MAX(highest, atomic_load(&k->slots[i].retired_ms));
		highest = FW_MAX(highest, k->st[i].floor_ms);
	}
	uint64_t final = FW_MAX(k->floor_unix, highest ? highest + k->cfg.epoch_ms : 0);
	if (!final)
		final = k->now_unix_ms;
	int rc = k->io.write_mark(k->io.arg, final);
	if (rc == 0) {
		k->mark_unix = final;
		if (written)
			*written = final;
		fw_log(&k->cfg.log, FW_LOG_INFO,
		       "mark: persisted %llu (at or above every ID issued) to %s",
		       (unsigned long long) final, file_name(k));
	} else {
		fw_log(&k->cfg.log, FW_LOG_ERR,
		       "mark: cannot persist %llu to %s at exit: %s (the reservation %llu stays)",
		       (unsigned long long) final, file_name(k), fw_strerror(rc),
		       (unsigned long long)k->mark_unix);
	}
	return rc;
}

int fw_keeper_set_lease(struct fw_keeper *k, uint32_t slot, uint64_t lease_ms)
{
	if (slot >= k->cfg.n_workers)
		return -EINVAL;
	k->st[slot].lease_ms = lease_ms;
	publish_slot(k, slot);
	return 0;
}

int fw_keeper_set_worker(struct fw_keeper *k, uint32_t slot, uint32_t worker_id, uint64_t floor_ms,
			 uint64_t lease_ms)
{
	if (slot >= k->cfg.n_workers)
		return -EINVAL;
	k->st[slot].worker_id = worker_id;
	k->st[slot].floor_ms = floor_ms;
	k->st[slot].lease_ms = lease_ms;
	k->st[slot].gen++;
	publish_slot(k, slot);
	return 0;
}

uint64_t fw_keeper_worker_last(const struct fw_keeper *k, uint32_t slot)
{
	if (slot >= k->cfg.n_workers)
		return 0;
	return atomic_load_explicit(&k->slots[slot].last_ms, memory_order_relaxed);
}

bool fw_keeper_worker_retired(const struct fw_keeper *k, uint32_t slot, uint64_t *last_ms)
{
	if (slot >= k->cfg.n_workers)
		return false;
	uint64_t g = atomic_load_explicit(&k->slots[slot].retired_gen, memory_order_acquire);
	if (g != k->st[slot].gen)
		return false;
	*last_ms = atomic_load_explicit(&k->slots[slot].retired_ms, memory_order_relaxed);
	return true;
}

/* The status as the keeper's own thread sees it. */
static void status_fill(const struct fw_keeper *k, struct fw_keeper_status *st)
{
	memset(st, 0, sizeof(*st));
	st->cal = k->cal;
	st->now_unix_ms = k->now_unix_ms;
	st->mark_unix_ms = k->mark_unix;
	st->floor_unix_ms = k->floor_unix;
	st->mark_failing = k->failing;
	st->back_step = k->back_step;
	st->last_write_rc = k->last_write_rc;
	st->mark_writes = k->mark_writes;
	st->mark_failures = k->mark_failures;
	st->back_steps = k->back_steps;
	st->clock_events = k->clock_events;
	st->ticks_backs = k->ticks_backs;
}

/* Publishes the status for fw_keeper_status() in other threads. */
static void status_publish(struct fw_keeper *k)
{
	struct fw_keeper_status st;

	status_fill(k, &st);
	fw_seqlock_write(&k->pub.seq, k->pub.w, &st, sizeof(st));
}

void fw_keeper_status(const struct fw_keeper *k, struct fw_keeper_status *st)
{
	fw_seqlock_read(&k->pub.seq, k->pub.w, st, sizeof(*st));
}

int fw_keeper_start(struct fw_keeper *k, uint64_t t0, uint64_t ns0, uint64_t t1, uint64_t ns1,
		    struct fw_keeper_start_info *info)
{
	int rc = keeper_start(k, t0, ns0, t1, ns1, info);

	status_publish(k);
	return rc;
}

uint32_t fw_keeper_reanchor(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns)
{
	uint32_t ev = keeper_reanchor(k, tick, wall_ns);

	status_publish(k);
	return ev;
}

int fw_keeper_step_to_wall(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns)
{
	int rc = keeper_step_to_wall(k, tick, wall_ns);

	status_publish(k);
	return rc;
}

uint32_t fw_keeper_tick(struct fw_keeper *k, uint64_t tick, uint64_t wall_ns)
{
	uint32_t ev = keeper_tick(k, tick, wall_ns);

	status_publish(k);
	return ev;
}

int fw_keeper_stop(struct fw_keeper *k, uint64_t extra_last_ms, uint64_t *written)
{
	int rc = keeper_stop(k, extra_last_ms, written);

	status_publish(k);
	return rc;
}

struct fw_keeper_slot *fw_keeper_slots(struct fw_keeper *k, uint32_t *n)
{
	if (n)
		*n = k->cfg.n_workers;
	return k->slots;
}

void fw_keeper_hold(struct fw_keeper *k, bool on)
{
	if (on == k->held)
		return;
	for (uint32_t i = 0; i < k->cfg.n_workers; i++) {
		struct fw_keeper_slot *sl = &k->slots[i];
		unsigned seq = atomic_load_explicit(&sl->seq, memory_order_relaxed);
		atomic_store_explicit(&sl->seq, seq + 1, memory_order_release);
	}
	k->held = on;
	if (!on)
		publish(k);
}

int fw_keeper_worker_swap(struct fw_keeper_worker *w, const struct fw_keeper_snap *s,
			  struct fw_gen *g)
{
	struct fw_gen_config cfg = g->cfg;
	struct fw_layout layout = g->layout;
	struct fw_gen ng;
	uint64_t old_last = fw_gen_last_ms(g);

	w->worker_gen = s->worker_gen; /* applied or not, do not retry every burst */
	cfg.worker = s->worker_id;
	int rc = fw_gen_init(&ng, &layout, &cfg);
	if (rc)
		return rc;
	if (s->floor_ms)
		fw_gen_set_floor(&ng, s->floor_ms);
	ng.stats = g->stats;
	*g = ng;
	w->limit_ms = 0; /* the new generator's mark is 0: set it on this burst */
	/* (a limit of exactly 0 is then already in effect) */
	/* the highest of every ID this slot retired: the stop's mark covers them
	 * all, and a retirement point is never below what its ID issued */
	uint64_t was = atomic_load_explicit(&w->slot->retired_ms, memory_order_relaxed);
	atomic_store_explicit(&w->slot->retired_ms, FW_MAX(was, old_last), memory_order_relaxed);
	atomic_store_explicit(&w->slot->retired_gen, s->worker_gen, memory_order_release);
	return 0;
}

void fw_keeper_worker_limit(struct fw_keeper_worker *w, struct fw_gen *g, uint64_t limit_ms)
{
	if (limit_ms < g->mark_ms) {
		/* Lowering a limit can only issue less. The generator's fast path
		 * does not look at the mark: disarm it so the next ID is checked. */
		g->mark_ms = limit_ms;
		g->fast_ms = UINT64_MAX;
	}
	w->limit_ms = fw_gen_set_mark(g, limit_ms);
}

void fw_keeper_worker_init(struct fw_keeper_worker *w, struct fw_keeper_slot *slot,
			   struct fw_gen *g)
{
	struct fw_keeper_snap s;
	bool by_lease;

	memset(w, 0, sizeof(*w));
	w->slot = slot;
	fw_keeper_read(slot, &s);
	w->worker_gen = s.worker_gen;
	if (s.floor_ms)
		fw_gen_set_floor(g, s.floor_ms);
	w->limit_ms = UINT64_MAX;
	fw_keeper_worker_limit(w, g, fw_keeper_limit(&s, &by_lease));
	w->by_lease = by_lease;
}

const char *fw_keeper_wstate_name(enum fw_keeper_wstate s)
{
	static const char *const names[FW_KEEPER_W_COUNT] = {"issuing", "waiting", "no_lease",
							     "clock_unsafe"};
	return (unsigned)s < FW_KEEPER_W_COUNT ? names[s] : "unknown";
}

enum fw_keeper_wstate fw_keeper_wstate_of(const struct fw_keeper_snap *s, uint64_t now_ms,
					  uint64_t last_ms, uint64_t max_backstep_ms)
{
	/* the order of the generator's own checks: the lease, then its clock, then the floors */
	if (s->lease_ms != FW_KEEPER_NO_LIMIT && s->lease_ms < now_ms)
		return FW_KEEPER_W_NO_LEASE;
	/* a last ms at the floor was never issued: the floor sets it (a mark ahead at start
	 * waits, as the generator answers RETRY_AFTER there, not CLOCK_UNSAFE) */
	if (last_ms > now_ms + max_backstep_ms && last_ms > s->floor_ms)
		return FW_KEEPER_W_CLOCK_UNSAFE;
	if (s->floor_ms >= now_ms || s->mark_ms < now_ms)
		return FW_KEEPER_W_WAITING;
	return FW_KEEPER_W_ISSUING;
}

enum fw_keeper_wstate fw_keeper_worker_state(struct fw_keeper *k, uint32_t slot,
					     uint64_t max_backstep_ms)
{
	struct fw_keeper_status st;
	struct fw_keeper_snap s;
	if (k == NULL || slot >= k->cfg.n_workers)
		return FW_KEEPER_W_WAITING;
	fw_keeper_status(k, &st);
	if (st.now_unix_ms == 0)
		return FW_KEEPER_W_WAITING; /* not started */
	fw_keeper_read(&k->slots[slot], &s);
	uint64_t last = atomic_load_explicit(&k->slots[slot].last_ms, memory_order_relaxed);
	return fw_keeper_wstate_of(&s, layout_ms(k, st.now_unix_ms), last, max_backstep_ms);
}

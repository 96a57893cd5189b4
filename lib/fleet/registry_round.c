/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry thread: one round = session, pending retirements, claims
 * (one decision for all replacements), renewals when due; then a wait on
 * CLOCK_MONOTONIC until the next due time or a request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_mark.h"
#include "fleet_registry.h"
#include "fw_time.h"

uint64_t fleet_realtime_ms(void *arg)
{
	(void)arg;
	return fw_wall_ms();
}

uint64_t fleet_rand64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = fleet_realtime_ms(NULL) ^ ((uint64_t)getpid() << 32) ^ fw_mono_ms();
	return v;
}

/* ---- publishing (the owner reads these) ---- */

void fleet_publish_locked(struct fw_fleet *f, uint32_t i, enum fw_fleet_source src)
{
	const struct fw_fleet_held *h = &f->slot[i];
	struct fw_fleet_slot *p = &f->pub[i];
	if (p->worker != h->worker || p->floor_ms != h->floor)
		p->gen++;
	p->worker = h->worker;
	p->floor_ms = h->floor;
	p->lease_ms = h->worker == FW_FLEET_WORKER_NONE ? 0 : h->lease;
	p->source = h->worker == FW_FLEET_WORKER_NONE ? FW_FLEET_SRC_NONE : (uint32_t)src;
	p->lost = h->lost;
	f->cache_dirty = true;
}

void fleet_publish(struct fw_fleet *f, uint32_t i, enum fw_fleet_source src)
{
	pthread_mutex_lock(&f->mu);
	fleet_publish_locked(f, i, src);
	pthread_mutex_unlock(&f->mu);
}

void fleet_count(struct fw_fleet *f, uint64_t *c, uint64_t by)
{
	pthread_mutex_lock(&f->mu);
	*c += by;
	pthread_mutex_unlock(&f->mu);
}

void fleet_count_kinds(struct fw_fleet *f, const enum fw_fleet_kind *k, uint32_t n)
{
	pthread_mutex_lock(&f->mu);
	for (uint32_t j = 0; j < n; j++)
		(*(k[j] == FW_FLEET_TAKEBACK  ? &f->st.takebacks
		   : k[j] == FW_FLEET_EXPIRED ? &f->st.takeovers
					      : &f->st.claims))++;
	pthread_mutex_unlock(&f->mu);
}

int fleet_mark(const struct fw_fleet *f, uint64_t *unix_ms)
{
	*unix_ms = 0;
	return f->mark[0] ? fw_mark_read(f->mark, unix_ms) : -ENOENT;
}

void fleet_cache_save(struct fw_fleet *f)
{
	/* waiting for free IDs (start_when_full), this run holds none: the cache
	 * keeps the previous run's proof, for a start after this one */
	if (!f->cache_dirty || !f->cache[0] || f->wait_all)
		return;
	/* the mark now (the final one at a stop is lower than the reservations
	 * before it: recorded as it is); unreadable, the last one recorded (0
	 * before the first mark) */
	uint64_t mark;
	if (fleet_mark(f, &mark) == 0)
		f->cache_mark = mark;
	int rc = fw_fleet_cache_write(f->cache, &f->cache_of, f->cache_mark, f->slot, f->n);
	if (rc == 0)
		f->cache_dirty = false;
	if (rc != 0 && rc != f->cache_rc)
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: cannot write the cache %s: %s; a restart cannot take these "
		       "worker IDs back nor start from them while the registry is down; retried "
		       "at every change",
		       f->cache, fw_strerror(rc));
	else if (rc == 0 && f->cache_rc != 0)
		fw_log(&f->cfg.log, FW_LOG_INFO, "fleet: the cache %s is written again", f->cache);
	f->cache_rc = rc;
}

/* Appends the census to a "no worker ID free" line: how many are stranded, when the first is back.
 */
static void full_census(struct fw_fleet *f, char *err, size_t errlen)
{
	char ts[FW_ISO8601_LEN];
	size_t l = strlen(err);
	if (fleet_census_full(f) != 0 || l + 1 >= errlen)
		return;
	pthread_mutex_lock(&f->mu);
	struct fw_fleet_status st = f->st;
	pthread_mutex_unlock(&f->mu);
	if (st.stranded_ids)
		snprintf(err + l, errlen - l,
			 "; %u free, %u stranded (leased to owners with no live session), the "
			 "first back at %s",
			 st.free_ids, st.stranded_ids,
			 fw_format_iso8601(st.next_stranded_unix, ts));
	else
		snprintf(err + l, errlen - l, "; %u free, none stranded", st.free_ids);
}

/* ---- one round ---- */

static void skip_held(const struct fw_fleet *f, bool *skip)
{
	memset(skip, 0, 1u << f->cfg.layout.worker_bits);
	for (uint32_t i = 0; i < f->n; i++)
		if (f->slot[i].worker >= 0 && !f->slot[i].lost)
			skip[f->slot[i].worker] =
				true; /* a lost one can come back, above its floor */
	for (uint32_t i = 0; i < f->n_retiring; i++)
		skip[f->retiring[i].h.worker] = true; /* a retired ID is never claimed again */
}

static void offset_update(struct fw_fleet *f, uint64_t local_mid, uint64_t server)
{
	int64_t off = (int64_t)(local_mid - server);
	bool over = (off < 0 ? -off : off) > (int64_t)f->cfg.max_offset_ms;
	pthread_mutex_lock(&f->mu);
	bool was = f->st.offset_over;
	f->st.offset_ms = off;
	f->st.offset_valid = true;
	f->st.offset_over = over;
	pthread_mutex_unlock(&f->mu);
	if (over && !was)
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: this node's clock is %" PRId64
		       " ms off %s's (bound %u ms): IDs stay "
		       "unique, but their order across nodes is off by as much",
		       off, f->store->name, f->cfg.max_offset_ms);
	else if (!over && was)
		fw_log(&f->cfg.log, FW_LOG_INFO,
		       "fleet: clock offset to %s back within %u ms (%" PRId64 " ms)",
		       f->store->name, f->cfg.max_offset_ms, off);
}

/*
 * Retirements: each replaced ID stays in f->retiring (so never claimed
 * again by this process) until the store confirms its release, or shows
 * another owner already above its retirement point. Anything else (a store
 * error of any kind) keeps it there, retried every round, logged once per
 * change. Returns -ENOTCONN when the store is unreachable (the round fails).
 */
static int retire_pending(struct fw_fleet *f)
{
	struct retire_req q[FW_FLEET_SLOTS_MAX];
	uint32_t n;
	pthread_mutex_lock(&f->mu);
	n = f->n_retire_q;
	memcpy(q, f->retire_q, n * sizeof(q[0]));
	f->n_retire_q = 0;
	pthread_mutex_unlock(&f->mu);
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t j = 0; j < f->n_retiring; j++) {
			struct retiring *t = &f->retiring[j];
			if (t->h.worker != q[k].worker)
				continue;
			t->last = t->asked ? FW_MAX(t->last, q[k].last) : q[k].last;
			t->asked = true;
			break;
		}
	}
	/* A release goes to the store only once the cache no longer offers the ID
	 * to a start from the cache, durably: the swap that made it retiring
	 * changed the slots, so a clean cache is one written since. While the
	 * cache cannot be written the ID stays leased to this process and
	 * retiring (issue 48, case 5: released, claimed by another node, then
	 * served again by a restart from the stale cache while the store is
	 * unreachable). No cache file at all (its directory missing, say) offers
	 * nothing: a file of ours is only ever renamed into place, so one that is
	 * not there now was never durable either. */
	bool durable = !f->cache[0];
	if (!durable) {
		struct stat st;
		fleet_cache_save(f);
		durable = !f->cache_dirty || (lstat(f->cache, &st) != 0 && errno == ENOENT);
	}
	for (uint32_t j = 0; j < f->n_retiring; j++) {
		struct retiring *t = &f->retiring[j];
		int src = 0;
		if (!t->asked)
			continue;
		if (!durable) {
			if (!t->warned_cache)
				fw_log(&f->cfg.log, FW_LOG_WARNING,
				       "fleet: worker %d: its release waits until the cache %s is "
				       "written (%s): the cache on disk still offers it to a start "
				       "while the registry is down; it stays leased to this "
				       "process "
				       "and retiring, never issued again",
				       t->h.worker, f->cache, fw_strerror(f->cache_rc));
			t->warned_cache = true;
			continue;
		}
		enum fw_fleet_retired how = fw_fleet_retire_held(&f->r, &t->h, t->last, &src);
		if (how == FW_FLEET_RETIRE_AGAIN) {
			if (src == -ENOTCONN)
				return -ENOTCONN;
			if (t->warned_rc != src)
				fw_log(&f->cfg.log, FW_LOG_WARNING,
				       "fleet: worker %d: release not confirmed (%s): this "
				       "process keeps it retired and retries every round; it is "
				       "never issued again below %" PRIu64,
				       t->h.worker,
				       src ? f->store->ops->last_error(f->store)
					   : "the record is no longer ours and its floor is below "
					     "what we issued",
				       t->last);
			t->warned_rc = src ? src : -EAGAIN;
			continue;
		}
		fw_log(&f->cfg.log, FW_LOG_INFO,
		       how == FW_FLEET_RETIRE_DONE
			       ? "fleet: worker %d retired: released with floor %" PRIu64
			       : "fleet: worker %d retired: its record is another owner's now, "
				 "above %" PRIu64,
		       t->h.worker, FW_MAX(t->h.floor, t->last));
		fleet_count(f, &f->st.releases, 1);
		f->retiring[j--] = f->retiring[--f->n_retiring];
	}
	return 0;
}

/*
 * The store's write counter went back (now() said -ESTALE): stops, writes
 * the stop record (fw_fleet_session_went_back). Returns FW_EFLEET_ROOT.
 */
static int fleet_counter_back(struct fw_fleet *f, char *err, size_t errlen)
{
	char why[FW_FLEET_STOP_REASON_MAX];
	snprintf(why, sizeof(why),
		 "the store went back: its write counter is below one this node saw (%s): "
		 "restored from a snapshot",
		 f->store->ops->last_error(f->store));
	fw_fleet_session_went_back(&f->ss, f->ss.rec.generation, why);
	pthread_mutex_lock(&f->mu);
	f->st.root_stopped = true;
	pthread_mutex_unlock(&f->mu);
	snprintf(err, errlen,
		 "fleet: %s: %s: %s; claims, takeovers and renewals stop (issuing goes on within "
		 "the confirmed leases) until an operator runs 'flakectl fleet fence --root %s'",
		 f->store->name, f->root, why, f->root);
	return FW_EFLEET_ROOT;
}

/*
 * Claims for slots without a usable ID (none, or lost), then, when due, the
 * replacements: one decision for all of them (every fresh ID claimed
 * before any is published, all published under one lock), so no slot
 * swaps alone and no retired ID comes back as a replacement.
 */
int fleet_claim_round(struct fw_fleet *f, uint64_t mono, bool at_start, char *err, size_t errlen)
{
	uint32_t need[FW_FLEET_SLOTS_MAX], repl[FW_FLEET_SLOTS_MAX], n_need = 0, n_repl = 0;
	struct fw_fleet_held got[FW_FLEET_SLOTS_MAX];
	enum fw_fleet_kind kinds[FW_FLEET_SLOTS_MAX];
	bool *skip = f->skip;
	uint64_t server = 0;
	uint32_t n_got;

	pthread_mutex_lock(&f->mu);
	for (uint32_t i = 0; i < f->n; i++) {
		if (f->slot[i].worker == FW_FLEET_WORKER_NONE || f->slot[i].lost) {
			f->replace_req[i] = false; /* whatever it gets is fresh */
			need[n_need++] = i;
		} else if (f->replace_req[i]) {
			repl[n_repl++] = i;
		}
	}
	pthread_mutex_unlock(&f->mu);
	if (mono < f->next_repl)
		n_repl = 0;
	if (n_need + n_repl == 0)
		return 0;
	int rc = f->store->ops->now(f->store, NULL, NULL, &server, NULL);
	if (rc == -ESTALE) /* the store's write counter went back: restored */
		return fleet_counter_back(f, err, errlen);
	if (rc != 0) {
		snprintf(err, errlen, "fleet: %s: %s", f->store->name,
			 f->store->ops->last_error(f->store));
		return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	}
	int crc = 0;
	if (n_need) {
		skip_held(f, skip);
		uint32_t mine = 0;
		crc = fw_fleet_claim_n(&f->r, server, skip, n_need,
				       at_start || f->wait_all ? FW_FLEET_CLAIM_ALL : 0, need, got,
				       kinds, &n_got, &mine, err, errlen);
		if (at_start && crc == FW_EFLEET_FULL && mine > 0) {
			/* Short only of this identity's records that no state of ours
			 * proves: they end in time. Start with what can issue now and
			 * wait for the rest (NO_LEASE); the thread claims at a later
			 * round. */
			fw_log(&f->cfg.log, FW_LOG_WARNING,
			       "%s; starting with what can be claimed now, the other slots "
			       "answer NO_LEASE until a lease ends or a worker ID is freed",
			       err);
			crc = fw_fleet_claim_n(&f->r, server, skip, n_need, 0, need, got, kinds,
					       &n_got, NULL, err, errlen);
			if (crc == FW_EFLEET_FULL)
				crc = 0;
			f->need_full = n_need - n_got;
		}
		fleet_count_kinds(f, kinds, n_got);
		for (uint32_t k = 0; k < n_got; k++) {
			f->slot[need[k]] = got[k];
			fleet_publish(f, need[k], FW_FLEET_SRC_STORE);
		}
		/* the census for the line only when it is logged (a waiting node
		 * retries every round: the periodic census keeps the gauges) */
		if (crc == FW_EFLEET_FULL && (at_start || f->need_full != n_need - n_got))
			full_census(f, err, errlen);
		if (!at_start && crc == FW_EFLEET_FULL && f->need_full != n_need - n_got)
			fw_log(&f->cfg.log, FW_LOG_WARNING, "%s", err); /* once per change */
		f->need_full = crc == FW_EFLEET_FULL ? n_need - n_got : 0;
		if (crc == 0 && f->wait_all) {
			f->wait_all = false;
			fw_log(&f->cfg.log, FW_LOG_INFO,
			       "fleet: %u worker ID(s) claimed after waiting for free ones: every "
			       "slot holds a lease",
			       n_got);
		}
		if (crc != 0)
			return crc == -ENOTCONN || crc == -EIO ? FW_EFLEET_STORE
			       : crc == -EACCES                ? FW_EFLEET_AUTH
							       : crc;
	}
	if (n_repl == 0)
		return 0;
	skip_held(f, skip);
	if (f->n_retiring + n_repl > FW_FLEET_SLOTS_MAX) {
		/* every replaced ID stays retiring until its release is confirmed:
		 * no room, no replacement (the current IDs keep issuing) */
		snprintf(err, errlen,
			 "fleet: %u worker ID(s) still retiring (releases not confirmed): no "
			 "replacement until they are released",
			 f->n_retiring);
		crc = FW_EFLEET_FULL;
	} else {
		crc = fw_fleet_claim_n(&f->r, server, skip, n_repl,
				       FW_FLEET_CLAIM_ALL | FW_FLEET_CLAIM_FRESH, repl, got, kinds,
				       &n_got, NULL, err, errlen);
	}
	if (crc == -ENOTCONN || crc == -EIO || crc == -EACCES)
		return crc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	if (crc != 0) {
		/* Not satisfiable now: the old IDs keep issuing (the keeper slews);
		 * retried with backoff, logged once per change. */
		f->next_repl = mono + fw_fleet_backoff_ms(++f->repl_fails, f->cfg.renew_ms,
							  fleet_rand64());
		if (f->repl_full != n_repl)
			fw_log(&f->cfg.log, FW_LOG_WARNING,
			       "%s; the current worker IDs keep issuing; retrying with backoff",
			       err);
		f->repl_full = n_repl;
		return 0;
	}
	fleet_count_kinds(f, kinds, n_got);
	pthread_mutex_lock(&f->mu);
	for (uint32_t k = 0; k < n_repl; k++) {
		uint32_t i = repl[k];
		f->retiring[f->n_retiring++] =
			(struct retiring){.h = f->slot[i]}; /* room checked */
		f->replace_req[i] = false;
		f->slot[i] = got[k];
		fleet_publish_locked(f, i, FW_FLEET_SRC_STORE);
	}
	pthread_mutex_unlock(&f->mu);
	if (f->repl_full)
		fw_log(&f->cfg.log, FW_LOG_INFO, "fleet: %u replacement worker ID(s) claimed",
		       n_repl);
	f->repl_full = 0;
	f->repl_fails = 0;
	f->next_repl = 0;
	return 0;
}

/*
 * A renewal of slot @i found the store without this run's writes
 * (fw_fleet_renew's FW_FLEET_BACK, _GONE, _UNDER, with @owner): stops
 * every claim, takeover and renewal and writes the stop record
 * (fw_fleet_session_went_back); @err says what was seen.
 */
static void renew_went_back(struct fw_fleet *f, uint32_t i, int how, const char *owner, char *err,
			    size_t errlen)
{
	const struct fw_fleet_held *h = &f->slot[i];
	char why[2 * FW_FLEET_STOP_REASON_MAX], ts[FW_ISO8601_LEN];
	if (how == FW_FLEET_BACK)
		snprintf(why, sizeof(why),
			 "the store went back: worker %d's record is at an older version than "
			 "this node (%s) wrote (restored from a snapshot)",
			 h->worker, f->identity);
	else if (how == FW_FLEET_GONE)
		snprintf(why, sizeof(why),
			 "the store went back: worker %d's record, which this node (%s) wrote "
			 "under this root, is gone or free below the lease it confirmed (restored "
			 "from a copy older than its claim, or records deleted)",
			 h->worker, f->identity);
	else
		snprintf(why, sizeof(why),
			 "the store went back: worker %d is %s's with a floor below the lease "
			 "this node (%s) confirmed (restored from a copy without this node's "
			 "writes): both issue under worker %d; this node stopped issuing under "
			 "it at once",
			 h->worker, owner, f->identity, h->worker);
	fw_fleet_session_went_back(&f->ss, f->ss.rec.generation, why);
	if (how == FW_FLEET_UNDER) {
		fw_log(&f->cfg.log, FW_LOG_ERR, "fleet: %s: %s (its lease cut to %s)", f->root, why,
		       fw_format_iso8601(h->lease + f->cfg.layout.epoch_ms, ts));
		fleet_count(f, &f->st.lost, 1);
		fleet_publish(f, i, FW_FLEET_SRC_STORE);
	}
	snprintf(err, errlen,
		 "fleet: %s: %s; claims, takeovers and renewals stop (issuing goes on within the "
		 "confirmed leases) until an operator runs 'flakectl fleet fence --root %s'",
		 f->root, why, f->root);
}

static int renew_all(struct fw_fleet *f, bool *any_lost, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < f->n; i++) {
		struct fw_fleet_held *h = &f->slot[i];
		uint64_t mid = 0, mtime = 0;
		char owner[FW_FLEET_IDENTITY_MAX], ts[FW_ISO8601_LEN];
		if (h->worker == FW_FLEET_WORKER_NONE || h->lost)
			continue;
		int rc = fw_fleet_renew(&f->r, h, &mid, &mtime, owner, sizeof(owner));
		if (rc < 0) {
			snprintf(err, errlen, "fleet: %s: renewing worker %d: %s", f->store->name,
				 h->worker, f->store->ops->last_error(f->store));
			return FW_EFLEET_STORE;
		}
		if (rc == FW_FLEET_RENEWED) {
			if (mtime)
				offset_update(f, mid, mtime);
			fleet_count(f, &f->st.renewals, 1);
		} else if (rc == FW_FLEET_BACK || rc == FW_FLEET_GONE || rc == FW_FLEET_UNDER) {
			renew_went_back(f, i, rc, owner, err, errlen);
			return FW_EFLEET_ROOT;
		} else if (rc == FW_FLEET_LOST) {
			fw_log(&f->cfg.log, FW_LOG_WARNING,
			       "fleet: worker %d was taken over by %s: slot %u stops at its "
			       "confirmed lease %s and claims another worker ID now",
			       h->worker, owner, i,
			       fw_format_iso8601(h->lease + f->cfg.layout.epoch_ms, ts));
			fleet_count(f, &f->st.lost, 1);
			*any_lost = true;
		}
		fleet_publish(f, i, FW_FLEET_SRC_STORE);
	}
	return 0;
}

static bool stopping(struct fw_fleet *f)
{
	pthread_mutex_lock(&f->mu);
	bool s = f->stop;
	pthread_mutex_unlock(&f->mu);
	return s;
}

/*
 * The session, waited for up to a session timeout as before, in slices of
 * at most 500 ms so that a stop is not held for a whole session timeout
 * while the store is down (a graceful stop ends within 10 s).
 */
static int session_wait(struct fw_fleet *f, char *err, size_t errlen)
{
	uint64_t until = fw_mono_ms() + f->cfg.session_timeout_ms;
	for (;;) {
		uint64_t now = fw_mono_ms();
		uint32_t slice = (uint32_t)FW_MIN(500u, until > now ? until - now : 0);
		int rc = fw_fleet_session_ensure(&f->ss, slice, 0, err, errlen);
		/* again only after a wait that ran out (a store that refuses at once
		 * is not waited for, as before) */
		if (rc != FW_EFLEET_STORE ||
		    f->store->ops->state(f->store) == FW_FLEET_SESSION_UP ||
		    fw_mono_ms() < now + slice || fw_mono_ms() >= until || stopping(f))
			return rc;
	}
}

/* How often the registry thread looks at the session between rounds (ms). */
#define WATCH_MS 250

/*
 * Between rounds, the session as the store's own threads see it (a
 * ZooKeeper session event, etcd's keep-alive): a session seen not up
 * starts a round at once, so the reconnection (and a new session) does not
 * wait for the next renewal, and the first round once it is up again is a
 * check round. Returns true to run a round now.
 */
static bool session_watch(struct fw_fleet *f)
{
	struct fw_fleet_store *s = f->store;
	bool up = s->ops->state(s) == FW_FLEET_SESSION_UP;
	uint64_t mono = fw_mono_ms();
	if (!up && (!f->watch_down || mono >= f->watch_next)) {
		/* and again every session timeout while it stays down: a store
		 * replaces a handle that cannot come back only in connect()
		 * (ZooKeeper's, refused by a server restored from an older copy) */
		f->watch_down = true;
		f->watch_next = mono + f->cfg.session_timeout_ms;
		f->check_now = true;
		return true;
	}
	if (up && (f->watch_down || s->sessions != f->watch_sessions)) {
		f->watch_down = false;
		f->check_now = true;
		return true;
	}
	return false;
}

/*
 * A check round's start, after a reconnection: a restore shows first
 * there (the store went away and came back as a copy), so the store's
 * write counter is read now (now(): -ESTALE below one seen) and every
 * lease is renewed in this round (the renewals read this run's records:
 * older, gone, or another owner's below the confirmed lease). Returns 0,
 * FW_EFLEET_ROOT (went back: stopped) or FW_EFLEET_STORE.
 */
static int check_round(struct fw_fleet *f, uint64_t mono, char *err, size_t errlen)
{
	uint64_t server = 0;
	int rc = f->store->ops->now(f->store, NULL, NULL, &server, NULL);
	if (rc == -ESTALE)
		return fleet_counter_back(f, err, errlen);
	if (rc != 0) {
		snprintf(err, errlen, "fleet: %s: %s", f->store->name,
			 f->store->ops->last_error(f->store));
		return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	}
	f->next_renew = FW_MIN(f->next_renew, mono);
	/* a restored store may hold another owner's record at the version held:
	 * each is read before it is written again */
	pthread_mutex_lock(&f->mu);
	for (uint32_t i = 0; i < f->n; i++)
		f->slot[i].verify = true;
	for (uint32_t k = 0; k < f->n_retiring; k++)
		f->retiring[k].h.verify = true;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int round_once(struct fw_fleet *f, uint64_t mono, char *err, size_t errlen)
{
	int rc = session_wait(f, err, errlen);
	if (f->store->sessions != f->watch_sessions) { /* a new session: check in this round */
		f->watch_sessions = f->store->sessions;
		f->check_now = true;
	}
	if (rc == 0 && f->check_now)
		rc = check_round(f, mono, err, errlen);
	pthread_mutex_lock(&f->mu);
	f->st.connected = rc == 0;
	if (rc == 0 || rc == FW_EFLEET_ROOT || rc == FW_EFLEET_LAYOUT)
		f->st.root_stopped = rc != 0;
	pthread_mutex_unlock(&f->mu);
	if (rc != 0)
		return rc;
	if (retire_pending(f) != 0) {
		snprintf(err, errlen, "fleet: %s: %s", f->store->name,
			 f->store->ops->last_error(f->store));
		return FW_EFLEET_STORE;
	}
	rc = fleet_claim_round(f, mono, false, err, errlen);
	if (rc == FW_EFLEET_STORE || rc == FW_EFLEET_ROOT)
		return rc;
	if (mono < f->next_renew)
		return 0;
	bool lost = false;
	rc = renew_all(f, &lost, err, errlen);
	if (rc == FW_EFLEET_ROOT) {
		pthread_mutex_lock(&f->mu);
		f->st.root_stopped = true;
		pthread_mutex_unlock(&f->mu);
	}
	if (lost) /* the replacement in this round, not a renew_ms later */
		fleet_claim_round(f, mono, false, err, errlen);
	if (rc == 0 && mono >= f->next_census) {
		/* at most once a minute, and never more than once a renewal */
		if (fleet_census(f) == 0)
			f->next_census = mono + FW_MAX(f->cfg.renew_ms, 60000u);
	}
	if (rc == 0) {
		f->check_now = false;
		f->next_renew = mono + f->cfg.renew_ms;
		pthread_mutex_lock(&f->mu);
		f->st.last_renew_unix = f->r.now_ms(f->r.now_arg);
		pthread_mutex_unlock(&f->mu);
	}
	return rc;
}

uint64_t fw_fleet_backoff_ms(uint32_t fails, uint64_t renew_ms, uint64_t rnd)
{
	uint64_t b = 250ull << FW_MIN(fails ? fails - 1 : 0, 12u);
	b = FW_MIN(b, renew_ms);
	uint64_t j = b / 2 ? rnd % (b / 2) : 0;
	return b - b / 4 + j;
}

void *fleet_thread_main(void *arg)
{
	struct fw_fleet *f = arg;
	char err[MSG_LEN];
	f->watch_sessions = f->store->sessions; /* fw_fleet_start's session checked already */
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		pthread_mutex_unlock(&f->mu);
		uint64_t mono = fw_mono_ms();
		int rc = round_once(f, mono, err, sizeof(err));
		if (rc == 0 || rc == FW_EFLEET_FULL) {
			if (f->renew_fails || f->logged_down)
				fw_log(&f->cfg.log, FW_LOG_INFO,
				       "fleet: %s reachable again; leases renewed", f->store->name);
			f->renew_fails = 0;
			f->logged_down = false;
		} else {
			if (!f->logged_down || (rc == FW_EFLEET_ROOT && f->logged_rc != rc)) {
				fw_log(&f->cfg.log, FW_LOG_WARNING,
				       "%s; retrying with backoff, issuing continues within the "
				       "confirmed leases",
				       err);
				f->logged_rc = rc;
			}
			f->logged_down = true;
			if (rc == FW_EFLEET_STORE) /* the first round that gets through checks */
				f->check_now = true;
			fleet_count(f, &f->st.renew_failures, 1);
			f->renew_fails++;
			f->next_renew = mono + fw_fleet_backoff_ms(f->renew_fails, f->cfg.renew_ms,
								   fleet_rand64());
		}
		fleet_cache_save(f);
		/* Sleep until the next renewal (or retry) or a pending replacement's
		 * next attempt, on CLOCK_MONOTONIC: a step of the wall clock does not
		 * move it. A request (replace, retire, stop) wakes the thread. */
		uint64_t due = f->next_renew;
		pthread_mutex_lock(&f->mu);
		for (uint32_t i = 0; i < f->n; i++)
			if (f->replace_req[i] && rc != FW_EFLEET_STORE)
				due = FW_MIN(due, f->next_repl);
		while (!f->stop && !f->wake && fw_mono_ms() < due) {
			uint64_t until = FW_MIN(due, fw_mono_ms() + WATCH_MS);
			struct timespec ts = fw_timespec_of_ns(until * 1000000u);
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
			if (f->stop || f->wake)
				break;
			pthread_mutex_unlock(&f->mu);
			bool now = session_watch(f);
			pthread_mutex_lock(&f->mu);
			if (now)
				break;
		}
		f->wake = false;
	}
	bool keep = f->keep_session;
	pthread_mutex_unlock(&f->mu);
	if (!keep)
		fw_fleet_session_drop(&f->ss);
	return NULL;
}

int fleet_release_all(struct fw_fleet *f, uint64_t deadline)
{
	struct fw_fleet_held rel[2 * FW_FLEET_SLOTS_MAX], keep[FW_FLEET_SLOTS_MAX];
	char ts[FW_ISO8601_LEN];
	uint32_t n_rel = 0;
	uint64_t mark_unix = 0;
	int rc = fleet_mark(f, &mark_unix);
	for (uint32_t i = 0; i < f->n; i++) {
		keep[i] = f->slot[i];
		if (f->slot[i].worker != FW_FLEET_WORKER_NONE && !f->slot[i].lost) {
			rel[n_rel++] = f->slot[i];
			keep[i].worker = FW_FLEET_WORKER_NONE;
		}
	}
	for (uint32_t j = 0; j < f->n_retiring; j++)
		rel[n_rel++] = f->retiring[j].h;
	if (n_rel == 0)
		return 0;
	if (rc != 0) {
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: no final mark in %s (%s): %u worker ID(s) stay leased (the next "
		       "start on this state takes them back)",
		       f->mark[0] ? f->mark : "(no [state] file)", fw_strerror(rc), n_rel);
		return rc;
	}
	uint64_t last = mark_unix > f->cfg.layout.epoch_ms ? mark_unix - f->cfg.layout.epoch_ms : 0;
	/* Reachable now? One read (a session can look up for a while after the
	 * store went away: etcd's keep-alive, a ZooKeeper socket not yet closed);
	 * unreachable, nothing is sent and the cache keeps the IDs. */
	struct fw_fleet_rec probe;
	struct fw_fleet_ver pv;
	int prc = f->store->ops->state(f->store) == FW_FLEET_SESSION_UP && f->ss.alive_ok
			  ? fw_fleet_read(f->store, (uint32_t)rel[0].worker, &probe, &pv)
			  : -ENOTCONN;
	if (prc == -ENOTCONN || prc == -EIO || prc == -ETIMEDOUT) {
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: %s is not reachable at the stop: %u worker ID(s) stay leased to %s "
		       "(their leases run on), nothing was sent; the cache keeps them, so the "
		       "next start on this state takes them back",
		       f->store->name, n_rel, f->identity);
		return -ENOTCONN;
	}
	/* The cache first: once a release is sent, no start from the cache may
	 * offer the ID again (another node may claim it the moment it is free). */
	if (f->cache[0]) {
		int wrc = fw_fleet_cache_write(f->cache, &f->cache_of, mark_unix, keep, f->n);
		if (wrc != 0) {
			fw_log(&f->cfg.log, FW_LOG_WARNING,
			       "fleet: cannot write the cache %s without the worker IDs (%s): %u "
			       "stay leased (the next start on this state takes them back)",
			       f->cache, fw_strerror(wrc), n_rel);
			return wrc;
		}
	}
	for (uint32_t i = 0; i < f->n; i++)
		f->slot[i] = keep[i];
	f->n_retiring = 0;
	f->cache_mark = mark_unix;
	int done = 0, failed = 0;
	for (uint32_t k = 0; k < n_rel; k++) {
		struct fw_fleet_held *h = &rel[k];
		enum fw_fleet_retired how = FW_FLEET_RETIRE_AGAIN;
		int src = -ETIMEDOUT;
		if (fw_mono_ms() < deadline)
			how = fw_fleet_retire_held(&f->r, h, last, &src);
		if (how != FW_FLEET_RETIRE_AGAIN) {
			fw_log(&f->cfg.log, FW_LOG_INFO,
			       how == FW_FLEET_RETIRE_DONE
				       ? "fleet: worker %d released at the stop, floor %" PRIu64
				       : "fleet: worker %d: its record is another owner's now, "
					 "above "
					 "%" PRIu64,
			       h->worker, FW_MAX(h->floor, last));
			done++;
			continue;
		}
		failed++;
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: worker %d: release at the stop not confirmed (%s): it stays leased "
		       "to %s until %s; the cache no longer names it, so no start serves it "
		       "again before then",
		       h->worker,
		       src == -ETIMEDOUT ? "no time left"
		       : src             ? f->store->ops->last_error(f->store)
					 : "the record is no longer ours and its floor is below "
					   "the final mark",
		       f->identity, fw_format_iso8601(h->lease + f->cfg.layout.epoch_ms, ts));
	}
	fleet_count(f, &f->st.releases, (uint64_t)done);
	return failed ? FW_EFLEET_STORE : done;
}

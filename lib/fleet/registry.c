/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry's API (fw_fleet.h): create, start (claims, or the cache),
 * the owner's requests and copies. Calls into registry_round.c (the
 * thread, publishing, counters), never the other way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_state_lock.h"
#include "fleet_registry.h"
#include "fw_time.h"

void fw_fleet_config_default(struct fw_fleet_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->lease_ms = 24ull * 3600 * 1000;
	cfg->renew_ms = 60 * 1000;
	cfg->session_timeout_ms = 10000;
	cfg->start_wait_ms = 10000;
	cfg->max_offset_ms = 1000;
	cfg->layout.epoch_ms = FW_DEFAULT_EPOCH_MS;
	cfg->layout.time_bits = 41;
	cfg->layout.worker_bits = 10;
	cfg->layout.seq_bits = 12;
}

int fw_fleet_create_store(const struct fw_fleet_config *cfg, uint32_t n_slots,
			  struct fw_fleet_store *store, struct fw_fleet **out, char *err,
			  size_t errlen)
{
	int rc = -EINVAL;
	if (cfg == NULL || out == NULL)
		goto fail;
	if (cfg->root == NULL || cfg->root[0] != '/' || strlen(cfg->root) < 2 ||
	    strlen(cfg->root) >= 200 || cfg->root[strlen(cfg->root) - 1] == '/' ||
	    strstr(cfg->root, "//") != NULL) {
		snprintf(err, errlen,
			 "fleet: root '%s': must be an absolute path such as /flakewire/dc1, "
			 "without a trailing '/'",
			 cfg->root ? cfg->root : "");
		goto fail;
	}
	if (cfg->identity == NULL || !fw_fleet_identity_ok(cfg->identity)) {
		snprintf(err, errlen,
			 "fleet: identity '%s': must be 1-127 characters of A-Z a-z 0-9 . _ - :",
			 cfg->identity ? cfg->identity : "");
		goto fail;
	}
	if (cfg->renew_ms == 0 || cfg->lease_ms < 2 * cfg->renew_ms) {
		snprintf(err, errlen,
			 "fleet: lease_ms %" PRIu64 " must be at least twice renew_ms %" PRIu64,
			 cfg->lease_ms, cfg->renew_ms);
		goto fail;
	}
	if (n_slots == 0 || n_slots > FW_FLEET_SLOTS_MAX ||
	    n_slots > (1u << cfg->layout.worker_bits)) {
		snprintf(err, errlen, "fleet: %u workers: out of range (1-%u)", n_slots,
			 FW_MIN(FW_FLEET_SLOTS_MAX, 1u << cfg->layout.worker_bits));
		goto fail;
	}
	if (cfg->state_stamp && strlen(cfg->state_stamp) >= 128) {
		snprintf(err, errlen, "fleet: state stamp too long");
		goto fail;
	}
	if (cfg->cache_file && strlen(cfg->cache_file) >= PATH_MAX - 8) {
		snprintf(err, errlen, "fleet: cache file name too long");
		goto fail;
	}
	if (cfg->legacy_cache_file && strlen(cfg->legacy_cache_file) >= PATH_MAX) {
		snprintf(err, errlen, "fleet: legacy cache file name too long");
		goto fail;
	}
	if (cfg->mark_file && strlen(cfg->mark_file) >= PATH_MAX) {
		snprintf(err, errlen, "fleet: mark file name too long");
		goto fail;
	}
	if (store == NULL)
		goto fail;
	rc = -ENOMEM;
	struct fw_fleet *f = calloc(1, sizeof(*f));
	if (f == NULL)
		goto fail;
	f->cfg = *cfg;
	f->store = store;
	snprintf(f->root, sizeof(f->root), "%s", cfg->root);
	snprintf(f->identity, sizeof(f->identity), "%s", cfg->identity);
	snprintf(f->cache, sizeof(f->cache), "%s", cfg->cache_file ? cfg->cache_file : "");
	snprintf(f->stamp, sizeof(f->stamp), "%s", cfg->state_stamp ? cfg->state_stamp : "");
	snprintf(f->mark, sizeof(f->mark), "%s", cfg->mark_file ? cfg->mark_file : "");
	snprintf(f->legacy, sizeof(f->legacy), "%s",
		 cfg->legacy_cache_file ? cfg->legacy_cache_file : "");
	f->cache_lock = -1;
	f->cfg.connect = NULL; /* the store's */
	f->cfg.root = f->root;
	f->cfg.identity = f->identity;
	f->cfg.cache_file = f->cache;
	f->cfg.state_stamp = f->stamp;
	f->cfg.mark_file = f->mark;
	f->cfg.legacy_cache_file = f->legacy;
	f->cfg.zk_auth = NULL; /* the store's copy only */
	f->r = (struct fw_fleet_recipe){
		store,         cfg->layout,
		f->identity,   0,
		cfg->lease_ms, cfg->now_ms ? cfg->now_ms : fleet_realtime_ms,
		cfg->now_arg,  cfg->log};
	f->ss = (struct fw_fleet_session){store, f->root, f->identity, cfg->layout, false, false};
	f->ss.datacenter = cfg->datacenter;
	f->ss.stamp = f->stamp;
	f->ss.log = cfg->log;
	f->r.root = &f->ss.rec; /* read with the root every round (session.c) */
	/* a claim's scan counts the root's census too (registry_census.c) */
	f->r.census = &f->scan_census;
	f->cache_of = (struct fw_fleet_cache_of){f->root, f->identity, cfg->layout, f->stamp};
	f->n = n_slots;
	f->pub = calloc(n_slots, sizeof(*f->pub));
	f->slot = calloc(n_slots, sizeof(*f->slot));
	f->replace_req = calloc(n_slots, sizeof(*f->replace_req));
	f->skip = calloc(1u << cfg->layout.worker_bits, sizeof(*f->skip));
	if (!f->pub || !f->slot || !f->replace_req || !f->skip) {
		free(f->skip);
		free(f->pub);
		free(f->slot);
		free(f->replace_req);
		free(f);
		goto fail;
	}
	for (uint32_t i = 0; i < n_slots; i++) {
		f->pub[i].worker = FW_FLEET_WORKER_NONE;
		f->slot[i].worker = FW_FLEET_WORKER_NONE;
	}
	(void)fw_cond_init_mono(&f->cv);
	pthread_mutex_init(&f->mu, NULL);
	*out = f;
	return 0;
fail:
	if (store)
		store->ops->free(store);
	return rc;
}

/*
 * The previous run's cache on this state: what may be taken back (the
 * proof), and what a start with the store down may issue under. Returns
 * fw_fleet_cache_read's code, or FW_FLEET_CACHE_MARK_BELOW when the cache
 * recorded a mark and the state's mark is missing or below it (the mark
 * does not fence what that run issued: nothing is proven); f->proven holds
 * every record a proving cache names.
 */
static int load_proof(struct fw_fleet *f)
{
	struct fw_fleet_held all[FW_FLEET_SLOTS_MAX];
	uint64_t recorded = FW_FLEET_CACHE_NO_MARK, mark = 0;
	for (uint32_t i = 0; i < FW_FLEET_SLOTS_MAX; i++)
		all[i].worker = FW_FLEET_WORKER_NONE;
	f->n_proven = 0;
	const char *from = f->cache;
	int n = f->cache[0] ? fw_fleet_cache_read(f->cache, &f->cache_of, &recorded, all,
						  FW_FLEET_SLOTS_MAX)
			    : -ENOENT;
	if (n == -ENOENT && f->cache[0] && f->legacy[0] && strcmp(f->legacy, f->cache)) {
		/* the upgrade: the old default cache, if this state wrote it */
		n = fw_fleet_cache_read(f->legacy, &f->cache_of, &recorded, all,
					FW_FLEET_SLOTS_MAX);
		if (n > 0) {
			from = f->legacy;
			fw_log(&f->cfg.log, FW_LOG_INFO,
			       "fleet: %s does not exist yet: read the previous default cache %s "
			       "(written on this state: %d worker ID(s)); the cache is %s from now "
			       "on",
			       f->cache, f->legacy, n, f->cache);
		} else {
			n = -ENOENT;
		}
	}
	int mrc = fleet_mark(f, &mark);
	if (mrc == 0)
		f->cache_mark = mark; /* what this run's first cache write records */
	if (n > 0 && f->mark[0] && recorded != FW_FLEET_CACHE_NO_MARK &&
	    (mrc != 0 || mark < recorded)) {
		char now[64];
		if (mrc == 0)
			snprintf(now, sizeof(now), "holds %" PRIu64, mark);
		else
			snprintf(now, sizeof(now), "%s", fw_strerror(mrc));
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: %s recorded the mark %" PRIu64 " and the mark %s %s: the cache "
		       "proves nothing (the mark does not fence what its run issued); worker IDs "
		       "this identity held before are taken over only once their leases end",
		       from, recorded, f->mark, now);
		n = FW_FLEET_CACHE_MARK_BELOW;
	}
	for (uint32_t i = 0; n > 0 && i < FW_FLEET_SLOTS_MAX; i++)
		if (all[i].worker != FW_FLEET_WORKER_NONE)
			f->proven[f->n_proven++] = all[i];
	f->r.proven = f->proven;
	f->r.n_proven = f->n_proven;
	if (n < 0 && n != -ENOENT && n != FW_FLEET_CACHE_MARK_BELOW)
		fw_log(&f->cfg.log, FW_LOG_INFO,
		       "fleet: %s: %s: worker IDs this identity held before are taken over "
		       "only once their leases end",
		       from, fw_fleet_cache_why(n));
	return n;
}

int fw_fleet_start(struct fw_fleet *f, bool *from_cache, char *err, size_t errlen)
{
	char e[MSG_LEN];
	bool cached = false;
	f->r.token = fleet_rand64();
	f->ss.token = f->r.token;
	if (from_cache)
		*from_cache = false;
	if (f->cache[0] && f->cache_lock < 0) {
		char lp[PATH_MAX + 8];
		long holder = 0;
		snprintf(lp, sizeof(lp), "%s.lock", f->cache);
		int fd = fw_state_lock_file(lp, &holder);
		if (fd < 0 && fd != -EWOULDBLOCK) {
			/* the cache's directory missing or not writable: its writes fail
			 * too (logged), so it offers nothing another state could share */
			fw_log(&f->cfg.log, FW_LOG_WARNING, "fleet: cache lock %s: %s", lp,
			       strerror(-fd));
		} else if (fd < 0) {
			char pid[32] = "an unknown PID";
			if (holder > 0)
				snprintf(pid, sizeof(pid), "PID %ld", holder);
			snprintf(err, errlen,
				 "fleet: the cache %s is locked by %s (%s): another responder's "
				 "state uses this [fleet] cache_file; give each state its own (the "
				 "default, auto, is beside [state] file)",
				 f->cache, pid, lp);
			return fd;
		} else {
			f->cache_lock = fd;
		}
	}
	if (f->cache[0] && strstr(f->stamp, ":unknown-") != NULL)
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "fleet: this state's boot ID is unknown (/proc/sys/kernel/random/boot_id "
		       "unreadable, no FLAKEWIRE_BOOT_ID in the environment: systemd's "
		       "ProcSubset=pid hides /proc/sys, set Environment=FLAKEWIRE_BOOT_ID=%%b): "
		       "this run's cache proves nothing to the next start, whose worker IDs "
		       "stay leased until their leases end");
	int n_prev = load_proof(f);

	int rc = fw_fleet_session_ensure(&f->ss, f->cfg.start_wait_ms,
					 f->cfg.session_timeout_ms + 2000, e, sizeof(e));
	if (rc == 0)
		rc = fleet_claim_round(f, fw_mono_ms(), true, e, sizeof(e));
	if (rc == FW_EFLEET_FULL && f->cfg.start_when_full) {
		fw_log(&f->cfg.log, FW_LOG_WARNING,
		       "%s; starting without worker IDs: every slot answers NO_LEASE (not ready) "
		       "until enough are free, then claims them all at once",
		       e);
		f->wait_all = true; /* the cache keeps the previous run's proof until a claim */
		rc = 0;
	}
	if (rc == FW_EFLEET_LAYOUT || rc == FW_EFLEET_IDENTITY || rc == FW_EFLEET_FULL ||
	    rc == FW_EFLEET_AUTH || rc == FW_EFLEET_ROOT) {
		snprintf(err, errlen, "%s", e);
		fw_fleet_session_drop(&f->ss);
		return rc;
	}
	if (rc == 0) {
		/* the first renewal comes a renew interval after the claims */
		f->next_renew = fw_mono_ms() + f->cfg.renew_ms;
		pthread_mutex_lock(&f->mu);
		f->st.connected = true;
		pthread_mutex_unlock(&f->mu);
		f->cache_dirty = true;
		fleet_cache_save(f);
		if (fleet_census(f) == 0) /* the gauges from the first claim on */
			f->next_census = fw_mono_ms() + FW_MAX(f->cfg.renew_ms, 60000u);
	} else {
		/* The store is unreachable: the cache (its slots below f->n), or nothing. */
		int n = 0;
		for (uint32_t j = 0; n_prev > 0 && j < f->n_proven; j++) {
			for (uint32_t i = 0; i < f->n; i++) {
				if (f->slot[i].worker == FW_FLEET_WORKER_NONE) {
					f->slot[i] = f->proven[j];
					n++;
					break;
				}
			}
		}
		if (n_prev > 0 && n == 0)
			n_prev = 0;
		if (n > 0) {
			char ts[FW_ISO8601_LEN];
			uint64_t until = UINT64_MAX;
			for (uint32_t i = 0; i < f->n; i++) {
				if (f->slot[i].worker != FW_FLEET_WORKER_NONE) {
					fleet_publish(f, i, FW_FLEET_SRC_CACHE);
					until = FW_MIN(until, f->slot[i].lease);
				}
			}
			cached = true;
			fw_log(&f->cfg.log, FW_LOG_WARNING,
			       "%s; starting from the cache %s: %d worker ID(s), leases until "
			       "%s at "
			       "least; reconnecting",
			       e, f->cache, n,
			       fw_format_iso8601(until + f->cfg.layout.epoch_ms, ts));
		} else {
			fw_log(&f->cfg.log, FW_LOG_ERR,
			       "%s and %s: no worker ID is held, every reply is NO_LEASE until %s "
			       "answers; retrying",
			       e,
			       !f->cache[0] ? "no [fleet] cache_file is set"
					    : fw_fleet_cache_why(n_prev),
			       f->store->name);
			for (uint32_t i = 0; i < f->n; i++)
				f->slot[i].worker = FW_FLEET_WORKER_NONE;
		}
		f->logged_down = true;
		f->renew_fails = 1;
	}
	pthread_mutex_lock(&f->mu);
	f->st.started_from_cache = cached;
	f->stop = false;
	/* before the thread runs: a field beside the ones it reads (stop, wake)
	 * is never written while it runs (TSan saw the loads merged) */
	f->thread_on = true;
	pthread_mutex_unlock(&f->mu);
	if (from_cache)
		*from_cache = cached;
	if (pthread_create(&f->thread, NULL, fleet_thread_main, f) != 0) {
		snprintf(err, errlen, "fleet: cannot start the registry thread");
		pthread_mutex_lock(&f->mu);
		f->thread_on = false;
		pthread_mutex_unlock(&f->mu);
		fw_fleet_session_drop(&f->ss);
		return -EAGAIN;
	}
	return 0;
}

int fw_fleet_slot(struct fw_fleet *f, uint32_t i, struct fw_fleet_slot *out)
{
	if (f == NULL || out == NULL || i >= f->n)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	*out = f->pub[i];
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int request(struct fw_fleet *f, uint32_t from, uint32_t to)
{
	pthread_mutex_lock(&f->mu);
	for (uint32_t i = from; i < to; i++)
		f->replace_req[i] = true;
	f->wake = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int fw_fleet_replace(struct fw_fleet *f, uint32_t i)
{
	if (f == NULL || i >= f->n)
		return -EINVAL;
	return request(f, i, i + 1);
}

int fw_fleet_replace_all(struct fw_fleet *f)
{
	if (f == NULL)
		return -EINVAL;
	return request(f, 0, f->n);
}

int fw_fleet_retire(struct fw_fleet *f, int32_t worker, uint64_t last_ms)
{
	if (f == NULL)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	int rc = -ENOENT;
	if (f->n_retire_q < FW_FLEET_SLOTS_MAX) {
		f->retire_q[f->n_retire_q++] = (struct retire_req){worker, last_ms};
		f->wake = true;
		pthread_cond_signal(&f->cv);
		rc = 0;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void fw_fleet_status(struct fw_fleet *f, struct fw_fleet_status *st)
{
	pthread_mutex_lock(&f->mu);
	*st = f->st;
	pthread_mutex_unlock(&f->mu);
}

int fw_fleet_stop_release(struct fw_fleet *f, uint32_t timeout_ms)
{
	if (f == NULL)
		return -EINVAL;
	uint64_t deadline = fw_mono_ms() + timeout_ms;
	if (f->thread_on) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		f->keep_session = true;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->thread, NULL);
		f->thread_on = false;
	}
	int rc = fleet_release_all(f, deadline);
	f->cache_dirty = true; /* the last write, with the final mark */
	fw_fleet_stop(f);
	return rc;
}

void fw_fleet_stop(struct fw_fleet *f)
{
	if (f == NULL)
		return;
	if (f->thread_on) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->thread, NULL);
		f->thread_on = false;
		/* once more, with the mark as it is now: a responder writes its
		 * final mark (below its last reservation) before it stops the
		 * fleet, and the next start needs a mark at or above the one
		 * recorded (fw_fleet_cache.h) */
		f->cache_dirty = true;
	}
	fleet_cache_save(f);
	fw_fleet_session_drop(&f->ss);
	pthread_mutex_lock(&f->mu);
	f->st.connected = false;
	pthread_mutex_unlock(&f->mu);
}

void fw_fleet_free(struct fw_fleet *f)
{
	if (f == NULL)
		return;
	fw_fleet_stop(f);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	f->store->ops->free(f->store);
	free(f->pub);
	free(f->slot);
	free(f->replace_req);
	free(f->skip);
	if (f->cache_lock >= 0)
		close(f->cache_lock);
	free(f);
}

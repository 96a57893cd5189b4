/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The claiming recipe, the lease rule and the registry thread over an
 * in-memory store (fleet_memstore.h), no ZooKeeper: every branch of the
 * recipe (new, take back, free, released, expired with its floor, exhausted,
 * identity in use, layout mismatch), a lost reply recognised by its token,
 * renewals after a takeover failing and never raising the confirmed lease,
 * retirement's floor, replacements as one decision that never reuses a
 * retired ID and back off when they cannot be satisfied, sessions dropped,
 * the store down and the cache, and renewals on CLOCK_MONOTONIC while the
 * wall clock reads an hour ahead of the kernel's (clock_gettime below).
 * Layout: 2 worker bits (4 IDs) unless a test says otherwise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet_memstore.h"
#include "fw_err.h"
#include "fw_fleet_cache.h"
#include "fw_fleet_admin.h"
#include "fw_fleet_registry.h"
#include "fw_fleet_session.h"
#include "fw_mark.h"

#define EPOCH    1767225600000ull
#define LEASE_MS 3000
#define RENEW_MS 100

/*
 * The process's wall clock: the kernel's CLOCK_REALTIME plus wall_shift_ms.
 * A shift of +1 h is the state right after the system clock stepped back
 * 1 h: every deadline computed earlier from the wall clock is an hour ahead
 * of the kernel's (what a CLOCK_REALTIME timed wait would sleep for).
 */
static _Atomic int64_t wall_shift_ms;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int rc = (int)syscall(SYS_clock_gettime, id, ts);
	int64_t sh = atomic_load(&wall_shift_ms);
	if (rc == 0 && id == CLOCK_REALTIME && sh) {
		int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + sh * 1000000;
		ts->tv_sec = (time_t)(ns / 1000000000);
		ts->tv_nsec = (long)(ns % 1000000000);
	}
	return rc;
}

static struct memsrv *M;
static int64_t local_off; /* the nodes' local clock minus the real one */
static int warn_full;     /* WARN lines about replacements that cannot be claimed */
static int warn_unproven, warn_retiring, warn_cache; /* WARN lines the tests below count */

static uint64_t real_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t local_clock(void *arg)
{
	(void)arg;
	return (uint64_t)((int64_t)real_ms() + local_off);
}

static uint64_t layout_now(void)
{
	return local_clock(NULL) - EPOCH;
}

static void log_cb(void *arg, enum fw_log_level lvl, const char *msg)
{
	if (getenv("FW_TEST_VERBOSE"))
		fprintf(stderr, "  [%s %d] %s\n", (const char *)arg, (int)lvl, msg);
	if (lvl == FW_LOG_WARNING && strstr(msg, "can be claimed that can issue now"))
		warn_full++;
}

static void cfg_for(struct fw_fleet_config *c, const char *identity, const char *cache)
{
	fw_fleet_config_default(c);
	c->root = "/t";
	c->identity = identity;
	c->cache_file = cache;
	c->layout.worker_bits = 2;
	c->layout.seq_bits = 12;
	c->layout.time_bits = 63 - 2 - 12;
	c->lease_ms = LEASE_MS;
	c->renew_ms = RENEW_MS;
	c->session_timeout_ms = 100;
	c->start_wait_ms = 100;
	c->now_ms = local_clock;
	c->log = (struct fw_log){log_cb, (void *)identity};
}

static struct fw_fleet *start_cfg(const struct fw_fleet_config *c, uint32_t n, int want, char *err,
				  size_t errlen)
{
	struct fw_fleet *f = NULL;
	assert_int_equal(fw_fleet_create_store(c, n, memsrv_client(M), &f, err, errlen), 0);
	int rc = fw_fleet_start(f, NULL, err, errlen);
	if (rc != want)
		fail_msg("start %s: %d, want %d: %s", c->identity, rc, want, err);
	if (rc != 0) {
		fw_fleet_free(f);
		return NULL;
	}
	return f;
}

static struct fw_fleet *start(const char *identity, uint32_t n, int want)
{
	struct fw_fleet_config c;
	char err[2048];
	cfg_for(&c, identity, "");
	return start_cfg(&c, n, want, err, sizeof(err));
}

static struct fw_fleet_slot slot(struct fw_fleet *f, uint32_t i)
{
	struct fw_fleet_slot s;
	assert_int_equal(fw_fleet_slot(f, i, &s), 0);
	return s;
}

static struct fw_fleet_status status(struct fw_fleet *f)
{
	struct fw_fleet_status st;
	fw_fleet_status(f, &st);
	return st;
}

/*
 * A start on a locked state @stamp whose cache is @cache (the state of a
 * responder: fw_state_lock.h). The same stamp again is a restart on the same
 * state; another stamp is another state (a fresh directory, a copy, a clone).
 */
static struct fw_fleet *start_state(const char *identity, uint32_t n, int want, const char *cache,
				    const char *stamp)
{
	struct fw_fleet_config c;
	char err[2048];
	cfg_for(&c, identity, cache);
	c.state_stamp = stamp;
	return start_cfg(&c, n, want, err, sizeof(err));
}

/* The cache a previous run of @identity on state @stamp left: it held @w[i] under @tok[i]. */
static void prove(const char *cache, const char *identity, const char *stamp, const int32_t *w,
		  const uint64_t *tok, uint32_t n)
{
	struct fw_fleet_config c;
	struct fw_fleet_held h[4];
	cfg_for(&c, identity, cache);
	for (uint32_t i = 0; i < n; i++)
		h[i] = (struct fw_fleet_held){
			.worker = w[i], .version = 1, .lease = 1, .token = tok[i]};
	struct fw_fleet_cache_of of = {"/t", identity, c.layout, stamp};
	assert_int_equal(fw_fleet_cache_write(cache, &of, 0, h, n), 0);
}

static const char *cache_path(void)
{
	static char p[128];
	snprintf(p, sizeof(p), "/tmp/fwt-fleet-recipe-proof.%d", (int)getpid());
	return p;
}

static struct fw_fleet_rec rec(uint32_t w)
{
	struct fw_fleet_rec r;
	assert_true(memsrv_get(M, w, &r, NULL));
	return r;
}

static void put(uint32_t w, const char *owner, uint64_t lease, uint64_t floor)
{
	struct fw_fleet_rec r = {.token = 7, .lease = lease, .floor = floor};
	snprintf(r.owner, sizeof(r.owner), "%s", owner);
	memsrv_put(M, w, &r);
}

static void ms_sleep(unsigned ms)
{
	usleep(ms * 1000u);
}

/* Waits up to @ms for @cond. */
#define WAIT_FOR(cond, ms)                                             \
	do {                                                           \
		for (unsigned _t = 0; _t < (ms) / 10 && !(cond); _t++) \
			ms_sleep(10);                                  \
	} while (0)

/* A new store M holding the root an operator made (flakectl fleet init): nodes never make one. */
static void new_store_with_root(void)
{
	struct fw_fleet_config c;
	char err[512];
	struct fw_fleet_store *s;

	M = memsrv_new();
	s = memsrv_client(M);
	cfg_for(&c, "init", "");
	assert_int_equal(fw_fleet_init_store(s, "/t", &c.layout, 0, NULL, 100, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	s->ops->free(s);
}

static int setup(void **state)
{
	(void)state;
	new_store_with_root();
	local_off = 0;
	warn_full = 0;
	warn_retiring = 0;
	warn_cache = 0;
	warn_unproven = 0;
	atomic_store(&wall_shift_ms, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(cache_path());
	memsrv_free(M);
	return 0;
}

/* New IDs: created (S1) with floor 0 and a lease from the local clock. */
static void test_new(void **state)
{
	(void)state;
	uint64_t before = layout_now();
	struct fw_fleet *a = start("a", 2, 0);
	for (uint32_t i = 0; i < 2; i++) {
		struct fw_fleet_slot s = slot(a, i);
		assert_int_equal(s.worker, (int32_t)i); /* lowest first */
		assert_int_equal(s.source, FW_FLEET_SRC_STORE);
		assert_int_equal(s.floor_ms, 0);
		assert_true(s.lease_ms >= before + LEASE_MS &&
			    s.lease_ms <= layout_now() + LEASE_MS);
		assert_string_equal(rec(i).owner, "a");
	}
	assert_int_equal(status(a).claims, 2);
	fw_fleet_free(a);
}

/*
 * A restart on the same state takes its IDs back (its cache holds the
 * records' tokens under the state's stamp): floor kept, lease not lowered.
 */
static void test_take_back(void **state)
{
	(void)state;
	put(2, "a", layout_now() + 10 * LEASE_MS, 5);
	put(3, "a", layout_now() + 10 * LEASE_MS, 6);
	prove(cache_path(), "a", "S", (int32_t[]){2, 3}, (uint64_t[]){7, 7}, 2);
	struct fw_fleet *a = start_state("a", 2, 0, cache_path(), "S");
	struct fw_fleet_slot s0 = slot(a, 0), s1 = slot(a, 1);
	assert_int_equal(s0.worker, 2); /* before the free IDs 0 and 1 */
	assert_int_equal(s1.worker, 3);
	assert_int_equal(s0.floor_ms, 5);
	assert_int_equal(s1.floor_ms, 6);
	assert_true(s0.lease_ms >= layout_now() + 9 * LEASE_MS); /* the old lease stands */
	assert_int_equal(status(a).takebacks, 2);
	assert_int_equal(status(a).claims, 0);
	assert_false(memsrv_get(M, 0, &(struct fw_fleet_rec){0}, NULL)); /* nothing created */
	fw_fleet_free(a);
}

/*
 * Defect 1 of issue 32: the name alone takes nothing back. The same
 * identity on a fresh state (no cache), on another state (a copied
 * directory, a clone: another stamp), or with a cache naming other tokens
 * (a twin wrote the records) claims IDs that can issue now and leaves the
 * live records alone: their writer may still be issuing behind a partition.
 */
static void test_take_back_needs_proof(void **state)
{
	(void)state;
	put(2, "a", layout_now() + 10 * LEASE_MS, 5);
	put(3, "a", layout_now() + 10 * LEASE_MS, 6);
	const char *how[] = {"fresh", "other-state", "other-token"};
	for (int k = 0; k < 3; k++) {
		unlink(cache_path());
		if (k == 1)
			prove(cache_path(), "a", "S-copied", (int32_t[]){2, 3}, (uint64_t[]){7, 7},
			      2);
		if (k == 2)
			prove(cache_path(), "a", "S", (int32_t[]){2, 3}, (uint64_t[]){8, 9}, 2);
		struct fw_fleet *a = start_state("a", 2, 0, cache_path(), "S");
		if (slot(a, 0).worker >= 2 || slot(a, 1).worker >= 2)
			fail_msg("%s state: took back %d/%d by name", how[k], slot(a, 0).worker,
				 slot(a, 1).worker);
		assert_int_equal(status(a).takebacks, 0);
		assert_int_equal(rec(2).token, 7); /* untouched */
		assert_int_equal(rec(3).token, 7);
		fw_fleet_free(a);
		/* the next start gives those back: free them for the next case */
		put(0, "", 0, 0);
		put(1, "", 0, 0);
	}
}

/*
 * At the default 24 h lease, a restart that lost its cache (a rebuilt node,
 * a pod on a fresh volume) serves at once on free IDs: it does not wait a
 * day for its old records, and leaves them alone.
 */
static void test_lost_cache_serves_at_default_lease(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	put(0, "a", layout_now() + 24ull * 3600 * 1000, 0);
	put(1, "a", layout_now() + 24ull * 3600 * 1000, 0);
	cfg_for(&c, "a", "");
	c.lease_ms = 24ull * 3600 * 1000;
	c.renew_ms = 60 * 1000;
	struct fw_fleet *a = start_cfg(&c, 2, 0, err, sizeof(err));
	for (uint32_t i = 0; i < 2; i++) {
		struct fw_fleet_slot s = slot(a, i);
		assert_true(s.worker == 2 || s.worker == 3);
		assert_int_equal(s.source, FW_FLEET_SRC_STORE);
		assert_int_equal(s.floor_ms, 0);
	}
	assert_int_equal(rec(0).token, 7);
	assert_int_equal(rec(1).token, 7);
	fw_fleet_free(a);
}

/*
 * Only this identity's unproven records stand in the way: the start does
 * not refuse; the slots wait (NO_LEASE, WARN naming the identity) and take
 * the IDs over once their lease ends, with floor = the old lease_until.
 */
static void count_unproven(void *arg, enum fw_log_level lvl, const char *msg)
{
	log_cb(arg, lvl, msg);
	if (lvl == FW_LOG_WARNING && strstr(msg, "2 by a (this identity") &&
	    strstr(msg, "NO_LEASE"))
		warn_unproven++;
}

static void test_unproven_waits_for_lease_end(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	uint64_t end = layout_now() + 800;
	put(0, "x", layout_now() + 100 * LEASE_MS, 0);
	put(1, "y", layout_now() + 100 * LEASE_MS, 0);
	put(2, "a", end, 0);
	put(3, "a", end, 0);
	cfg_for(&c, "a", "");
	c.log.fn = count_unproven;
	struct fw_fleet *a = start_cfg(&c, 2, 0, err, sizeof(err));
	assert_int_equal(slot(a, 0).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(slot(a, 1).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(warn_unproven, 1);
	WAIT_FOR(slot(a, 0).worker >= 0 && slot(a, 1).worker >= 0, 4000);
	for (uint32_t i = 0; i < 2; i++) {
		struct fw_fleet_slot s = slot(a, i);
		assert_true(s.worker == 2 || s.worker == 3);
		assert_true(s.floor_ms >= end); /* above anything the old writer may issue */
	}
	assert_true(layout_now() > end);
	assert_int_equal(status(a).takeovers, 2);
	fw_fleet_free(a);
}

/*
 * The cache path obeys the same rule: a start from the cache (store down)
 * adopts at its first renewal only a record still holding the cached run's
 * token; one another process of this identity wrote meanwhile is lost.
 */
static void test_cache_adopts_only_its_token(void **state)
{
	(void)state;
	for (int twin = 0; twin < 2; twin++) {
		struct fw_fleet_rec r = {.token = twin ? 99 : 7,
					 .lease = layout_now() + 10 * LEASE_MS};
		snprintf(r.owner, sizeof(r.owner), "a");
		memsrv_put(M, 0, &r);
		prove(cache_path(), "a", "S", (int32_t[]){0}, (uint64_t[]){7}, 1);
		memsrv_down(M, true);
		struct fw_fleet *a = start_state("a", 1, 0, cache_path(), "S");
		assert_int_equal(slot(a, 0).worker, 0);
		assert_int_equal(slot(a, 0).source, FW_FLEET_SRC_CACHE);
		memsrv_down(M, false);
		if (twin) {
			WAIT_FOR(status(a).lost == 1, 3000);
			assert_int_equal(status(a).lost, 1);
			assert_int_equal(rec(0).token, 99); /* the twin's record stands */
		} else {
			WAIT_FOR(status(a).renewals >= 1, 3000);
			assert_int_equal(status(a).lost, 0);
			assert_true(rec(0).token != 7); /* renewed under this run's token */
			assert_int_equal(slot(a, 0).worker, 0);
		}
		fw_fleet_free(a);
	}
}

/* Free (released) IDs: floor = max(floor, lease_until). */
static void test_free_released(void **state)
{
	(void)state;
	uint64_t now = layout_now();
	put(0, "x", now + 10 * LEASE_MS, 0);
	put(1, "", now - 900, now - 2000); /* lease above floor: the floor rises to it */
	put(2, "x", now + 10 * LEASE_MS, 0);
	put(3, "y", now + 10 * LEASE_MS, 0);
	struct fw_fleet *a = start("a", 1, 0);
	struct fw_fleet_slot s = slot(a, 0);
	assert_int_equal(s.worker, 1);
	assert_int_equal(s.floor_ms, now - 900);
	assert_int_equal(rec(1).floor, now - 900);
	fw_fleet_free(a);
}

/* Expired by the store's time: taken over with floor = the old lease_until. */
static void test_expired_with_floor(void **state)
{
	(void)state;
	uint64_t now = layout_now();
	put(0, "x", now + 10 * LEASE_MS, 0);
	put(1, "y", now - 50, 10);  /* expired */
	put(2, "z", now - 300, 20); /* expired earlier: taken first */
	put(3, "w", now + 10 * LEASE_MS, 0);
	struct fw_fleet *a = start("a", 1, 0);
	assert_int_equal(slot(a, 0).worker, 2);
	assert_int_equal(slot(a, 0).floor_ms, now - 300);
	assert_int_equal(rec(2).floor, now - 300);
	assert_true(rec(2).lease > now);
	assert_int_equal(status(a).takeovers, 1);
	fw_fleet_free(a);
}

/* Expiry is judged by the store's time, not the local clock. */
static void test_expired_by_store_time(void **state)
{
	(void)state;
	uint64_t now = layout_now();
	for (uint32_t w = 0; w < 4; w++)
		put(w, "x", now - 1000, 0); /* expired by the local clock */
	memsrv_time_offset(M, -60000);      /* the store is a minute behind */
	assert_null(start("a", 1, FW_EFLEET_FULL));
	memsrv_time_offset(M, 0);
	local_off = -60000; /* the local clock behind: the store's time still says expired */
	struct fw_fleet *a = start("a", 1, 0);
	assert_int_equal(slot(a, 0).floor_ms, now - 1000);
	fw_fleet_free(a);
}

/* Exhausted: refused before writing anything, naming the owners and their lease ends. */
static void test_exhausted(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	for (uint32_t w = 0; w < 3; w++)
		put(w, "other", layout_now() + 10 * LEASE_MS, 0);
	uint64_t writes = memsrv_worker_writes(M);
	cfg_for(&c, "a", "");
	assert_null(start_cfg(&c, 2, FW_EFLEET_FULL, err, sizeof(err)));
	assert_non_null(strstr(err, "needs 2 worker ID(s) and only 1 can be claimed: 3 of 4"));
	assert_non_null(strstr(err, "0 by other until 20"));
	assert_int_equal(memsrv_worker_writes(M), writes);
	assert_false(memsrv_get(M, 3, &(struct fw_fleet_rec){0}, NULL));
}

static int warn_waiting, info_claimed_after_wait;
static void count_waiting(void *arg, enum fw_log_level lvl, const char *msg)
{
	log_cb(arg, lvl, msg);
	if (lvl == FW_LOG_WARNING && strstr(msg, "starting without worker IDs") &&
	    strstr(msg, "needs 2 worker ID(s) and only 1 can be claimed") &&
	    strstr(msg, "; 1 free, 2 stranded (leased to owners with no live session), the "
			"first back at 20"))
		warn_waiting++;
	else if (lvl == FW_LOG_WARNING && strstr(msg, "can be claimed"))
		warn_waiting += 100; /* logged again: once is the rule */
	if (lvl == FW_LOG_INFO && strstr(msg, "2 worker ID(s) claimed after waiting"))
		info_claimed_after_wait++;
}

/*
 * Issue 50: with start_when_full (the responders) a start that finds too
 * few free worker IDs starts anyway holding none (NO_LEASE: not ready),
 * says once how many are stranded and when the first returns, claims
 * nothing while one alone is free (all or none: a waiting node holds no ID
 * it cannot use), and claims both once a second is released.
 */
static void test_start_when_full(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	uint64_t now = layout_now();
	put(0, "gone", now + 10 * LEASE_MS, 0); /* no session: stranded */
	put(1, "gone", now + 20 * LEASE_MS, 0);
	put(2, "busy", now + 10 * LEASE_MS, 0); /* alive */
	memsrv_alive_other(M, "busy");
	cfg_for(&c, "a", "");
	c.log.fn = count_waiting;
	c.start_when_full = true;
	warn_waiting = info_claimed_after_wait = 0;
	struct fw_fleet *a = start_cfg(&c, 2, 0, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(warn_waiting, 1);
	assert_int_equal(slot(a, 0).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(slot(a, 1).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(slot(a, 0).source, FW_FLEET_SRC_NONE);
	assert_false(memsrv_get(M, 3, &(struct fw_fleet_rec){0}, NULL)); /* nothing claimed */
	struct fw_fleet_status st = status(a);
	assert_true(st.connected);
	assert_int_equal(st.free_ids, 1);
	assert_int_equal(st.stranded_ids, 2);
	assert_int_equal(st.next_stranded_unix, now + 10 * LEASE_MS + EPOCH);
	ms_sleep(5 * RENEW_MS); /* rounds with one free: all or none, so none */
	assert_int_equal(slot(a, 0).worker, FW_FLEET_WORKER_NONE);
	assert_false(memsrv_get(M, 3, &(struct fw_fleet_rec){0}, NULL));
	assert_int_equal(warn_waiting, 1); /* logged once */
	put(2, "", now, now);              /* busy's ID released (a graceful stop) */
	WAIT_FOR(slot(a, 0).worker >= 0 && slot(a, 1).worker >= 0, 3000);
	int32_t w0 = slot(a, 0).worker, w1 = slot(a, 1).worker;
	assert_true((w0 == 2 && w1 == 3) || (w0 == 3 && w1 == 2));
	assert_int_equal(info_claimed_after_wait, 1);
	assert_int_equal(warn_waiting, 1);
	assert_string_equal(rec(2).owner, "a");
	assert_string_equal(rec(3).owner, "a");
	assert_string_equal(rec(0).owner, "gone"); /* stranded ones untouched */
	fw_fleet_free(a);
	/* without start_when_full the same start fails, as before */
	put(2, "busy", layout_now() + 10 * LEASE_MS, 0);
	put(3, "busy", layout_now() + 10 * LEASE_MS, 0);
	cfg_for(&c, "b", "");
	assert_null(start_cfg(&c, 1, FW_EFLEET_FULL, err, sizeof(err)));
}

/* Another live session with this identity is refused; a garbled record is never claimed. */
static void test_identity_in_use(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	memsrv_alive_other(M, "a");
	cfg_for(&c, "a", "");
	assert_null(start_cfg(&c, 1, FW_EFLEET_IDENTITY, err, sizeof(err)));
	assert_non_null(strstr(err, "identity a is in use by another live"));
	memsrv_put_text(M, 0, "flakewire-worker v1\nowner=\n"); /* garbled */
	struct fw_fleet *b = start("b", 1, 0);
	assert_int_equal(slot(b, 0).worker, 1);
	fw_fleet_free(b);
}

/*
 * A restart after kill -9 (issue 49): the killed run's session lives on
 * (until it times out) and holds this identity's liveness record, which
 * names the state's stamp, that run's token and its process. Its successor
 * on that state (holding the state's lock: that process is gone) replaces
 * the record at once rather than wait a session timeout plus 2 s, and takes
 * its worker ID back with its cache; without the cache it claims another at
 * once (the old one stays the old run's: nothing proves it).
 */
static void test_restart_replaces_own_liveness(void **state)
{
	(void)state;
	const char *cache = cache_path();
	char text[FW_FLEET_REC_MAX];
	struct fw_fleet_alive al;
	struct fw_fleet_rec r = {.owner = "a", .token = 0x77, .lease = layout_now() + LEASE_MS};
	memsrv_put(M, 0, &r);
	prove(cache, "a", "S", (int32_t[]){0}, (uint64_t[]){0x77}, 1);
	memsrv_alive_other_text(
		M, "a", "pid=99\ntoken=0000000000000077\nprocess=0000000000000005\nstate=S\n");
	uint64_t t0 = real_ms();
	struct fw_fleet *a = start_state("a", 1, 0, cache, "S");
	assert_true(real_ms() - t0 < 1000); /* waiting would take 2,100 ms */
	assert_int_equal(memsrv_alive_replaced(M), 1);
	assert_int_equal(slot(a, 0).worker, 0);
	assert_int_equal(status(a).takebacks, 1);
	assert_true(memsrv_alive_text(M, "a", text, sizeof(text)));
	assert_int_equal(fw_fleet_alive_parse(text, (int)strlen(text), &al), 0);
	assert_string_equal(al.state, "S"); /* this run's now */
	assert_int_equal(al.pid, getpid());
	assert_true(al.token != 0x77 && al.process != 5);
	fw_fleet_free(a);

	/* the cache lost: the state still proves the record, not worker 0 */
	unlink(cache);
	memsrv_alive_other_text(
		M, "a", "pid=98\ntoken=0000000000000088\nprocess=0000000000000006\nstate=S\n");
	t0 = real_ms();
	a = start_state("a", 1, 0, cache, "S");
	assert_true(real_ms() - t0 < 1000);
	assert_int_equal(memsrv_alive_replaced(M), 2);
	assert_int_equal(slot(a, 0).worker, 1);
	assert_int_equal(status(a).takebacks, 0);
	fw_fleet_free(a);
}

/*
 * What a successor never replaces (session.c): a liveness record of another
 * state (a twin of this identity on another host or directory), one whose
 * boot ID is unknown (its stamp proves nothing), one written before records
 * named their state, or another registry's of this very process on the
 * same state. Each is waited for (here 50 ms) and refused at start; a
 * running session leaves it and retries at its next round.
 */
static void test_liveness_of_others_kept(void **state)
{
	(void)state;
	static const struct {
		const char *identity, *stamp, *text;
	} other[] = {
		{"t", "S", "pid=9\ntoken=0000000000000001\nprocess=0000000000000002\nstate=T\n"},
		{"u", "1:2:unknown-00000000000000aa",
		 "pid=9\ntoken=0000000000000001\nprocess=0000000000000002\nstate=1:2:unknown-"
		 "00000000000000aa\n"},
		{"v", "S", "pid=9\n"},
		{"w", "", "pid=9\ntoken=0000000000000001\nprocess=0000000000000002\nstate=\n"},
	};
	struct fw_layout l = {.epoch_ms = EPOCH, .time_bits = 49, .worker_bits = 2, .seq_bits = 12};
	char err[1024], text[FW_FLEET_REC_MAX];
	for (size_t i = 0; i < FW_ARRAY_SIZE(other); i++) {
		struct fw_fleet_store *s = memsrv_client(M);
		struct fw_fleet_session ss = {s, "/t", other[i].identity, l};
		ss.stamp = other[i].stamp;
		ss.token = 3;
		memsrv_alive_other_text(M, other[i].identity, other[i].text);
		assert_int_equal(fw_fleet_session_ensure(&ss, 100, 50, err, sizeof(err)),
				 FW_EFLEET_IDENTITY);
		assert_int_equal(fw_fleet_session_ensure(&ss, 100, 0, err, sizeof(err)), 0);
		assert_false(ss.alive_ok); /* running: left, retried next round */
		assert_true(memsrv_alive_text(M, other[i].identity, text, sizeof(text)));
		assert_string_equal(text, other[i].text);
		fw_fleet_session_drop(&ss);
		s->ops->free(s);
	}
	/* two registries of one process on one state: the first stays alive */
	struct fw_fleet *a = start_state("a", 1, 0, "", "S");
	struct fw_fleet_store *s = memsrv_client(M);
	struct fw_fleet_session ss = {s, "/t", "a", l};
	ss.stamp = "S";
	ss.token = 3; /* not a's */
	assert_int_equal(fw_fleet_session_ensure(&ss, 100, 50, err, sizeof(err)),
			 FW_EFLEET_IDENTITY);
	assert_non_null(strstr(err, "identity a is in use by another live"));
	fw_fleet_session_drop(&ss);
	s->ops->free(s);
	assert_int_equal(memsrv_alive_replaced(M), 0);
	assert_true(status(a).connected);
	fw_fleet_free(a);
}

/* A root holding another layout (or none of ours) refuses to start. */
static void test_layout_mismatch(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	memsrv_set_meta(M, "/t",
			"flakewire-fleet v1\nepoch_ms=1767225600000\ndatacenter_bits=0\n"
			"worker_bits=3\nsequence_bits=12\ndatacenter=0\n");
	cfg_for(&c, "a", "");
	assert_null(start_cfg(&c, 1, FW_EFLEET_LAYOUT, err, sizeof(err)));
	assert_non_null(strstr(err, "worker_bits 3"));
	memsrv_set_meta(M, "/t", "something else");
	assert_null(start_cfg(&c, 1, FW_EFLEET_LAYOUT, err, sizeof(err)));
	assert_non_null(strstr(err, "no flakewire fleet layout"));
}

/* A renewal whose reply is lost landed: the next one recognises the token. */
static void test_lost_reply_token(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	uint64_t renewals = status(a).renewals;
	memsrv_lose_replies(M, 1);
	WAIT_FOR(status(a).renewals >= renewals + 3, 3000);
	struct fw_fleet_status st = status(a);
	assert_true(st.renewals >= renewals + 3);
	assert_int_equal(st.lost, 0);
	assert_true(st.renew_failures >= 1);
	assert_false(slot(a, 0).lost);
	assert_int_equal(slot(a, 0).worker, 0);
	assert_string_equal(rec(0).owner, "a");
	fw_fleet_free(a);
}

/* A claim whose reply is lost at start: the registry takes it back later by identity. */
static void test_lost_claim_reply(void **state)
{
	(void)state;
	memsrv_lose_replies(M, 1);
	struct fw_fleet *a = start("a", 1, 0); /* unreachable at start: no cache, NONE */
	WAIT_FOR(slot(a, 0).worker >= 0, 3000);
	assert_int_equal(slot(a, 0).worker, 0);
	assert_int_equal(status(a).takebacks, 1);
	assert_false(memsrv_get(M, 1, &(struct fw_fleet_rec){0}, NULL)); /* no second ID */
	fw_fleet_free(a);
}

/* After a takeover renewals fail: the slot is lost and its lease never rises again. */
static void test_renew_after_takeover(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	ms_sleep(2 * RENEW_MS);
	struct fw_fleet_slot before = slot(a, 0);
	put(0, "b", layout_now() + 10 * LEASE_MS, before.lease_ms); /* b took it over */
	WAIT_FOR(status(a).lost == 1, 3000);
	assert_int_equal(status(a).lost, 1);
	for (int t = 0; t < 5; t++) {
		struct fw_fleet_slot s = slot(a, 0);
		if (s.worker == 0) /* still on the lost ID: its final limit */
			assert_true(s.lease_ms <= before.lease_ms + RENEW_MS * 2 + 50);
		ms_sleep(RENEW_MS);
	}
	assert_string_equal(rec(0).owner, "b");
	/* a claimed another ID (5 s: a loaded machine; it comes in the next round) */
	WAIT_FOR(slot(a, 0).worker == 1, 5000);
	assert_int_equal(slot(a, 0).worker, 1);
	assert_false(slot(a, 0).lost);
	fw_fleet_free(a);
}

/*
 * Issue 38: a slot that lost its ID claims another in the round that found
 * the loss, not a renew_ms later (60 s by default). With renew_ms 5 s the
 * new ID comes within half of it.
 */
static void test_lost_claims_at_once(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	cfg_for(&c, "a", "");
	c.renew_ms = 5000;
	c.lease_ms = 60000;
	struct fw_fleet *a = start_cfg(&c, 1, 0, err, sizeof(err));
	struct fw_fleet_slot s0 = slot(a, 0);
	put(0, "b", layout_now() + 100000, s0.lease_ms); /* b took it over */
	WAIT_FOR(status(a).lost == 1, 12000);            /* found at the next renewal */
	assert_int_equal(status(a).lost, 1);
	WAIT_FOR(slot(a, 0).worker == 1, 2500);
	assert_int_equal(slot(a, 0).worker, 1);
	fw_fleet_free(a);
}

static int alive_of_fails(struct fw_fleet_store *s, const char *identity, bool *alive)
{
	(void)s;
	(void)identity;
	(void)alive;
	return -EIO;
}

/* Released by an operator while held: lost, then claimed back above the old lease. */
static void test_released_while_held(void **state)
{
	(void)state;
	char err[512];
	struct fw_fleet *a = start("a", 1, 0);
	for (uint32_t w = 1; w < 4; w++)
		put(w, "other", layout_now() + 10 * LEASE_MS, 0);
	struct fw_fleet_slot s0 = slot(a, 0);
	struct fw_fleet_store *ops = memsrv_client(M);
	/* a live owner: refused without force (issue 38), naming it */
	assert_int_equal(fw_fleet_release_store(ops, "/t", 0, 0, 100, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "held by a, alive"));
	/* the owner's liveness unreadable: refused too (fails closed), the record untouched */
	const struct fw_fleet_store_ops *real = ops->ops;
	struct fw_fleet_store_ops broken = *real;
	broken.alive_of = alive_of_fails;
	ops->ops = &broken;
	assert_true(fw_fleet_release_store(ops, "/t", 0, 0, 100, err, sizeof(err)) < 0);
	ops->ops = real;
	struct fw_fleet_rec r;
	int64_t ver;
	assert_true(memsrv_get(M, 0, &r, &ver));
	assert_string_equal(r.owner, "a");
	assert_int_equal(
		fw_fleet_release_store(ops, "/t", 0, FW_FLEET_RELEASE_FORCE, 100, err, sizeof(err)),
		0);
	ops->ops->free(ops);
	WAIT_FOR(status(a).lost == 1 && slot(a, 0).gen != s0.gen && !slot(a, 0).lost, 5000);
	struct fw_fleet_slot s1 = slot(a, 0);
	assert_int_equal(status(a).lost, 1);
	assert_int_equal(s1.worker, 0);
	assert_false(s1.lost);
	assert_true(s1.floor_ms >= s0.lease_ms);
	fw_fleet_free(a);
}

/* Retirement: owner "", lease = floor = max(floor, last). */
static void test_retire_floor(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker == 1, 5000);
	assert_int_equal(slot(a, 0).worker, 1);
	uint64_t last = layout_now() + 12345;
	assert_int_equal(fw_fleet_retire(a, 0, last), 0);
	WAIT_FOR(status(a).releases == 1, 5000);
	struct fw_fleet_rec r = rec(0);
	assert_string_equal(r.owner, "");
	assert_int_equal(r.floor, last);
	assert_int_equal(r.lease, last);
	/* a retirement below the floor keeps the floor */
	put(2, "a", layout_now() + LEASE_MS, 0);
	fw_fleet_free(a);
}

/* Not every slot can get a replacement: none swaps, nothing stays claimed. */
static void test_replace_all_or_none(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 2, 0);
	put(3, "other", layout_now() + 10 * LEASE_MS, 0); /* only ID 2 is left */
	struct fw_fleet_slot s0 = slot(a, 0), s1 = slot(a, 1);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	ms_sleep(600);
	assert_int_equal(slot(a, 0).gen, s0.gen);
	assert_int_equal(slot(a, 1).gen, s1.gen);
	assert_false(memsrv_get(M, 2, &(struct fw_fleet_rec){0}, NULL)); /* not claimed */
	/* an ID frees: both swap together, to IDs neither held */
	put(3, "", layout_now() - 1, layout_now() - 1);
	WAIT_FOR(slot(a, 0).gen != s0.gen, 3000);
	struct fw_fleet_slot n0 = slot(a, 0), n1 = slot(a, 1);
	assert_int_not_equal(n0.gen, s0.gen);
	assert_int_not_equal(n1.gen, s1.gen);
	assert_true((n0.worker == 2 && n1.worker == 3) || (n0.worker == 3 && n1.worker == 2));
	fw_fleet_free(a);
}

/*
 * A retired ID is never a replacement: after a first replacement on a clock
 * an hour ahead, the old IDs are retired with floors an hour ahead; once the
 * clock is back, a second replacement cannot use them (they could not issue
 * for an hour) and is refused, logged once, while the current IDs stay.
 */
static void test_replacement_never_retired(void **state)
{
	(void)state;
	local_off = 3600 * 1000;
	struct fw_fleet *a = start("a", 2, 0);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker >= 2 && slot(a, 1).worker >= 2, 2000);
	assert_true(slot(a, 0).worker >= 2 && slot(a, 1).worker >= 2);
	uint64_t last = layout_now();
	assert_int_equal(fw_fleet_retire(a, 0, last), 0);
	assert_int_equal(fw_fleet_retire(a, 1, last), 0);
	WAIT_FOR(status(a).releases == 2, 2000);
	assert_int_equal(status(a).releases, 2);
	local_off = 0; /* the clock stepped back */
	struct fw_fleet_slot s0 = slot(a, 0), s1 = slot(a, 1);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	ms_sleep(600);
	assert_int_equal(slot(a, 0).gen, s0.gen);
	assert_int_equal(slot(a, 1).gen, s1.gen);
	assert_int_equal(warn_full, 1);
	fw_fleet_free(a);
}

/*
 * An ID being retired (its worker may still issue until it swaps) is never
 * claimed again, not even as a take-back by a slot that lost its own.
 */
static void test_retiring_never_claimed(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 2, 0);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker >= 2 && slot(a, 1).worker >= 2, 2000);
	int32_t w = slot(a, 0).worker;
	assert_true(w >= 2);
	put((uint32_t)w, "b", layout_now() + 10 * LEASE_MS, slot(a, 0).lease_ms); /* taken over */
	WAIT_FOR(status(a).lost == 1, 2000);
	assert_int_equal(status(a).lost, 1);
	for (int t = 0; t < 10; t++) {
		struct fw_fleet_slot s = slot(a, 0);
		assert_true(s.worker != 0 && s.worker != 1);
		ms_sleep(RENEW_MS / 2);
	}
	fw_fleet_free(a);
}

/*
 * Defect 3 of issue 32: a release the store refuses with anything but
 * "unreachable" (etcd's NOSPACE, a proxy's 502, an ACL) is not done: the ID
 * stays ours and retiring, is never claimed again by this process (not even
 * by a slot that lost its own and has nothing else), and is released at its
 * retirement point once the store takes the write.
 */
static void test_release_error_kept(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	put(2, "x", layout_now() + 100 * LEASE_MS, 0);
	put(3, "y", layout_now() + 100 * LEASE_MS, 0);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker == 1, 2000);
	assert_int_equal(slot(a, 0).worker, 1);
	memsrv_fail_worker(M, 0, -EIO);
	uint64_t last = layout_now() + 5000; /* issued ahead of the clock (a backward step) */
	assert_int_equal(fw_fleet_retire(a, 0, last), 0);
	ms_sleep(4 * RENEW_MS);
	assert_int_equal(status(a).releases, 0);
	assert_string_equal(rec(0).owner, "a"); /* not released: not forgotten either */
	/* the slot loses its ID: the only other one is 0, still retiring */
	put(1, "b", layout_now() + 100 * LEASE_MS, slot(a, 0).lease_ms);
	WAIT_FOR(status(a).lost == 1, 2000);
	assert_int_equal(status(a).lost, 1);
	for (int t = 0; t < 8; t++) {
		assert_true(slot(a, 0).worker != 0);
		ms_sleep(RENEW_MS / 2);
	}
	memsrv_fail_worker(M, 0, 0); /* the store takes writes again */
	WAIT_FOR(status(a).releases == 1, 3000);
	assert_int_equal(status(a).releases, 1);
	WAIT_FOR(slot(a, 0).worker == 0, 3000);
	if (slot(a, 0).worker == 0)
		assert_true(slot(a, 0).floor_ms >= last); /* never below what was issued */
	assert_true(rec(0).floor >= last);
	fw_fleet_free(a);
}

/*
 * Every replaced ID stays retiring until its release is confirmed, so a
 * full retiring table blocks the next replacement (the current IDs keep
 * issuing) instead of dropping an unreleased ID; once the releases land,
 * the replacement goes through.
 */
static void count_retiring(void *arg, enum fw_log_level lvl, const char *msg)
{
	log_cb(arg, lvl, msg);
	if (lvl == FW_LOG_WARNING && strstr(msg, "still retiring"))
		warn_retiring++;
}

static void test_retiring_table_full_blocks(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	enum { N = 200 };
	cfg_for(&c, "a", "");
	c.layout.worker_bits = 10;
	c.layout.time_bits = 63 - 10 - 12;
	c.log.fn = count_retiring;
	memsrv_set_meta(M, "/t", /* the root made for this layout (the setup's has 2 bits) */
			"flakewire-fleet v1\nepoch_ms=1767225600000\ndatacenter_bits=0\n"
			"worker_bits=10\nsequence_bits=12\ndatacenter=0\nreserved=\n");
	struct fw_fleet *a = start_cfg(&c, N, 0, err, sizeof(err));
	for (uint32_t w = 0; w < N; w++)
		memsrv_fail_worker(M, w, -EIO);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker >= N && slot(a, N - 1).worker >= N, 4000);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(fw_fleet_retire(a, (int32_t)i, layout_now()), 0);
	ms_sleep(3 * RENEW_MS);
	assert_int_equal(status(a).releases, 0);
	struct fw_fleet_slot s0 = slot(a, 0);
	assert_int_equal(fw_fleet_replace_all(a), 0); /* 200 retiring + 200 > 256 */
	ms_sleep(6 * RENEW_MS);
	assert_int_equal(slot(a, 0).gen, s0.gen);
	assert_int_equal(warn_retiring, 1);
	for (uint32_t w = 0; w < N; w++)
		memsrv_fail_worker(M, w, 0);
	WAIT_FOR(status(a).releases == N, 4000);
	assert_int_equal(status(a).releases, N);
	WAIT_FOR(slot(a, 0).gen != s0.gen, 10000);
	assert_int_not_equal(slot(a, 0).gen, s0.gen);
	fw_fleet_free(a);
}

/* A cache that cannot be written is logged once, not at every round. */
static void count_cache(void *arg, enum fw_log_level lvl, const char *msg)
{
	log_cb(arg, lvl, msg);
	if (lvl == FW_LOG_WARNING && strstr(msg, "cannot write the cache"))
		warn_cache++;
}

static void test_cache_write_failure_logged_once(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	cfg_for(&c, "a", "/nonexistent-fwt-dir/fleet");
	c.state_stamp = "S";
	c.log.fn = count_cache;
	struct fw_fleet *a = start_cfg(&c, 1, 0, err, sizeof(err));
	uint64_t r = status(a).renewals;
	WAIT_FOR(status(a).renewals >= r + 4, 3000);
	assert_true(status(a).renewals >= r + 4); /* a write attempted at each */
	assert_int_equal(warn_cache, 1);
	fw_fleet_free(a);
}

/* A release whose version moved because another owner took over above our last: done. */
static void test_release_after_takeover_done(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker == 1, 2000);
	uint64_t last = layout_now();
	put(0, "b", layout_now() + 10 * LEASE_MS, last + 1); /* b took 0 over, above us */
	assert_int_equal(fw_fleet_retire(a, 0, last), 0);
	WAIT_FOR(status(a).releases == 1, 2000);
	assert_int_equal(status(a).releases, 1);
	assert_string_equal(rec(0).owner, "b"); /* left alone */
	/* and one below our last is never called done */
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker >= 2, 2000);
	int32_t w = 1; /* the ID the second replacement retires */
	put((uint32_t)w, "c", layout_now() + 10 * LEASE_MS, 0); /* floor 0: a broken writer */
	assert_int_equal(fw_fleet_retire(a, w, layout_now() + 100), 0);
	ms_sleep(4 * RENEW_MS);
	assert_int_equal(status(a).releases, 1);
	fw_fleet_free(a);
}

/*
 * A full fleet under new_worker: a replacement that cannot be satisfied
 * backs off; the store sees about the writes of normal renewals.
 */
static void test_full_fleet_write_rate(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 2, 0);
	put(2, "x", layout_now() + 100 * LEASE_MS, 0);
	put(3, "y", layout_now() + 100 * LEASE_MS, 0);
	ms_sleep(RENEW_MS);
	uint64_t w0 = memsrv_writes(M);
	ms_sleep(1000);
	uint64_t normal = memsrv_writes(M) - w0;
	assert_int_equal(fw_fleet_replace_all(a), 0);
	w0 = memsrv_writes(M);
	ms_sleep(1000);
	uint64_t full = memsrv_writes(M) - w0;
	if (getenv("FW_TEST_VERBOSE"))
		fprintf(stderr, "  writes in 1 s: %llu normal, %llu with a pending replacement\n",
			(unsigned long long)normal, (unsigned long long)full);
	assert_true(normal >= 10);
	assert_true(full <= 2 * normal);
	assert_int_equal(warn_full, 1);
	fw_fleet_free(a);
}

/* A dropped session: the registry opens another, holds its liveness again, renews. */
static void test_session_dropped(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	memsrv_drop_sessions(M);
	uint64_t r = status(a).renewals;
	WAIT_FOR(status(a).renewals >= r + 2, 3000);
	assert_true(status(a).renewals >= r + 2);
	struct fw_fleet_list l;
	char err[512];
	struct fw_fleet_store *ops = memsrv_client(M);
	assert_int_equal(fw_fleet_list_store(ops, "/t", 100, &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 1);
	assert_true(l.v[0].alive);
	assert_string_equal(l.v[0].owner, "a");
	fw_fleet_list_free(&l);
	/* the operators' release: free, floor raised to the lease */
	uint64_t lease = rec(0).lease;
	assert_int_equal(
		fw_fleet_release_store(ops, "/t", 0, FW_FLEET_RELEASE_FORCE, 100, err, sizeof(err)),
		0);
	assert_string_equal(rec(0).owner, "");
	assert_true(rec(0).floor >= lease);
	assert_int_equal(fw_fleet_release_store(ops, "/t", 3, 0, 100, err, sizeof(err)), -ENOENT);
	ops->ops->free(ops);
	fw_fleet_free(a);
}

/*
 * A session replaced inside connect() without the state ever showing LOST (the
 * ZooKeeper store gives up a handle down for two session timeouts and opens
 * another): the old session's liveness record is gone, and the registry makes
 * it again under the new one. Found by the nemesis (issue 48): a node renewed
 * for 64 s with no liveness record after the ensemble restarted, so a twin of
 * its identity started and an unforced release of its worker IDs was not
 * refused.
 */
static void test_session_replaced_alive_again(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	struct fw_fleet_store *ops = memsrv_client(M);
	struct fw_fleet_list l;
	char err[512];
	memsrv_replace_session(M);
	uint64_t r = status(a).renewals;
	WAIT_FOR(status(a).renewals >= r + 3, 3000);
	assert_true(status(a).renewals >= r + 3);
	assert_int_equal(fw_fleet_list_store(ops, "/t", 100, &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].owner, "a");
	assert_true(l.v[0].alive); /* made again under the new session */
	fw_fleet_list_free(&l);
	/* and so an unforced release of its worker ID is refused */
	assert_int_equal(fw_fleet_release_store(ops, "/t", 0, 0, 100, err, sizeof(err)), -EBUSY);
	ops->ops->free(ops);
	fw_fleet_free(a);
}

/* The store down: renewals fail with backoff, the confirmed lease stays, then resume. */
static void test_store_down(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	memsrv_down(M, true);
	ms_sleep(500);
	struct fw_fleet_status st = status(a);
	assert_true(st.renew_failures >= 1 && st.renew_failures <= 500 / (RENEW_MS * 3 / 4) + 1);
	assert_false(st.connected);
	struct fw_fleet_slot s = slot(a, 0);
	assert_int_equal(s.worker, 0);
	uint64_t r = st.renewals;
	memsrv_down(M, false);
	WAIT_FOR(status(a).renewals > r, 3000);
	assert_true(status(a).renewals > r);
	assert_true(slot(a, 0).lease_ms >= s.lease_ms);
	fw_fleet_free(a);
}

/* The store down at start: the cache's confirmed leases; without it, NONE. */
static void test_cache_start(void **state)
{
	(void)state;
	char cache[256], err[2048];
	struct fw_fleet_config c;
	bool cached = true;
	snprintf(cache, sizeof(cache), "/tmp/fwt-fleet-recipe-cache.%d", (int)getpid());
	cfg_for(&c, "a", cache);
	c.state_stamp = "S";
	struct fw_fleet *a = start_cfg(&c, 2, 0, err, sizeof(err));
	struct fw_fleet_slot s0 = slot(a, 0), s1 = slot(a, 1);
	fw_fleet_free(a);
	memsrv_down(M, true);
	assert_int_equal(fw_fleet_create_store(&c, 2, memsrv_client(M), &a, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(a, &cached, err, sizeof(err)), 0);
	assert_true(cached);
	assert_int_equal(slot(a, 0).source, FW_FLEET_SRC_CACHE);
	assert_int_equal(slot(a, 0).worker, s0.worker);
	assert_int_equal(slot(a, 1).worker, s1.worker);
	assert_true(slot(a, 0).lease_ms >= s0.lease_ms);
	assert_true(status(a).started_from_cache);
	/* back: the cached claim is renewed as ours (its version may have moved) */
	memsrv_down(M, false);
	WAIT_FOR(slot(a, 0).source == FW_FLEET_SRC_STORE, 3000);
	assert_int_equal(slot(a, 0).source, FW_FLEET_SRC_STORE);
	assert_int_equal(status(a).lost, 0);
	fw_fleet_free(a);
	unlink(cache);
	memsrv_down(M, true);
	cfg_for(&c, "a", "");
	assert_int_equal(fw_fleet_create_store(&c, 2, memsrv_client(M), &a, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(a, &cached, err, sizeof(err)), 0);
	assert_false(cached);
	assert_int_equal(slot(a, 0).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(slot(a, 0).lease_ms, 0);
	fw_fleet_free(a);
}

/*
 * Renewals wait on CLOCK_MONOTONIC: with the wall clock an hour ahead of
 * the kernel's (a backward step of 1 h just happened), renewals still come
 * every renew_ms. A wait on CLOCK_REALTIME would sleep for the hour.
 */
static void test_wall_step_does_not_delay_renewal(void **state)
{
	(void)state;
	struct fw_fleet *a = start("a", 1, 0);
	atomic_store(&wall_shift_ms, 3600 * 1000);
	uint64_t r = status(a).renewals;
	ms_sleep(RENEW_MS * 2); /* the wait in progress ends */
	r = status(a).renewals;
	/* at least 2 within 20 renew_ms (a loaded machine is slow, never an hour slow) */
	uint64_t got = 0;
	for (int i = 0; i < 20 && got < 2; i++) {
		ms_sleep(RENEW_MS);
		got = status(a).renewals - r;
	}
	atomic_store(&wall_shift_ms, 0);
	if (got < 2)
		fail_msg("%llu renewals in %u ms with renew_ms %u after the wall clock stepped",
			 (unsigned long long)got, RENEW_MS * 20, RENEW_MS);
	fw_fleet_free(a);
}

/*
 * Issue 48, case 5: a release goes to the store only once the cache that no
 * longer offers the ID is durable. With the cache unwritable (its temp
 * file's name taken by a directory), a backstep swap retires worker 0: the
 * store keeps it leased to "a" (so another node cannot claim it while the
 * stale cache on disk still offers it to a restart from the cache), until
 * the cache is written; then it is released, and a restart from the cache
 * with the store down serves only the new ID.
 */
static void test_release_waits_for_cache(void **state)
{
	(void)state;
	char tmp[160], err[2048];
	const char *cache = cache_path();
	snprintf(tmp, sizeof(tmp), "%s.tmp", cache);
	put(2, "x", layout_now() + 100 * LEASE_MS, 0);
	put(3, "y", layout_now() + 100 * LEASE_MS, 0);
	struct fw_fleet *a = start_state("a", 1, 0, cache, "S");
	assert_int_equal(slot(a, 0).worker, 0);
	assert_int_equal(mkdir(tmp, 0700), 0); /* every cache write fails from now on */
	assert_int_equal(fw_fleet_replace_all(a), 0);
	WAIT_FOR(slot(a, 0).worker == 1, 2000);
	assert_int_equal(slot(a, 0).worker, 1);
	assert_int_equal(fw_fleet_retire(a, 0, layout_now()), 0);
	ms_sleep(5 * RENEW_MS);
	/* the stale cache on disk still names worker 0 for a start from the cache */
	struct fw_fleet_held on_disk[2] = {{.worker = FW_FLEET_WORKER_NONE},
					   {.worker = FW_FLEET_WORKER_NONE}};
	struct fw_fleet_cache_of of = {"/t", "a", {0}, "S"};
	struct fw_fleet_config c;
	cfg_for(&c, "a", cache);
	of.layout = c.layout;
	assert_int_equal(fw_fleet_cache_read(cache, &of, NULL, on_disk, 2), 1);
	assert_int_equal(on_disk[0].worker, 0);
	if (status(a).releases != 0 || strcmp(rec(0).owner, "a") != 0)
		fail_msg("worker 0 released (owner '%s') while the cache that offers it could "
			 "not be rewritten",
			 rec(0).owner);
	/* so another node cannot claim it meanwhile */
	struct fw_fleet *b = NULL;
	cfg_for(&c, "b", "");
	assert_int_equal(fw_fleet_create_store(&c, 1, memsrv_client(M), &b, err, sizeof(err)), 0);
	int rc = fw_fleet_start(b, NULL, err, sizeof(err));
	if (rc == 0)
		assert_int_not_equal(slot(b, 0).worker, 0);
	else
		assert_int_equal(rc, FW_EFLEET_FULL);
	fw_fleet_free(b);
	/* the cache writable again: written, then released */
	assert_int_equal(rmdir(tmp), 0);
	WAIT_FOR(status(a).releases == 1, 3000);
	assert_int_equal(status(a).releases, 1);
	assert_string_equal(rec(0).owner, "");
	on_disk[0].worker = on_disk[1].worker = FW_FLEET_WORKER_NONE;
	assert_int_equal(fw_fleet_cache_read(cache, &of, NULL, on_disk, 2), 1);
	assert_int_equal(on_disk[0].worker, 1);
	fw_fleet_free(a);
	/* a restart from the cache with the store down serves the new ID only */
	memsrv_down(M, true);
	bool cached = false;
	cfg_for(&c, "a", cache);
	c.state_stamp = "S";
	assert_int_equal(fw_fleet_create_store(&c, 1, memsrv_client(M), &a, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(a, &cached, err, sizeof(err)), 0);
	assert_true(cached);
	assert_int_equal(slot(a, 0).worker, 1);
	fw_fleet_free(a);
}

/* the default [id] layout, as a responder's mark records it */
static const struct fw_mark_layout test_mark_layout = {
	.epoch_ms = 1767225600000ULL, .worker_bits = 10, .sequence_bits = 12};

static const char *mark_path(void)
{
	static char p[128];
	snprintf(p, sizeof(p), "/tmp/fwt-fleet-recipe-mark.%d", (int)getpid());
	return p;
}

/* A start of "a" on state "S" with the cache and the mark file; its take-backs. */
static uint64_t takebacks_with_mark(bool *cached)
{
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL;
	char err[2048];
	cfg_for(&c, "a", cache_path());
	c.state_stamp = "S";
	c.mark_file = mark_path();
	assert_int_equal(fw_fleet_create_store(&c, 2, memsrv_client(M), &a, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(a, cached, err, sizeof(err)), 0);
	uint64_t n = status(a).takebacks;
	if (*cached)
		n = slot(a, 0).worker == 2 || slot(a, 1).worker == 2 ? 1 : 0;
	fw_fleet_free(a);
	return n;
}

/* The cache a previous run left beside mark @mark (FW_FLEET_CACHE_NO_MARK: a v2 file). */
static void prove_at_mark(uint64_t mark)
{
	struct fw_fleet_config c;
	struct fw_fleet_held h[2] = {
		{.worker = 2, .version = 1, .lease = layout_now() + 10 * LEASE_MS, .token = 7},
		{.worker = 3, .version = 1, .lease = layout_now() + 10 * LEASE_MS, .token = 7}};
	cfg_for(&c, "a", cache_path());
	if (mark != FW_FLEET_CACHE_NO_MARK) {
		struct fw_fleet_cache_of of = {"/t", "a", c.layout, "S"};
		assert_int_equal(fw_fleet_cache_write(cache_path(), &of, mark, h, 2), 0);
		return;
	}
	char text[1024];
	snprintf(text, sizeof(text),
		 "flakewire-fleet-cache v2\nroot=/t\nidentity=a\nlayout=%llu/0/2/12\nstate=S\n"
		 "slot=0 worker=2 version=1 lease_until=%llu floor=5 token=0000000000000007\n"
		 "slot=1 worker=3 version=1 lease_until=%llu floor=6 token=0000000000000007\n",
		 (unsigned long long)c.layout.epoch_ms, (unsigned long long)h[0].lease,
		 (unsigned long long)h[1].lease);
	FILE *f = fopen(cache_path(), "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/*
 * Issue 48, case 4 (the fleet's part): a take-back needs a mark at or above
 * the one the cache recorded. The cache says mark M; a mark below M (set by
 * hand to the wall clock), or none (deleted), proves nothing: no take-back,
 * and no start from the cache with the store down. At or above M: taken
 * back. A v2 cache (no mark recorded) is read as before and rewritten as v3.
 */
static void test_take_back_needs_mark(void **state)
{
	(void)state;
	const uint64_t mk = real_ms() + 5000;
	bool cached = false;
	struct {
		const char *what;
		uint64_t mark; /* 0: no mark file */
		uint64_t want;
	} cases[] = {
		{"a mark below the recorded one", mk - 1, 0},
		{"no mark", 0, 0},
		{"the recorded mark", mk, 2},
		{"a mark above it", mk + 60000, 2},
	};
	for (size_t k = 0; k < FW_ARRAY_SIZE(cases); k++) {
		put(2, "a", layout_now() + 10 * LEASE_MS, 5);
		put(3, "a", layout_now() + 10 * LEASE_MS, 6);
		put(0, "", 0, 0);
		put(1, "", 0, 0);
		prove_at_mark(mk);
		unlink(mark_path());
		if (cases[k].mark)
			assert_int_equal(
				fw_mark_write(mark_path(), cases[k].mark, &test_mark_layout), 0);
		uint64_t got = takebacks_with_mark(&cached);
		assert_false(cached);
		if (got != cases[k].want)
			fail_msg("%s: %llu take-backs, want %llu", cases[k].what,
				 (unsigned long long)got, (unsigned long long)cases[k].want);
	}
	/* the store down: a mark below the recorded one starts from nothing */
	put(2, "a", layout_now() + 10 * LEASE_MS, 5);
	put(3, "a", layout_now() + 10 * LEASE_MS, 6);
	memsrv_down(M, true);
	prove_at_mark(mk);
	assert_int_equal(fw_mark_write(mark_path(), mk - 1, &test_mark_layout), 0);
	assert_int_equal(takebacks_with_mark(&cached), 0);
	assert_false(cached);
	prove_at_mark(mk);
	assert_int_equal(fw_mark_write(mark_path(), mk, &test_mark_layout), 0);
	assert_int_equal(takebacks_with_mark(&cached), 1);
	assert_true(cached);
	memsrv_down(M, false);
	/* a v2 cache: taken back as before (no mark to compare), rewritten as v3 */
	prove_at_mark(FW_FLEET_CACHE_NO_MARK);
	unlink(mark_path());
	assert_int_equal(takebacks_with_mark(&cached), 2);
	char line[64] = "";
	FILE *f = fopen(cache_path(), "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_string_equal(line, "flakewire-fleet-cache v3\n");
	unlink(mark_path());
}

/*
 * Claim order (issue 50): a released ID that can issue now comes before a
 * never-claimed one (lowest worker ID first), so a graceful stop's IDs are
 * used again at once; one whose floor is still ahead comes after them.
 */
static void test_free_used_before_new(void **state)
{
	(void)state;
	uint64_t now = layout_now();
	put(3, "", now - 500, now - 500);
	put(2, "", now - 900, now - 900);
	struct fw_fleet *b = start("b", 1, 0);
	assert_int_equal(slot(b, 0).worker, 2); /* used before, lowest worker ID */
	fw_fleet_free(b);
	memsrv_free(M);
	new_store_with_root();
	put(3, "", now + 60000, now + 60000); /* released with a floor a minute ahead */
	b = start("b", 1, 0);
	assert_int_equal(slot(b, 0).worker, 0); /* a new one issues at once */
	fw_fleet_free(b);
}

/*
 * The root's census from the first claim (issue 50): free = never claimed,
 * released or expired; stranded = leased to an owner with no live session.
 */
static void test_census(void **state)
{
	(void)state;
	uint64_t now = layout_now();
	put(0, "x", now + 10 * LEASE_MS, 0); /* x has no session: stranded */
	put(1, "y", now + 20 * LEASE_MS, 0); /* y is alive */
	memsrv_alive_other(M, "y");
	put(2, "", now - 500, now - 500); /* released */
	struct fw_fleet *a = start("a", 1, 0);
	assert_int_equal(slot(a, 0).worker, 2);
	struct fw_fleet_status st = status(a);
	assert_true(st.census_valid);
	assert_int_equal(st.total_ids, 4);
	assert_int_equal(st.free_ids, 1); /* 3, never claimed */
	assert_int_equal(st.stranded_ids, 1);
	assert_int_equal(st.next_stranded_unix, now + 10 * LEASE_MS + EPOCH);
	fw_fleet_free(a);
	/* too few (a stopped without releasing: its ID is stranded too): the refusal says how
	 * many are stranded and when the first is back */
	char err[2048];
	struct fw_fleet_config c;
	cfg_for(&c, "b", "");
	assert_null(start_cfg(&c, 2, FW_EFLEET_FULL, err, sizeof(err)));
	assert_non_null(strstr(
		err,
		"1 free, 2 stranded (leased to owners with no live session), the first back at"));
}

/* "a" with 2 slots on state "S", its cache and a final mark @mark (unix ms). */
static struct fw_fleet *start_marked(uint64_t mark)
{
	struct fw_fleet_config c;
	char err[2048];
	unlink(cache_path());
	unlink(mark_path());
	cfg_for(&c, "a", cache_path());
	c.state_stamp = "S";
	c.mark_file = mark_path();
	c.renew_ms = LEASE_MS / 2; /* no renewal before the stop: the faults hit the releases */
	struct fw_fleet *a = start_cfg(&c, 2, 0, err, sizeof(err));
	assert_int_equal(fw_mark_write(mark_path(), mark, &test_mark_layout), 0);
	return a;
}

/* Whether the cache file names worker @w. */
static bool cache_names(int32_t w)
{
	char line[512], want[32];
	bool found = false;
	snprintf(want, sizeof(want), " worker=%d ", w);
	FILE *f = fopen(cache_path(), "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/* A restart of "a" on state "S" (the store as it is): the worker IDs it serves. */
static void restart_marked(int32_t *w0, int32_t *w1, bool *cached)
{
	struct fw_fleet_config c;
	char err[2048];
	cfg_for(&c, "a", cache_path());
	c.state_stamp = "S";
	c.mark_file = mark_path();
	struct fw_fleet *a = NULL;
	assert_int_equal(fw_fleet_create_store(&c, 2, memsrv_client(M), &a, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(a, cached, err, sizeof(err)), 0);
	*w0 = slot(a, 0).worker;
	*w1 = slot(a, 1).worker;
	fw_fleet_free(a);
}

/* A graceful stop gives its IDs back above the final mark; another node takes them at once. */
static void test_stop_release(void **state)
{
	(void)state;
	uint64_t mk = real_ms() - 10;
	struct fw_fleet *a = start_marked(mk);
	assert_int_equal(slot(a, 0).worker, 0);
	assert_int_equal(slot(a, 1).worker, 1);
	uint64_t t0 = real_ms();
	assert_int_equal(fw_fleet_stop_release(a, 5000), 2);
	assert_true(real_ms() - t0 < 5000);
	for (uint32_t w = 0; w < 2; w++) {
		assert_string_equal(rec(w).owner, "");
		assert_true(rec(w).floor >= mk - EPOCH);
		assert_true(rec(w).lease == rec(w).floor);
		assert_false(cache_names((int32_t)w));
	}
	assert_int_equal(status(a).releases, 2);
	fw_fleet_free(a);
	struct fw_fleet *b = start("b", 2, 0);
	assert_int_equal(slot(b, 0).worker, 0);
	assert_int_equal(slot(b, 1).worker, 1);
	assert_true(slot(b, 0).floor_ms >= mk - EPOCH);
	fw_fleet_free(b);
}

/*
 * A release whose reply is lost (the store applied it): not confirmed, so
 * counted as leased, and the cache no longer names it either way: a restart
 * with the store down serves neither ID (one is free in the store: another
 * node may hold it by then).
 */
static void test_stop_release_lost_reply(void **state)
{
	(void)state;
	uint64_t mk = real_ms() - 10;
	struct fw_fleet *a = start_marked(mk);
	memsrv_lose_replies(M, 1);
	assert_int_equal(fw_fleet_stop_release(a, 5000), FW_EFLEET_STORE);
	assert_string_equal(rec(0).owner, ""); /* applied, reply lost */
	assert_string_equal(rec(1).owner, "");
	assert_false(cache_names(0));
	assert_false(cache_names(1));
	fw_fleet_free(a);
	struct fw_fleet *b = start("b", 1, 0); /* another node takes worker 0 */
	assert_int_equal(slot(b, 0).worker, 0);
	memsrv_down(M, true);
	int32_t w0, w1;
	bool cached = true;
	restart_marked(&w0, &w1, &cached);
	assert_false(cached);
	assert_int_equal(w0, FW_FLEET_WORKER_NONE);
	assert_int_equal(w1, FW_FLEET_WORKER_NONE);
	memsrv_down(M, false);
	fw_fleet_free(b);
}

/* A release refused by the store: that ID stays leased to "a", never served again by its state. */
static void test_stop_release_refused(void **state)
{
	(void)state;
	uint64_t mk = real_ms() - 10;
	struct fw_fleet *a = start_marked(mk);
	memsrv_fail_worker(M, 0, -EACCES);
	assert_int_equal(fw_fleet_stop_release(a, 5000), FW_EFLEET_STORE);
	memsrv_fail_worker(M, 0, 0);
	assert_string_equal(rec(0).owner, "a");
	assert_string_equal(rec(1).owner, "");
	assert_false(cache_names(0));
	fw_fleet_free(a);
	memsrv_down(M, true);
	int32_t w0, w1;
	bool cached = true;
	restart_marked(&w0, &w1, &cached);
	assert_int_equal(w0, FW_FLEET_WORKER_NONE); /* nothing from the cache */
	assert_int_equal(w1, FW_FLEET_WORKER_NONE);
	memsrv_down(M, false);
	struct fw_fleet *b = start("b", 2, 0); /* b: 1 (released) and 2 (new); 0 stays a's */
	assert_true(slot(b, 0).worker != 0 && slot(b, 1).worker != 0);
	fw_fleet_free(b);
}

/*
 * The store down at the stop: nothing is sent, the IDs stay leased and in
 * the cache, and the next start on the state takes them back.
 */
static void test_stop_release_store_down(void **state)
{
	(void)state;
	uint64_t mk = real_ms() - 10;
	struct fw_fleet *a = start_marked(mk);
	memsrv_down(M, true);
	uint64_t t0 = real_ms();
	assert_int_equal(fw_fleet_stop_release(a, 5000), -ENOTCONN);
	assert_true(real_ms() - t0 < 5000);
	fw_fleet_free(a);
	memsrv_down(M, false);
	assert_string_equal(rec(0).owner, "a");
	assert_string_equal(rec(1).owner, "a");
	assert_true(cache_names(0) && cache_names(1));
	int32_t w0, w1;
	bool cached = true;
	restart_marked(&w0, &w1, &cached);
	assert_int_equal(w0, 0); /* taken back */
	assert_int_equal(w1, 1);
}

/*
 * Issue 50: a write the store sent again (etcd's client resends a request
 * whose reply did not come within a try's timeout) after its first try
 * landed answers "exists" (create) or "version moved" (CAS). Each claim
 * here landed; the claim must be recognised by this run's token, not
 * counted as another's, so no ID is left leased to a run that never serves
 * it (before the fix: workers 0 and 1 stayed leased to "a" for lease_ms
 * while it served 2 and 3). Renewal and the stop's release sent again
 * end as if their first reply had come.
 */
static void test_claim_sent_again(void **state)
{
	(void)state;
	uint64_t mk = real_ms() - 10;
	memsrv_resend_writes(M, 2); /* both claims (creates) of the start */
	struct fw_fleet *a = start_marked(mk);
	assert_int_equal(slot(a, 0).worker, 0);
	assert_int_equal(slot(a, 1).worker, 1);
	assert_false(memsrv_get(M, 2, &(struct fw_fleet_rec){0}, NULL)); /* no third record */
	struct fw_fleet_status st = status(a);
	assert_int_equal(st.free_ids, 2); /* 2 and 3 */
	assert_int_equal(st.stranded_ids, 0);
	assert_int_equal(st.claims, 2);
	/* a renewal sent again: adopted by its token, not lost */
	uint64_t renewals = st.renewals;
	memsrv_resend_writes(M, 1);
	WAIT_FOR(status(a).renewals >= renewals + 2, 5000);
	assert_true(status(a).renewals >= renewals + 2);
	assert_int_equal(status(a).lost, 0);
	assert_int_equal(slot(a, 0).worker, 0);
	/* the stop's release sent again: done, both IDs free */
	memsrv_resend_writes(M, 1);
	assert_int_equal(fw_fleet_stop_release(a, 5000), 2);
	assert_string_equal(rec(0).owner, "");
	assert_string_equal(rec(1).owner, "");
	fw_fleet_free(a);
	/* nothing stranded: another node gets all four */
	struct fw_fleet *b = start("b", 4, 0);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(slot(b, i).worker, (int32_t)i);
	assert_int_equal(status(b).free_ids, 0);
	assert_int_equal(status(b).stranded_ids, 0);
	fw_fleet_free(b);
}

/* The same for a claim by CAS (a released ID): the record as written is ours. */
static void test_claim_cas_sent_again(void **state)
{
	(void)state;
	uint64_t now = layout_now();
	put(0, "", now - 500, now - 500); /* released */
	memsrv_resend_writes(M, 1);
	struct fw_fleet *a = start("a", 1, 0);
	assert_int_equal(slot(a, 0).worker, 0);
	assert_int_equal(slot(a, 0).floor_ms, now - 500);
	assert_string_equal(rec(0).owner, "a");
	assert_true(rec(0).lease == slot(a, 0).lease_ms);
	assert_false(memsrv_get(M, 1, &(struct fw_fleet_rec){0}, NULL));
	assert_int_equal(status(a).free_ids, 3);
	assert_int_equal(status(a).stranded_ids, 0);
	fw_fleet_free(a);
}

/*
 * A node waiting for free IDs (start_when_full) holds none: its stop leaves
 * the previous run's cache as it was, so a later start on the state can
 * still take those IDs back (a stop that wrote the cache empty stranded them).
 */
static void test_waiting_keeps_cache(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	const int32_t w3 = 3;
	const uint64_t tok = 99;
	for (uint32_t w = 0; w < 3; w++)
		put(w, "busy", layout_now() + 10 * LEASE_MS, 0);
	memsrv_alive_other(M, "busy");
	prove(cache_path(), "a", "S", &w3, &tok, 1); /* the previous run held 3 */
	struct fw_fleet_rec r3 = {.token = tok, .lease = layout_now() + 10 * LEASE_MS};
	snprintf(r3.owner, sizeof(r3.owner), "a");
	memsrv_put(M, 3, &r3);
	cfg_for(&c, "a", cache_path());
	c.state_stamp = "S";
	c.start_when_full = true;
	struct fw_fleet *a = start_cfg(&c, 2, 0, err, sizeof(err)); /* 3 back, one short */
	assert_int_equal(slot(a, 0).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(slot(a, 1).worker, FW_FLEET_WORKER_NONE);
	ms_sleep(3 * RENEW_MS);
	fw_fleet_free(a);
	assert_true(cache_names(3));
	struct fw_fleet *b = start_state("a", 1, 0, cache_path(), "S");
	assert_int_equal(slot(b, 0).worker, 3); /* taken back */
	assert_int_equal(status(b).takebacks, 1);
	fw_fleet_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_new),
		T(test_take_back),
		T(test_take_back_needs_proof),
		T(test_lost_cache_serves_at_default_lease),
		T(test_unproven_waits_for_lease_end),
		T(test_cache_adopts_only_its_token),
		T(test_release_error_kept),
		T(test_release_after_takeover_done),
		T(test_retiring_table_full_blocks),
		T(test_cache_write_failure_logged_once),
		T(test_free_released),
		T(test_expired_with_floor),
		T(test_expired_by_store_time),
		T(test_exhausted),
		T(test_start_when_full),
		T(test_identity_in_use),
		T(test_restart_replaces_own_liveness),
		T(test_liveness_of_others_kept),
		T(test_layout_mismatch),
		T(test_lost_reply_token),
		T(test_lost_claim_reply),
		T(test_renew_after_takeover),
		T(test_lost_claims_at_once),
		T(test_released_while_held),
		T(test_retire_floor),
		T(test_replace_all_or_none),
		T(test_replacement_never_retired),
		T(test_retiring_never_claimed),
		T(test_full_fleet_write_rate),
		T(test_session_dropped),
		T(test_session_replaced_alive_again),
		T(test_store_down),
		T(test_cache_start),
		T(test_wall_step_does_not_delay_renewal),
		T(test_release_waits_for_cache),
		T(test_take_back_needs_mark),
		T(test_free_used_before_new),
		T(test_census),
		T(test_stop_release),
		T(test_stop_release_lost_reply),
		T(test_stop_release_refused),
		T(test_stop_release_store_down),
		T(test_claim_sent_again),
		T(test_claim_cas_sent_again),
		T(test_waiting_keeps_cache),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

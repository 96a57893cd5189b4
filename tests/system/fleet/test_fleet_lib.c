/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/fleet against a real ZooKeeper ensemble (started by test_fleet_lib.sh,
 * connect string in FW_ZK): claim, take-back on restart, exhaustion with its
 * message, CAS takeover of an expired lease with the floor, renewal failing
 * after a release (the old owner keeps its limit and moves to another ID),
 * new_worker replacement and retirement, the cache file with ZooKeeper
 * down, and the operators' list/release. Layout: 2 worker bits (4 IDs).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_fleet.h"

static const char *zk;
static char root[128];
static char cache_a[256];

#define LEASE_MS 3000

static void log_cb(void *arg, enum fw_log_level lvl, const char *msg)
{
	fprintf(stderr, "  [%s %d] %s\n", (const char *)arg, (int)lvl, msg);
}

static void cfg_for(struct fw_fleet_config *c, const char *identity, const char *cache)
{
	fw_fleet_config_default(c);
	c->connect = zk;
	c->root = root;
	c->identity = identity;
	c->cache_file = cache;
	/* a node with a cache has a state of its own (a responder's locked state
	 * directory): the same stamp on every start of this process, as a
	 * restart on the same state has */
	c->state_stamp = cache && cache[0] ? "fleet-lib:state" : NULL;
	c->layout.dc_bits = 1; /* two roots in one store: datacenter values 0 and 1 */
	c->layout.worker_bits = 2;
	c->layout.seq_bits = 12;
	c->layout.time_bits = (uint8_t)(63 - 1 - 2 - 12);
	c->lease_ms = LEASE_MS;
	c->renew_ms = 500;
	c->session_timeout_ms = 4000;
	c->start_wait_ms = 3000;
	c->log = (struct fw_log){log_cb, (void *)identity};
}

/* Creates and starts a fleet; its start's status in *rc, NULL unless 0. */
static struct fw_fleet *try_start(const char *identity, uint32_t n, const char *cache, int *rc,
				  char *err, size_t errlen, bool *cached)
{
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	cfg_for(&c, identity, cache);
	assert_int_equal(fw_fleet_create(&c, n, &f, err, errlen), 0);
	*rc = fw_fleet_start(f, cached, err, errlen);
	if (*rc != 0) {
		fw_fleet_free(f);
		return NULL;
	}
	return f;
}

static struct fw_fleet *start(const char *identity, uint32_t n, const char *cache, int want_rc,
			      char *err, size_t errlen, bool *cached)
{
	int rc;
	struct fw_fleet *f = try_start(identity, n, cache, &rc, err, errlen, cached);
	if (rc != want_rc)
		fprintf(stderr, "start %s: %d (%s): %s\n", identity, rc, fw_strerror(rc), err);
	assert_int_equal(rc, want_rc);
	return f;
}

static uint64_t layout_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 - 1767225600000ull;
}

static struct fw_fleet_slot slot(struct fw_fleet *f, uint32_t i)
{
	struct fw_fleet_slot s;
	assert_int_equal(fw_fleet_slot(f, i, &s), 0);
	return s;
}

static struct fw_fleet *A, *B;
static int32_t a_w[2], b_w[2];

/* Two nodes of 2 slots: 4 distinct worker IDs, each with a lease ahead of now. */
static void test_claim(void **state)
{
	(void)state;
	char err[2048];
	A = start("node-a", 2, cache_a, 0, err, sizeof(err), NULL);
	B = start("node-b", 2, "", 0, err, sizeof(err), NULL);
	int seen = 0;
	for (uint32_t i = 0; i < 2; i++) {
		struct fw_fleet_slot a = slot(A, i), b = slot(B, i);
		assert_int_equal(a.source, FW_FLEET_SRC_STORE);
		assert_true(a.worker >= 0 && a.worker < 4 && b.worker >= 0 && b.worker < 4);
		assert_true(a.lease_ms > layout_now() + LEASE_MS / 2);
		assert_false(seen & (1 << a.worker));
		seen |= 1 << a.worker;
		assert_false(seen & (1 << b.worker));
		seen |= 1 << b.worker;
		a_w[i] = a.worker;
		b_w[i] = b.worker;
	}
	assert_int_equal(seen, 15);
}

/* Leases are renewed: after 2 renew intervals lease_until moved on. */
static void test_renew(void **state)
{
	(void)state;
	uint64_t before = slot(A, 0).lease_ms;
	usleep(1300 * 1000);
	struct fw_fleet_slot s = slot(A, 0);
	assert_true(s.lease_ms > before);
	assert_int_equal(s.worker, a_w[0]);
	struct fw_fleet_status st;
	fw_fleet_status(A, &st);
	assert_true(st.renewals >= 2);
	assert_true(st.connected);
	assert_true(st.offset_valid);
	assert_true(st.offset_ms < 1000 && st.offset_ms > -1000);
}

/* A fifth claimant refuses, naming the owners and their lease ends. */
static void test_exhausted(void **state)
{
	(void)state;
	char err[2048] = "";
	assert_null(start("node-c", 1, "", FW_EFLEET_FULL, err, sizeof(err), NULL));
	assert_non_null(strstr(err, "needs 1 worker ID"));
	assert_non_null(strstr(err, "by node-a until 20"));
	assert_non_null(strstr(err, "by node-b until 20"));
	assert_non_null(strstr(err, "4 of 4"));
}

/* A clean stop keeps the leases: the same identity takes its IDs back. */
static void test_restart_takes_back(void **state)
{
	(void)state;
	char err[2048];
	fw_fleet_free(A);
	A = start("node-a", 2, cache_a, 0, err, sizeof(err), NULL);
	int got = (1 << slot(A, 0).worker) | (1 << slot(A, 1).worker);
	assert_int_equal(got, (1 << a_w[0]) | (1 << a_w[1]));
	struct fw_fleet_status st;
	fw_fleet_status(A, &st);
	assert_int_equal(st.takebacks, 2);
}

/* Another live process with the same identity is refused. */
static void test_identity_in_use(void **state)
{
	(void)state;
	char err[2048] = "";
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	cfg_for(&c, "node-a", "");
	c.session_timeout_ms = 1000;
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(f, NULL, err, sizeof(err)), FW_EFLEET_IDENTITY);
	assert_non_null(strstr(err, "in use by another live"));
	fw_fleet_free(f);
}

/* The operators' view: 4 workers, owners, alive sessions. */
static void test_list(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_list l;
	assert_int_equal(fw_fleet_list_read(zk, root, 3000, &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.layout.worker_bits, 2);
	for (uint32_t i = 0; i < l.n; i++) {
		assert_int_equal(l.v[i].worker, i);
		assert_true(!strcmp(l.v[i].owner, "node-a") || !strcmp(l.v[i].owner, "node-b"));
		assert_true(l.v[i].alive);
		assert_true(l.v[i].lease_ms + 1767225600000ull > l.server_unix);
	}
	fw_fleet_list_free(&l);
	assert_int_equal(fw_fleet_list_read(zk, "/nothing/here", 3000, &l, err, sizeof(err)),
			 -ENOENT);
}

/*
 * Takeover: B stops (no more renewals); once its leases expired by
 * ZooKeeper's time, C takes them over with floor = B's lease_until.
 */
static void test_takeover(void **state)
{
	(void)state;
	char err[2048];
	uint64_t b_lease[2] = {slot(B, 0).lease_ms, slot(B, 1).lease_ms};
	fw_fleet_free(B);
	B = NULL;
	/* Before expiry: nothing to take. */
	assert_null(start("node-c", 2, "", FW_EFLEET_FULL, err, sizeof(err), NULL));
	while (layout_now() <= FW_MAX(b_lease[0], b_lease[1]) + 300)
		usleep(100 * 1000);
	/*
	 * b_lease is B's own view, read before the free: a renewal B had in
	 * flight then can still have reached the store (CI saw node-c refused
	 * 300 ms past it, the store holding B's lease 3 s later). Such a lease
	 * is at most one renewal later: node-c retries within LEASE_MS, and
	 * every check below still holds against b_lease.
	 */
	uint64_t give_up = layout_now() + LEASE_MS + 1000;
	struct fw_fleet *C;
	int rc;
	while (!(C = try_start("node-c", 2, "", &rc, err, sizeof(err), NULL))) {
		if (rc != FW_EFLEET_FULL || layout_now() > give_up)
			fail_msg("start node-c after B's lease: %d (%s): %s", rc, fw_strerror(rc),
				 err);
		usleep(200 * 1000);
	}
	for (uint32_t i = 0; i < 2; i++) {
		struct fw_fleet_slot s = slot(C, i);
		int k = s.worker == b_w[0] ? 0 : 1;
		assert_true(s.worker == b_w[k]);
		assert_true(s.floor_ms >= b_lease[k]);
		assert_true(s.lease_ms > s.floor_ms);
	}
	struct fw_fleet_status st;
	fw_fleet_status(C, &st);
	assert_int_equal(st.takeovers, 2);
	B = C; /* node-c now holds B's IDs */
	b_w[0] = slot(B, 0).worker;
	b_w[1] = slot(B, 1).worker;
}

/*
 * A release by an operator while A runs: A's next renewal fails, the slot
 * is marked lost with its old lease (its final limit), and A claims another
 * free ID when one exists: here the one it lost, now free with the floor
 * above the old lease.
 */
static void test_renew_fails_after_release(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_slot s0 = slot(A, 1);
	/* A is alive: refused without --force (issue 38), forced here */
	assert_int_equal(fw_fleet_release(zk, root, (uint32_t)s0.worker, 0, 3000, err, sizeof(err)),
			 -EBUSY);
	assert_non_null(strstr(err, "alive"));
	assert_int_equal(fw_fleet_release(zk, root, (uint32_t)s0.worker, FW_FLEET_RELEASE_FORCE,
					  3000, err, sizeof(err)),
			 0);
	struct fw_fleet_status st;
	for (int t = 0; t < 50; t++) {
		fw_fleet_status(A, &st);
		if (st.lost >= 1 && slot(A, 1).gen != s0.gen)
			break;
		usleep(100 * 1000);
	}
	assert_int_equal(st.lost, 1);
	struct fw_fleet_slot s1 = slot(A, 1);
	assert_int_not_equal(s1.gen, s0.gen);
	assert_false(s1.lost);
	/* the only free ID is the released one: its floor is above the old lease */
	assert_int_equal(s1.worker, s0.worker);
	assert_true(s1.floor_ms >= s0.lease_ms);
}

/* new_worker: replace slot 0, retire the old ID at its last ms. */
static void test_replace_retire(void **state)
{
	(void)state;
	char err[2048];
	/* Free an ID for the replacement: stop B (node-c), release its IDs. */
	fw_fleet_free(B);
	B = NULL;
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			fw_fleet_release(zk, root, (uint32_t)b_w[i], 0, 3000, err, sizeof(err)), 0);
	struct fw_fleet_slot s0 = slot(A, 0);
	assert_int_equal(fw_fleet_replace(A, 0), 0);
	struct fw_fleet_slot s1 = s0;
	for (int t = 0; t < 50 && s1.gen == s0.gen; t++) {
		usleep(100 * 1000);
		s1 = slot(A, 0);
	}
	assert_int_not_equal(s1.worker, s0.worker);
	assert_int_not_equal(s1.worker, slot(A, 1).worker);
	uint64_t last = layout_now();
	assert_int_equal(fw_fleet_retire(A, s0.worker, last), 0);
	struct fw_fleet_list l;
	bool released = false;
	for (int t = 0; t < 50 && !released; t++) {
		usleep(100 * 1000);
		assert_int_equal(fw_fleet_list_read(zk, root, 3000, &l, err, sizeof(err)), 0);
		for (uint32_t i = 0; i < l.n; i++)
			if (l.v[i].worker == (uint32_t)s0.worker && !l.v[i].owner[0] &&
			    l.v[i].floor_ms >= last)
				released = true;
		fw_fleet_list_free(&l);
	}
	assert_true(released);
}

/* ZooKeeper unreachable at start: the cache gives the leases; without it, nothing. */
static void test_cache(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_slot a0 = slot(A, 0), a1 = slot(A, 1);
	fw_fleet_free(A); /* writes the cache */
	A = NULL;
	const char *saved = zk;
	zk = "127.0.0.1:1";
	bool cached = false;
	struct fw_fleet_config c;
	cfg_for(&c, "node-a", cache_a);
	c.start_wait_ms = 1000;
	struct fw_fleet *f = NULL;
	assert_int_equal(fw_fleet_create(&c, 2, &f, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(f, &cached, err, sizeof(err)), 0);
	assert_true(cached);
	struct fw_fleet_slot s0 = slot(f, 0), s1 = slot(f, 1);
	assert_int_equal(s0.source, FW_FLEET_SRC_CACHE);
	assert_int_equal(s0.worker, a0.worker);
	assert_int_equal(s1.worker, a1.worker);
	assert_true(s0.lease_ms >= a0.lease_ms && s0.lease_ms <= a0.lease_ms + LEASE_MS);
	fw_fleet_free(f);

	cfg_for(&c, "node-a", "");
	c.start_wait_ms = 1000;
	assert_int_equal(fw_fleet_create(&c, 2, &f, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(f, &cached, err, sizeof(err)), 0);
	assert_false(cached);
	assert_int_equal(slot(f, 0).worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(slot(f, 0).source, FW_FLEET_SRC_NONE);
	assert_int_equal(slot(f, 0).lease_ms, 0);
	fw_fleet_free(f);
	zk = saved;
}

static uint64_t ahead_clock(void *arg)
{
	(void)arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 5000;
}

/*
 * The clock check at renewal: a node whose clock is 5 s ahead of
 * ZooKeeper's sees offset_ms near +5000 and offset_over, and logs it.
 */
static void test_offset(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_fleet_status st;
	cfg_for(&c, "node-offset", "");
	c.root = "/fwtest/offset";
	c.datacenter = 1; /* main() made it with value 1 */
	c.now_ms = ahead_clock;
	c.max_offset_ms = 1000;
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(f, NULL, err, sizeof(err)), 0);
	for (int t = 0; t < 30; t++) {
		fw_fleet_status(f, &st);
		if (st.offset_valid)
			break;
		usleep(100 * 1000);
	}
	assert_true(st.offset_valid);
	assert_true(st.offset_over);
	assert_true(st.offset_ms > 4000 && st.offset_ms < 6000);
	fw_fleet_free(f);
}

/* Bad configuration is refused before any connection. */
static void test_config_errors(void **state)
{
	(void)state;
	char err[512];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	cfg_for(&c, "bad/identity", "");
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "identity 'bad/identity'"));
	cfg_for(&c, "ok", "");
	c.root = "relative";
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), -EINVAL);
	cfg_for(&c, "ok", "");
	assert_int_equal(fw_fleet_create(&c, 5, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "5 workers: out of range (1-4)"));
	cfg_for(&c, "ok", "");
	c.renew_ms = LEASE_MS;
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), -EINVAL);
}

/* Another layout on the same root is refused. */
static void test_layout_mismatch(void **state)
{
	(void)state;
	char err[2048];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	cfg_for(&c, "node-x", "");
	c.layout.worker_bits = 3;
	c.layout.time_bits = (uint8_t)(63 - 1 - 3 - 12);
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_start(f, NULL, err, sizeof(err)), FW_EFLEET_LAYOUT);
	assert_non_null(strstr(err, "worker_bits 2"));
	fw_fleet_free(f);
}

int main(void)
{
	zk = getenv("FW_ZK");
	const char *tmp = getenv("FW_TMP");
	if (zk == NULL || tmp == NULL) {
		fprintf(stderr, "FW_ZK and FW_TMP must be set (run test_fleet_lib.sh)\n");
		return 1;
	}
	snprintf(root, sizeof(root), "/fwtest/lib%d", (int)getpid());
	snprintf(cache_a, sizeof(cache_a), "%s/cache-a", tmp);
	{ /* the roots, as an operator makes them (flakectl fleet init): nodes never do */
		struct fw_fleet_config c;
		char err[1024];
		cfg_for(&c, "init", "");
		int a = fw_fleet_init(zk, root, &c.layout, 0, NULL, 10000, err, sizeof(err));
		int b = a < 0 ? a
			      : fw_fleet_init(zk, "/fwtest/offset", &c.layout, 1, NULL, 10000, err,
					      sizeof(err));
		if (a < 0 || b < 0) {
			fprintf(stderr, "fleet init: %s\n", err);
			return 1;
		}
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_layout_mismatch),
		cmocka_unit_test(test_renew),
		cmocka_unit_test(test_exhausted),
		cmocka_unit_test(test_restart_takes_back),
		cmocka_unit_test(test_identity_in_use),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_takeover),
		cmocka_unit_test(test_renew_fails_after_release),
		cmocka_unit_test(test_replace_retire),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_offset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

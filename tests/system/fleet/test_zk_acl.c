/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ZooKeeper with authentication and ACLs (issue 33), against a real server
 * (test_zk_acl.sh starts it; FW_ZK its connect string, FW_TMP a directory):
 *  - a registry with digest credentials creates the fleet's znodes writable
 *    by its principal only, readable by anyone;
 *  - a client without credentials, and one with other credentials, can
 *    neither change a worker record, nor delete it and create it again at
 *    floor 0, nor create another, nor change the root's ACL, nor the
 *    census the nodes share (issue 50): ZooKeeper itself refuses (ZNOAUTH);
 *    it can still read (flakectl fleet ls);
 *  - a registry with the wrong credentials refuses to start
 *    (FW_EFLEET_AUTH), with the right ones it takes its IDs back;
 *  - a fleet created with open ACLs is secured by fw_fleet_secure (the
 *    migration `flakectl fleet secure` runs), after which the same holds.
 * Today's code created every znode with ZOO_OPEN_ACL_UNSAFE: every refusal
 * below succeeded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define THREADED
#include <zookeeper/zookeeper.h>

#include "fw_err.h"
#include "fw_fleet.h"
#include "fw_fleet_rec.h"

static const char *ZK;

static void log_cb(void *arg, enum fw_log_level lvl, const char *msg)
{
	(void)arg;
	if (getenv("FW_TEST_VERBOSE") || lvl == FW_LOG_ERR)
		fprintf(stderr, "  [%d] %s\n", (int)lvl, msg);
}

static void cfg_for(struct fw_fleet_config *c, const char *root, const char *identity,
		    const char *auth)
{
	fw_fleet_config_default(c);
	c->connect = ZK;
	c->root = root;
	c->identity = identity;
	c->zk_auth = auth;
	c->layout.dc_bits = 1; /* two roots in one ensemble: datacenter values 0 and 1 */
	c->layout.worker_bits = 4;
	c->layout.time_bits = 63 - 1 - 4 - 12;
	c->datacenter = !strcmp(root, "/fwt-acl/open");
	c->lease_ms = 60000;
	c->renew_ms = 1000;
	c->session_timeout_ms = 4000;
	c->start_wait_ms = 5000;
	c->log.fn = log_cb;
}

static struct fw_fleet *start(const char *root, const char *identity, const char *auth, int want)
{
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	char err[2048] = "";
	cfg_for(&c, root, identity, auth);
	assert_int_equal(fw_fleet_create(&c, 1, &f, err, sizeof(err)), 0);
	int rc = fw_fleet_start(f, NULL, err, sizeof(err));
	if (rc != want)
		fail_msg("start %s with %s: %d (%s), want %d", identity, auth ? auth : "no auth",
			 rc, err, want);
	if (rc != 0) {
		if (getenv("FW_TEST_VERBOSE"))
			fprintf(stderr, "  refused as expected: %s\n", err);
		assert_non_null(strstr(err, "ACL"));
		fw_fleet_free(f);
		return NULL;
	}
	return f;
}

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

static void auth_cb(int rc, const void *data)
{
	*(volatile int *)data = rc + 1000;
}

/* A raw ZooKeeper client: no credentials (@digest NULL) or these. */
static zhandle_t *raw(const char *digest)
{
	zoo_set_debug_level((ZooLogLevel)0);
	zhandle_t *zh = zookeeper_init(ZK, watcher, 4000, NULL, NULL, 0);
	assert_non_null(zh);
	for (int i = 0; i < 100 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
		usleep(50 * 1000);
	assert_int_equal(zoo_state(zh), ZOO_CONNECTED_STATE);
	if (digest) {
		volatile int done = 0;
		assert_int_equal(zoo_add_auth(zh, "digest", digest, (int)strlen(digest), auth_cb,
					      (const void *)&done),
				 ZOK);
		for (int i = 0; i < 100 && !done; i++)
			usleep(20 * 1000);
		assert_int_equal(done, 1000 + ZOK);
	}
	return zh;
}

/* What a stranger may try on a fleet at @root holding worker 0. */
static void stranger_refused(const char *root, const char *digest)
{
	char w0[512], w9[512], buf[512];
	int len = sizeof(buf);
	struct Stat st;
	zhandle_t *zh = raw(digest);
	fw_fleet_key_worker(w0, sizeof(w0), root, 0);
	fw_fleet_key_worker(w9, sizeof(w9), root, 9);
	/* reading is allowed: flakectl fleet ls without the secret */
	assert_int_equal(zoo_get(zh, w0, 0, buf, &len, &st), ZOK);
	const char *floor0 = "flakewire-worker v1\nowner=evil\ntoken=0000000000000001\n"
			     "lease_until=1\nfloor=0\n";
	assert_int_equal(zoo_set(zh, w0, floor0, (int)strlen(floor0), -1), ZNOAUTH);
	assert_int_equal(zoo_delete(zh, w0, -1), ZNOAUTH);
	assert_int_equal(
		zoo_create(zh, w9, floor0, (int)strlen(floor0), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
		ZNOAUTH);
	assert_int_equal(zoo_set_acl(zh, root, -1, &ZOO_OPEN_ACL_UNSAFE), ZNOAUTH);
	/* the census the node's start wrote (issue 50): the gauges of every node */
	char census[512];
	fw_fleet_key_sub(census, sizeof(census), root, "census");
	assert_int_equal(zoo_set(zh, census, "x", 1, -1), ZNOAUTH);
	assert_int_equal(zoo_delete(zh, census, -1), ZNOAUTH);
	char nodes[512];
	fw_fleet_key_sub(nodes, sizeof(nodes), root, "nodes/evil");
	assert_int_equal(
		zoo_create(zh, nodes, "x", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0),
		ZNOAUTH);
	zookeeper_close(zh);
}

static void test_acl_refuses_strangers(void **state)
{
	(void)state;
	const char *root = "/fwt-acl/a";
	struct fw_fleet *f = start(root, "node-a", "fleet:s3cret", 0);
	struct fw_fleet_slot s;
	assert_int_equal(fw_fleet_slot(f, 0, &s), 0);
	assert_int_equal(s.worker, 0);
	stranger_refused(root, NULL);
	stranger_refused(root, "fleet:wrong");
	/* the fleet still works for its principal: renewals go through */
	struct fw_fleet_status st;
	for (int i = 0; i < 40; i++) {
		fw_fleet_status(f, &st);
		if (st.renewals >= 1)
			break;
		usleep(100 * 1000);
	}
	assert_true(st.renewals >= 1);
	fw_fleet_free(f);
	/* the wrong credentials: refused at start by ZooKeeper's ACL */
	assert_null(start(root, "node-b", "fleet:wrong", FW_EFLEET_AUTH));
	assert_null(start(root, "node-b", NULL, FW_EFLEET_AUTH));
	/* the right ones: another node of the fleet claims */
	f = start(root, "node-b", "fleet:s3cret", 0);
	assert_int_equal(fw_fleet_slot(f, 0, &s), 0);
	assert_int_equal(s.worker, 1);
	fw_fleet_free(f);
}

static void test_secure_migrates_open_fleet(void **state)
{
	(void)state;
	char err[1024];
	const char *root = "/fwt-acl/open";
	struct fw_fleet *f = start(root, "node-a", NULL, 0); /* today's open ACLs */
	fw_fleet_free(f);
	zhandle_t *zh = raw(NULL);
	char w0[512];
	fw_fleet_key_worker(w0, sizeof(w0), root, 0);
	char buf[512];
	int len = sizeof(buf);
	struct Stat st;
	assert_int_equal(zoo_get(zh, w0, 0, buf, &len, &st), ZOK);
	assert_int_equal(zoo_set(zh, w0, buf, len, st.version), ZOK); /* open: anyone writes */
	zookeeper_close(zh);
	fw_fleet_admin_zk_auth("fleet:s3cret");
	int n = fw_fleet_secure(ZK, root, 5000, err, sizeof(err));
	if (n < 0)
		fail_msg("secure: %d %s", n, err);
	assert_true(n >= 6); /* root, workers, nodes, clock, census, workers/00000 */
	stranger_refused(root, NULL);
	/* a second secure by another principal is refused */
	fw_fleet_admin_zk_auth("other:pw");
	assert_true(fw_fleet_secure(ZK, root, 5000, err, sizeof(err)) < 0);
	fw_fleet_admin_zk_auth(NULL);
	/* the operators' read still works without credentials */
	struct fw_fleet_list l;
	int lrc = fw_fleet_list_read(ZK, root, 5000, &l, err, sizeof(err));
	if (lrc != 0)
		fail_msg("list without credentials: %d %s", lrc, err);
	assert_int_equal(l.n, 1);
	assert_true(l.time_local);
	fw_fleet_list_free(&l);
	f = start(root, "node-a", "fleet:s3cret", 0);
	fw_fleet_free(f);
}

int main(void)
{
	ZK = getenv("FW_ZK");
	if (ZK == NULL) {
		fprintf(stderr, "FW_ZK: the ensemble's connect string\n");
		return 1;
	}
	{ /* the roots, as an operator makes them (flakectl fleet init [--auth-file]) */
		struct fw_fleet_config c;
		char err[1024];
		cfg_for(&c, "/fwt-acl/a", "init", NULL);
		fw_fleet_admin_zk_auth("fleet:s3cret");
		int a = fw_fleet_init(ZK, "/fwt-acl/a", &c.layout, 0, NULL, 10000, err,
				      sizeof(err));
		fw_fleet_admin_zk_auth(NULL); /* the open fleet: made with open ACLs */
		int b = a < 0 ? a
			      : fw_fleet_init(ZK, "/fwt-acl/open", &c.layout, 1, NULL, 10000, err,
					      sizeof(err));
		if (a < 0 || b < 0) {
			fprintf(stderr, "fleet init: %s\n", err);
			return 1;
		}
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acl_refuses_strangers),
		cmocka_unit_test(test_secure_migrates_open_fleet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

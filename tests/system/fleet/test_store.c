/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry interface's rules (fw_fleet_store.h, S1-S4 and liveness)
 * held by a real store: the same checks for every implementation.
 *   FW_STORE=zookeeper|etcd  FW_STORE_CONNECT=...  FW_STORE_KILL_CMD=...
 * FW_STORE_KILL_CMD (optional): a shell command the last test runs to kill
 * one server of the ensemble/cluster (its leader); the store must go on
 * answering through the others. etcd: FW_STORE_CA, _CERT, _KEY (TLS with a
 * client certificate), FW_STORE_USER and _PASSWORD (etcd's authentication).
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

#include "fw_fleet_store.h"
#include "fw_fleet_store_etcd.h"
#include "fw_fleet_store_zk.h"

static char root[128];

static struct fw_fleet_store *open_store(void)
{
	const char *kind = getenv("FW_STORE"), *connect = getenv("FW_STORE_CONNECT");
	assert_non_null(kind);
	assert_non_null(connect);
	struct fw_fleet_store *s;
	if (!strcmp(kind, "etcd")) {
		struct fw_fleet_etcd_opts o = {.endpoints = connect,
					       .session_ms = 3000,
					       .ca_file = getenv("FW_STORE_CA"),
					       .cert_file = getenv("FW_STORE_CERT"),
					       .key_file = getenv("FW_STORE_KEY"),
					       .user = getenv("FW_STORE_USER"),
					       .password = getenv("FW_STORE_PASSWORD"),
					       .plain_password = getenv("FW_STORE_PLAIN") != NULL};
		char why[512] = "";
		if (fw_fleet_etcd_opts_check(&o, why, sizeof(why)) != 0)
			print_message("refused: %s\n", why);
		s = fw_fleet_store_etcd_new(&o, root);
	} else {
		s = fw_fleet_store_zk_new(connect, root, 4000, NULL);
	}
	assert_non_null(s);
	int rc = s->ops->connect(s, 10000);
	if (rc != 0)
		print_message("connect: %s\n", s->ops->last_error(s));
	assert_int_equal(rc, 0);
	assert_int_equal(s->ops->state(s), FW_FLEET_SESSION_UP);
	return s;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The root and its children as `flakectl fleet init` makes them (EEXIST: made already). */
static void make_root(struct fw_fleet_store *s)
{
	static const char *const subs[] = {"", "/workers", "/nodes", "/clock"};
	char k[256];
	for (size_t i = 0; i < 4; i++) {
		snprintf(k, sizeof(k), "%s%s", root, subs[i]);
		int rc = s->ops->meta_create(s, k, i ? "" : "L", i ? 0 : 1);
		assert_true(rc == 0 || rc == -EEXIST);
	}
}

static void meta_records_create_once_and_cas(void **state)
{
	(void)state;
	struct fw_fleet_store *s = open_store();
	char have[FW_FLEET_REC_MAX], k[256];
	int hl = -1;
	struct fw_fleet_ver v, g;
	snprintf(k, sizeof(k), "%s-meta/a/b", root); /* parents made as needed (ZooKeeper) */
	assert_int_equal(s->ops->meta_get(s, k, have, &hl, &v), -ENOENT);
	assert_int_equal(s->ops->meta_cas(s, k, "x", 1, 12345), -ENOENT);
	assert_int_equal(s->ops->meta_create(s, k, "layout-1", 8), 0); /* S1 */
	assert_int_equal(s->ops->meta_create(s, k, "layout-2", 8), -EEXIST);
	assert_int_equal(s->ops->meta_get(s, k, have, &hl, &v), 0);
	assert_int_equal(hl, 8);
	assert_memory_equal(have, "layout-1", 8); /* the refused create wrote nothing */
	assert_int_equal(s->ops->meta_cas(s, k, "layout-3", 8, v.version), 0); /* S2 */
	assert_int_equal(s->ops->meta_cas(s, k, "layout-4", 8, v.version), -ESTALE);
	assert_int_equal(s->ops->meta_get(s, k, have, &hl, &g), 0);
	assert_memory_equal(have, "layout-3", 8);
	assert_true(g.version != v.version);
	s->ops->free(s);
}

static void create_if_absent_and_cas(void **state)
{
	(void)state;
	struct fw_fleet_store *s = open_store();
	char buf[FW_FLEET_REC_MAX];
	int len = 0;
	struct fw_fleet_ver v1, v2, v3, g;
	make_root(s);
	assert_int_equal(s->ops->get(s, 7, buf, &len, &g), -ENOENT);
	assert_int_equal(s->ops->create(s, 7, "one", 3, &v1), 0); /* S1 */
	assert_int_equal(s->ops->create(s, 7, "two", 3, &v2), -EEXIST);
	assert_int_equal(s->ops->get(s, 7, buf, &len, &g), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(buf, "one", 3); /* the refused create wrote nothing */
	assert_true(g.version == v1.version);
	assert_int_equal(s->ops->cas(s, 7, "three", 5, g.version, &v2), 0); /* S2 */
	assert_true(v2.version != v1.version);
	assert_int_equal(s->ops->cas(s, 7, "four", 4, v1.version, &v3), -ESTALE);
	assert_int_equal(s->ops->get(s, 7, buf, &len, &g), 0); /* S3 */
	assert_memory_equal(buf, "three", 5);
	assert_true(g.version == v2.version);
	assert_int_equal(s->ops->cas(s, 8, "x", 1, v2.version, &v3), -ENOENT);
	bool exists[16] = {false};
	assert_int_equal(s->ops->create(s, 12, "w12", 3, &v3), 0);
	assert_int_equal(s->ops->list(s, exists, 16), 0);
	for (int w = 0; w < 16; w++)
		assert_int_equal(exists[w], w == 7 || w == 12);
	s->ops->free(s);
}

/*
 * Issue 48, case 7: the root deleted and made again (a wiped registry, then
 * `fleet init`) between a node's read of the root and its worker write: the
 * write is refused (-ENOENT: not the root it read) and leaves no record in the
 * new root. etcd compares the root's create_revision in the write's txn;
 * ZooKeeper checks the root's czxid once the write landed and deletes a record
 * it just made. FW_STORE_WIPE_CMD: a shell command that deletes ROOT (given as
 * its last word) and everything below it.
 */
static void worker_writes_refused_under_a_root_made_again(void **state)
{
	(void)state;
	const char *wipe = getenv("FW_STORE_WIPE_CMD");
	assert_non_null(wipe);
	struct fw_fleet_store *s = open_store(), *s2;
	char buf[FW_FLEET_REC_MAX], cmd[1024];
	int len = 0;
	struct fw_fleet_ver v, g;
	make_root(s);
	assert_int_equal(s->ops->create(s, 20, "mine", 4, &v), 0);
	assert_int_equal(s->ops->meta_get(s, root, buf, &len, &g), 0); /* the root as read */
	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1", wipe, root);
	assert_int_equal(system(cmd), 0);
	s2 = open_store();
	assert_int_equal(s2->ops->get(s2, 20, buf, &len, &g), -ENOENT); /* wiped */
	/* a record below the root gone (the census, issue 50): not written, and the
	 * root not made as its parent (a node never makes its root) */
	char ck[256];
	snprintf(ck, sizeof(ck), "%s/census", root);
	assert_int_equal(s->ops->meta_create(s, ck, "c", 1), -ENOENT);
	assert_int_equal(s2->ops->meta_get(s2, root, buf, &len, &g), -ENOENT);
	assert_int_equal(s2->ops->meta_get(s2, ck, buf, &len, &g), -ENOENT);
	make_root(s2); /* made again */
	assert_int_equal(s2->ops->create(s2, 21, "theirs", 6, &g), 0);
	/* the node that read the old root: a create and a CAS refused */
	assert_int_equal(s->ops->create(s, 22, "stale", 5, &v), -ENOENT);
	assert_int_equal(s2->ops->get(s2, 22, buf, &len, &g), -ENOENT); /* nothing left */
	assert_int_equal(s2->ops->get(s2, 21, buf, &len, &g), 0);
	assert_int_not_equal(s->ops->cas(s, 21, "stale", 5, g.version, &v), 0);
	/* read again, the new root is the node's: its writes land */
	assert_int_equal(s->ops->meta_get(s, root, buf, &len, &g), 0);
	assert_int_equal(s->ops->create(s, 23, "fresh", 5, &v), 0);
	s->ops->free(s);
	s2->ops->free(s2);
}

static void liveness_belongs_to_one_session(void **state)
{
	(void)state;
	struct fw_fleet_store *a = open_store(), *b = open_store();
	bool alive = false;
	make_root(a);
	assert_int_equal(b->ops->alive_of(b, "node-a", &alive), 0);
	assert_false(alive);
	assert_int_equal(a->ops->alive_claim(a, "node-a", "pid 1", 5), 0);
	assert_int_equal(a->ops->alive_claim(a, "node-a", "pid 1", 5), 0); /* ours already */
	assert_int_equal(b->ops->alive_claim(b, "node-a", "pid 2", 5), -EEXIST);
	assert_int_equal(b->ops->alive_of(b, "node-a", &alive), 0);
	assert_true(alive);
	a->ops->close(a); /* the session ends: its liveness record goes with it */
	assert_int_equal(a->ops->state(a), FW_FLEET_SESSION_LOST);
	assert_int_equal(b->ops->alive_of(b, "node-a", &alive), 0);
	assert_false(alive);
	assert_int_equal(b->ops->alive_claim(b, "node-a", "pid 2", 5), 0);
	a->ops->free(a);
	b->ops->free(b);
}

/* alive_list's callback: the names, comma-separated, into @arg (a 256-byte buffer). */
static int collect(void *arg, const char *identity)
{
	char *b = arg;
	size_t l = strlen(b);
	snprintf(b + l, 256 - l, "%s%s", l ? "," : "", identity);
	return 0;
}

/* The names alive_list gives, sorted: "x,y". */
static const char *alive_names(struct fw_fleet_store *s, char *buf)
{
	char raw[256] = "", *save = NULL, *v[16];
	int n = 0;
	assert_int_equal(s->ops->alive_list(s, collect, raw), 0);
	for (char *t = strtok_r(raw, ",", &save); t && n < 16; t = strtok_r(NULL, ",", &save))
		v[n++] = t;
	for (int i = 1; i < n; i++) /* a few names: insertion sort */
		for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), 256 - strlen(buf), "%s%s", i ? "," : "", v[i]);
	return buf;
}

/*
 * alive_list (issue 50): every identity a live session holds, in one
 * request, as alive_of answers each; a session that ends leaves the list.
 */
static void liveness_listed_in_one_request(void **state)
{
	(void)state;
	struct fw_fleet_store *a = open_store(), *b = open_store();
	char names[256];
	make_root(a);
	assert_string_equal(alive_names(b, names), "");
	assert_int_equal(a->ops->alive_claim(a, "list-a", "pid 1", 5), 0);
	assert_int_equal(b->ops->alive_claim(b, "list-b", "pid 2", 5), 0);
	assert_string_equal(alive_names(b, names), "list-a,list-b");
	a->ops->close(a); /* its session ends: its name goes */
	assert_string_equal(alive_names(b, names), "list-b");
	b->ops->close(b);
	struct fw_fleet_store *c = open_store();
	assert_string_equal(alive_names(c, names), "");
	a->ops->free(a);
	b->ops->free(b);
	c->ops->free(c);
}

/*
 * alive_replace (issue 49): another session's liveness record is replaced
 * only at the version read, in one write; the record is the replacing
 * session's then, and stays when the old session ends (etcd: the key left
 * the old lease, which a close revokes).
 */
static void liveness_replaced_at_its_version(void **state)
{
	(void)state;
	struct fw_fleet_store *a = open_store(), *b = open_store();
	char k[256], have[FW_FLEET_REC_MAX];
	int hl = 0;
	struct fw_fleet_ver v;
	bool alive = false;
	make_root(a);
	snprintf(k, sizeof(k), "%s/nodes/node-r", root);
	assert_int_equal(b->ops->alive_replace(b, "node-r", 0, "pid 2", 5), -ESTALE); /* none */
	assert_int_equal(a->ops->alive_claim(a, "node-r", "pid 1", 5), 0);
	assert_int_equal(b->ops->meta_get(b, k, have, &hl, &v), 0);
	assert_int_equal(hl, 5);
	assert_memory_equal(have, "pid 1", 5);
	assert_int_equal(b->ops->alive_replace(b, "node-r", v.version + 7, "pid 2", 5), -ESTALE);
	assert_int_equal(b->ops->alive_replace(b, "node-r", v.version, "pid 2", 5), 0);
	assert_int_equal(b->ops->alive_claim(b, "node-r", "pid 2", 5), 0); /* b's now */
	assert_int_equal(a->ops->alive_claim(a, "node-r", "pid 1", 5), -EEXIST);
	assert_int_equal(b->ops->meta_get(b, k, have, &hl, &v), 0);
	assert_memory_equal(have, "pid 2", 5);
	a->ops->close(a); /* the old session ends: the record is no longer its */
	assert_int_equal(b->ops->alive_of(b, "node-r", &alive), 0);
	assert_true(alive);
	assert_int_equal(b->ops->alive_claim(b, "node-r", "pid 2", 5), 0);
	b->ops->close(b);
	struct fw_fleet_store *c = open_store();
	assert_int_equal(c->ops->alive_of(c, "node-r", &alive), 0);
	assert_false(alive); /* and goes with its new session */
	a->ops->free(a);
	b->ops->free(b);
	c->ops->free(c);
}

static void now_is_the_stores_clock(void **state)
{
	(void)state;
	struct fw_fleet_store *s = open_store();
	uint64_t server = 0, before = wall_ms();
	assert_int_equal(s->ops->now(s, NULL, NULL, &server, NULL), 0);
	uint64_t after = wall_ms();
	/* same machine: the store's clock is ours, at its resolution (etcd: 1 s, rounded down) */
	assert_true(server + 1100 >= before);
	assert_true(server <= after + 100);
	s->ops->free(s);
}

static void survives_one_server_killed(void **state)
{
	(void)state;
	const char *kill_cmd = getenv("FW_STORE_KILL_CMD");
	if (kill_cmd == NULL || !kill_cmd[0])
		return; /* the runner sets it for its 3-server runs */
	struct fw_fleet_store *s = open_store();
	char buf[FW_FLEET_REC_MAX];
	int len;
	struct fw_fleet_ver v, g;
	make_root(s);
	assert_int_equal(s->ops->create(s, 3, "before", 6, &v), 0);
	assert_int_equal(system(kill_cmd), 0);
	int rc = -ENOTCONN;
	for (int i = 0; i < 100 && rc != 0; i++) { /* a new leader within 10 s */
		if (s->ops->connect(s, 100) != 0)
			continue;
		rc = s->ops->get(s, 3, buf, &len, &g);
		if (rc != 0) {
			struct timespec ts = {0, 100 * 1000000};
			nanosleep(&ts, NULL);
		}
	}
	assert_int_equal(rc, 0);
	assert_memory_equal(buf, "before", 6);
	rc = -ENOTCONN;
	for (int i = 0; i < 100 && rc == -ENOTCONN; i++) {
		rc = s->ops->cas(s, 3, "after", 5, g.version, &v);
		if (rc == -ENOTCONN) {
			struct timespec ts = {0, 100 * 1000000};
			nanosleep(&ts, NULL);
		}
	}
	/* S4: an unknown outcome may have happened: then the version moved */
	if (rc == -ESTALE) {
		assert_int_equal(s->ops->get(s, 3, buf, &len, &g), 0);
		assert_memory_equal(buf, "after", 5);
	} else {
		assert_int_equal(rc, 0);
	}
	s->ops->free(s);
}

int main(void)
{
	snprintf(root, sizeof(root), "/fwtest-store-%ld-%d", (long)time(NULL), (int)getpid());
	const struct CMUnitTest wiped[] = {
		cmocka_unit_test(worker_writes_refused_under_a_root_made_again),
	};
	/* with a wipe command (the plain ZooKeeper and etcd runs): the root made again */
	if (getenv("FW_STORE_WIPE_CMD") && cmocka_run_group_tests(wiped, NULL, NULL) != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(meta_records_create_once_and_cas),
		cmocka_unit_test(create_if_absent_and_cas),
		cmocka_unit_test(liveness_belongs_to_one_session),
		cmocka_unit_test(liveness_replaced_at_its_version),
		cmocka_unit_test(liveness_listed_in_one_request),
		cmocka_unit_test(now_is_the_stores_clock),
		cmocka_unit_test(survives_one_server_killed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

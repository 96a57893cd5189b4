/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One ID space per store (issue 48, case 2), over the in-memory store
 * (fleet_memstore.h): a root exists only once `flakectl fleet init` made it
 * (fw_fleet_init_store), and a node never makes one; the roots of one store
 * share one layout and each has its own datacenter value (a store-wide record
 * per value, created once); a node whose datacenter value differs from its
 * root's refuses; a root made before roots recorded their value is adopted by
 * init with its records kept; reserved worker IDs are never claimed, and a
 * static node checks that its IDs are reserved.
 * Layout: 2 worker bits (4 IDs), 1 datacenter bit unless a test says otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet_memstore.h"
#include "fw_err.h"
#include "fw_fleet_admin.h"
#include "fw_fleet_registry.h"
#include "fw_fleet_stop.h"

static struct memsrv *M;

static struct fw_layout layout(unsigned dc_bits, unsigned worker_bits)
{
	struct fw_layout l;
	assert_int_equal(fw_layout_init(&l, FW_DEFAULT_EPOCH_MS, dc_bits, worker_bits, 12, 0), 0);
	return l;
}

/* `flakectl fleet init` over the in-memory store: its result, *err its line. */
static int init(const char *root, struct fw_layout l, uint32_t dc, const char *reserve, char *err,
		size_t errlen)
{
	struct fw_fleet_store *s = memsrv_client(M);
	err[0] = '\0';
	int rc = fw_fleet_init_store(s, root, &l, dc, reserve, 100, err, errlen);
	s->ops->free(s);
	return rc;
}

static void cfg_for(struct fw_fleet_config *c, const char *root, struct fw_layout l, uint32_t dc)
{
	fw_fleet_config_default(c);
	c->root = root;
	c->identity = "node-a";
	c->cache_file = "";
	c->layout = l;
	c->datacenter = dc;
	c->lease_ms = 60000;
	c->renew_ms = 1000;
	c->session_timeout_ms = 100;
	c->start_wait_ms = 100;
}

/* fw_fleet_start over @c: its result; the registry in *out when it started. */
static int start(const struct fw_fleet_config *c, uint32_t n, struct fw_fleet **out, char *err,
		 size_t errlen)
{
	struct fw_fleet *f = NULL;
	err[0] = '\0';
	assert_int_equal(fw_fleet_create_store(c, n, memsrv_client(M), &f, err, errlen), 0);
	int rc = fw_fleet_start(f, NULL, err, errlen);
	if (rc != 0 || out == NULL)
		fw_fleet_free(f);
	else
		*out = f;
	return rc;
}

static int setup(void **state)
{
	(void)state;
	M = memsrv_new();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	memsrv_free(M);
	return 0;
}

/* A node never creates a root: on a root nobody made it refuses, naming it, and writes nothing. */
static void test_node_never_creates_root(void **state)
{
	(void)state;
	char err[1024], buf[FW_FLEET_REC_MAX];
	struct fw_fleet_config c;
	cfg_for(&c, "/bars/one", layout(1, 2), 0);
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "no fleet root /bars/one"));
	assert_non_null(strstr(err, "flakectl fleet init"));
	assert_int_equal(memsrv_worker_writes(M), 0);
	struct fw_fleet_store *s = memsrv_client(M);
	struct fw_fleet_ver v;
	int len;
	assert_int_equal(s->ops->connect(s, 100), 0);
	assert_int_equal(s->ops->meta_get(s, "/bars/one", buf, &len, &v), -ENOENT);
	s->ops->free(s);
}

/* Two roots of one store with one datacenter value: the second init refuses. */
static void test_two_roots_one_value(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	assert_int_equal(init("/bars/one", layout(1, 2), 0, NULL, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	assert_int_equal(init("/bars/two", layout(1, 2), 0, NULL, err, sizeof(err)),
			 FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "datacenter value 0 is root /bars/one's"));
	/* so a node on /bars/two has no root to start on */
	cfg_for(&c, "/bars/two", layout(1, 2), 0);
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "no fleet root /bars/two"));
	/* another value is another ID space: both fleets issue worker 0, in different spaces */
	assert_int_equal(init("/bars/two", layout(1, 2), 1, NULL, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	c.datacenter = 1;
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	fw_fleet_free(f);
	/* no third value fits one datacenter bit */
	assert_int_equal(init("/bars/three", layout(1, 2), 2, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "datacenter 2: out of range (0-1)"));
}

/* The roots of one store share one layout: an init with another is refused. */
static void test_one_layout_per_store(void **state)
{
	(void)state;
	char err[1024];
	assert_int_equal(init("/a", layout(1, 2), 0, NULL, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	assert_int_equal(init("/b", layout(1, 3), 1, NULL, err, sizeof(err)), FW_EFLEET_LAYOUT);
	assert_non_null(strstr(err, "worker_bits 2"));
	assert_non_null(strstr(err, "worker_bits 3"));
	assert_int_equal(init("/a", layout(1, 3), 0, NULL, err, sizeof(err)), FW_EFLEET_LAYOUT);
}

/* Init on a root that exists with the same terms changes nothing; other terms are refused. */
static void test_init_again(void **state)
{
	(void)state;
	char err[1024];
	assert_int_equal(init("/a", layout(1, 2), 1, "0", err, sizeof(err)), FW_FLEET_INIT_CREATED);
	uint64_t w = memsrv_writes(M);
	assert_int_equal(init("/a", layout(1, 2), 1, "0-0", err, sizeof(err)), FW_FLEET_INIT_SAME);
	assert_int_equal(memsrv_writes(M), w);
	assert_int_equal(init("/a", layout(1, 2), 0, "0", err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "exists with datacenter 1"));
	assert_int_equal(init("/a", layout(1, 2), 1, "", err, sizeof(err)), FW_EFLEET_ROOT);
	assert_int_equal(memsrv_writes(M), w);
	assert_int_equal(init("/flakewire-roots/x", layout(1, 2), 0, "", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(init("/a", layout(1, 2), 1, "3-1", err, sizeof(err)), -EINVAL);
	assert_int_equal(init("/a", layout(1, 2), 1, "4", err, sizeof(err)), -EINVAL);
}

/* A node whose [id] datacenter differs from its root's refuses, both values named. */
static void test_datacenter_mismatch(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	assert_int_equal(init("/a", layout(1, 2), 1, NULL, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", layout(1, 2), 0);
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "/a serves datacenter value 1"));
	assert_non_null(strstr(err, "[id] datacenter = 0"));
	assert_int_equal(memsrv_worker_writes(M), 0);
}

/* A root whose value record names another root (a hand edit, a copy) is refused. */
static void test_value_record_names_another(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	assert_int_equal(init("/a", layout(1, 2), 0, NULL, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	memsrv_set_meta(M, "/b",
			"flakewire-fleet v1\nepoch_ms=1767225600000\ndatacenter_bits=1\n"
			"worker_bits=2\nsequence_bits=12\ndatacenter=0\nreserved=\n");
	cfg_for(&c, "/b", layout(1, 2), 0);
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "names /a"));
}

/* A root made before roots recorded their value: refused by nodes, adopted by init. */
static void test_adopt_old_root(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_fleet_rec r = {.owner = "node-a", .token = 7, .lease = 1, .floor = 0};
	memsrv_set_meta(M, "/old",
			"flakewire-fleet v1\nepoch_ms=1767225600000\ndatacenter_bits=1\n"
			"worker_bits=2\nsequence_bits=12\n");
	memsrv_put(M, 0, &r); /* an old claim, its lease long over */
	r.lease = 123;
	memsrv_put(M, 1, &r);
	cfg_for(&c, "/old", layout(1, 2), 0);
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "made before roots recorded their datacenter value"));
	/* a reserved ID must have no record */
	assert_int_equal(init("/old", layout(1, 2), 0, "1", err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "worker 1 has been claimed already"));
	assert_int_equal(init("/old", layout(1, 2), 0, "3", err, sizeof(err)),
			 FW_FLEET_INIT_ADOPTED);
	struct fw_fleet_rec kept;
	assert_true(memsrv_get(M, 1, &kept, NULL));
	assert_int_equal(kept.lease, 123); /* records kept */
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	struct fw_fleet_slot s;
	assert_int_equal(fw_fleet_slot(f, 0, &s), 0);
	assert_int_equal(s.worker, 2); /* never claimed, and 3 is reserved */
	fw_fleet_free(f);
	assert_int_equal(init("/old", layout(1, 2), 0, "3", err, sizeof(err)), FW_FLEET_INIT_SAME);
}

/* Reserved worker IDs are never claimed: the fleet runs out before it takes one. */
static void test_reserved_never_claimed(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	assert_int_equal(init("/a", layout(1, 2), 0, "0,2", err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", layout(1, 2), 0);
	assert_int_equal(start(&c, 2, &f, err, sizeof(err)), 0);
	struct fw_fleet_slot s0, s1;
	assert_int_equal(fw_fleet_slot(f, 0, &s0), 0);
	assert_int_equal(fw_fleet_slot(f, 1, &s1), 0);
	assert_int_equal(s0.worker, 1);
	assert_int_equal(s1.worker, 3);
	fw_fleet_free(f);
	c.identity = "node-b";
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_FULL);
	assert_false(memsrv_get(M, 0, &(struct fw_fleet_rec){0}, NULL));
	assert_false(memsrv_get(M, 2, &(struct fw_fleet_rec){0}, NULL));
}

/* A static node given the store: its IDs must be reserved there, in its datacenter. */
static void test_static_node(void **state)
{
	(void)state;
	char err[1024];
	struct fw_layout l = layout(1, 2);
	assert_int_equal(init("/a", l, 1, "0-1", err, sizeof(err)), FW_FLEET_INIT_CREATED);
	struct fw_fleet_store *s = memsrv_client(M);
	uint32_t ok[] = {0, 1}, bad[] = {1, 2};
	assert_int_equal(fw_fleet_static_store(s, "/a", &l, 1, ok, 2, 100, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_static_store(s, "/a", &l, 1, bad, 2, 100, err, sizeof(err)),
			 FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "static worker 2 is not reserved in /a (reserved: '0-1')"));
	assert_int_equal(fw_fleet_static_store(s, "/a", &l, 0, ok, 2, 100, err, sizeof(err)),
			 FW_EFLEET_ROOT);
	assert_int_equal(fw_fleet_static_store(s, "/nope", &l, 1, ok, 2, 100, err, sizeof(err)),
			 FW_EFLEET_ROOT);
	s->ops->free(s);
}

/* The root record's text round-trips, and an old layout record reads without a value. */
static void test_root_record(void **state)
{
	(void)state;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_root r = {.layout = layout(2, 4),
				  .has_dc = true,
				  .datacenter = 3,
				  .generation = 0xabc},
			     back;
	assert_int_equal(fw_fleet_reserve_parse("0-3,9,12-13", 16, &r.reserved), 0);
	int n = fw_fleet_root_format(buf, sizeof(buf), &r);
	assert_true(n > 0);
	assert_int_equal(fw_fleet_root_parse(buf, n, &back), 0);
	assert_true(back.has_dc);
	assert_int_equal(back.datacenter, 3);
	assert_int_equal(back.generation, 0xabc);
	assert_true(fw_fleet_reserve_same(&r.reserved, &back.reserved, 16));
	assert_true(fw_fleet_reserved(&back.reserved, 9));
	assert_false(fw_fleet_reserved(&back.reserved, 10));
	n = fw_fleet_layout_format(buf, sizeof(buf), &r.layout);
	assert_int_equal(fw_fleet_root_parse(buf, n, &back), 0);
	assert_false(back.has_dc);
	/* a value beyond the width, a bad list */
	const char *bad[] = {"flakewire-fleet v1\nepoch_ms=1767225600000\ndatacenter_bits=1\n"
			     "worker_bits=2\nsequence_bits=12\ndatacenter=2\n",
			     "flakewire-fleet v1\nepoch_ms=1767225600000\ndatacenter_bits=1\n"
			     "worker_bits=2\nsequence_bits=12\ndatacenter=0\nreserved=1-\n"};
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(fw_fleet_root_parse(bad[i], (int)strlen(bad[i]), &back), -EINVAL);
	struct fw_fleet_reserve rs;
	assert_int_equal(fw_fleet_reserve_parse("", 4, &rs), 0);
	assert_int_equal(rs.n, 0);
	assert_int_equal(fw_fleet_reserve_parse("1,", 4, &rs), -EINVAL);
	assert_int_equal(fw_fleet_reserve_parse("-1", 4, &rs), -EINVAL);
	char root[64];
	n = fw_fleet_dc_format(buf, sizeof(buf), "/bars/one");
	assert_int_equal(fw_fleet_dc_parse(buf, n, root, sizeof(root)), 0);
	assert_string_equal(root, "/bars/one");
}

static struct fw_fleet_status status(struct fw_fleet *f)
{
	struct fw_fleet_status st;
	fw_fleet_status(f, &st);
	return st;
}

/* Waits up to @ms for @cond. */
#define WAIT_FOR(cond, ms)                                             \
	do {                                                           \
		for (unsigned _t = 0; _t < (ms) / 10 && !(cond); _t++) \
			usleep(10 * 1000);                             \
	} while (0)

static int fence(const char *root, struct fw_layout l, uint32_t dc, uint64_t lease_ms, uint64_t *at,
		 char *err, size_t errlen)
{
	struct fw_fleet_store *s = memsrv_client(M);
	int rc = fw_fleet_fence_store(s, root, &l, dc, NULL, lease_ms, 100, at, err, errlen);
	s->ops->free(s);
	return rc;
}

/*
 * Case 7: the root's records wiped under a running node. It never makes the
 * root again; it stops claiming, taking over and renewing (issuing on within
 * its confirmed lease: its slot keeps its worker and lease); a root made again
 * by init is refused (init names fence), and a fresh node finds none; after
 * `fleet fence` it goes on, and every later claim's floor is at or above the
 * fence.
 */
static void test_wiped_root(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_fleet_slot s0, s1;
	struct fw_layout l = layout(1, 2);
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", l, 0);
	c.renew_ms = 50;
	c.lease_ms = 60000;
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	WAIT_FOR(status(f).renewals >= 2, 2000);
	assert_false(status(f).root_stopped);
	assert_int_equal(fw_fleet_slot(f, 0, &s0), 0);
	memsrv_wipe(M, "/a");
	WAIT_FOR(status(f).root_stopped, 2000);
	assert_true(status(f).root_stopped);
	uint64_t renewals = status(f).renewals, writes = memsrv_worker_writes(M);
	usleep(300 * 1000);
	assert_int_equal(status(f).renewals, renewals);    /* stopped */
	assert_int_equal(memsrv_worker_writes(M), writes); /* no record made again */
	assert_int_equal(fw_fleet_slot(f, 0, &s1), 0);
	assert_int_equal(s1.worker, s0.worker); /* issuing on within its confirmed lease */
	assert_int_equal(s1.lease_ms, s0.lease_ms);
	assert_false(s1.lost);
	/* init refuses to make it again (its value's record names it) */
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "fleet fence"));
	/* fenced: the node goes on; its record is gone, so its slot stops at its confirmed
	 * lease and claims another ID above the fence */
	uint64_t at = 0;
	assert_int_equal(fence("/a", l, 0, 60000, &at, err, sizeof(err)), 0);
	assert_true(at >= FW_DEFAULT_EPOCH_MS + 60000);
	WAIT_FOR(!status(f).root_stopped, 2000);
	assert_false(status(f).root_stopped);
	struct fw_fleet_slot s2;
	WAIT_FOR(fw_fleet_slot(f, 0, &s2) == 0 && s2.worker >= 0 && s2.worker != s0.worker, 3000);
	assert_int_equal(fw_fleet_slot(f, 0, &s2), 0);
	assert_true(s2.floor_ms >= at - FW_DEFAULT_EPOCH_MS);
	fw_fleet_free(f);
	/* a fresh node claims above the fence too */
	c.identity = "node-b";
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_slot(f, 0, &s2), 0);
	assert_true(s2.floor_ms >= at - FW_DEFAULT_EPOCH_MS);
	fw_fleet_free(f);
}

/*
 * A root made again after a wipe of the whole store (here written as an
 * init that ran before the node saw the wipe would: another generation, no
 * fence): the node stops, and its stop record names the new generation, so
 * a process that starts on it refuses too.
 */
static void test_other_generation(void **state)
{
	(void)state;
	char err[1024], text[FW_FLEET_REC_MAX];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_fleet_root r;
	struct fw_layout l = layout(1, 2);
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", l, 0);
	c.renew_ms = 50;
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	assert_true(memsrv_get_meta(M, "/a", text, sizeof(text)));
	assert_int_equal(fw_fleet_root_parse(text, (int)strlen(text), &r), 0);
	r.generation ^= 0x5a5a;
	assert_true(fw_fleet_root_format(text, sizeof(text), &r) > 0);
	memsrv_wipe(M, "/a");
	memsrv_set_meta(M, "/a", text); /* made again: its generation only differs */
	WAIT_FOR(status(f).root_stopped, 2000);
	assert_true(status(f).root_stopped);
	uint64_t renewals = status(f).renewals;
	usleep(200 * 1000);
	assert_int_equal(status(f).renewals, renewals);
	WAIT_FOR(memsrv_get_meta(M, "/a/stopped", text, sizeof(text)), 2000);
	struct fw_fleet_stop st;
	assert_true(memsrv_get_meta(M, "/a/stopped", text, sizeof(text)));
	assert_int_equal(fw_fleet_stop_parse(text, (int)strlen(text), &st), 0);
	assert_true(st.generation == r.generation);
	assert_non_null(strstr(st.reason, "another generation"));
	fw_fleet_free(f);
	c.identity = "node-b";
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "/a/stopped"));
}

/*
 * A whole store wiped under a running node (the root and the store-wide
 * records): the node writes its datacenter value's record naming its root
 * again, so `fleet init` refuses to make the root anew (floors from 0 under
 * a node still issuing) and names fence; the fence then works.
 */
static void test_whole_store_wiped(void **state)
{
	(void)state;
	char err[1024], text[FW_FLEET_REC_MAX];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_layout l = layout(1, 2);
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", l, 0);
	c.renew_ms = 50;
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	memsrv_wipe(M, "/a");
	memsrv_wipe(M, "/flakewire-roots");
	WAIT_FOR(status(f).root_stopped &&
			 memsrv_get_meta(M, "/flakewire-roots/dc/0000", text, sizeof(text)),
		 2000);
	assert_true(status(f).root_stopped);
	assert_true(memsrv_get_meta(M, "/flakewire-roots/dc/0000", text, sizeof(text)));
	assert_non_null(strstr(text, "root=/a"));
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "fleet fence"));
	uint64_t at = 0;
	assert_int_equal(fence("/a", l, 0, 60000, &at, err, sizeof(err)), 0);
	WAIT_FOR(!status(f).root_stopped, 2000);
	assert_false(status(f).root_stopped);
	fw_fleet_free(f);
}

/* The stop record at /a/stopped, parsed into *st; false when there is none. */
static bool stop_record(struct fw_fleet_stop *st)
{
	char text[FW_FLEET_REC_MAX];
	return memsrv_get_meta(M, "/a/stopped", text, sizeof(text)) &&
	       fw_fleet_stop_parse(text, (int)strlen(text), st) == 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The restore tests' start: root /a made (1 datacenter bit, 2 worker bits),
 * a copy of the store taken then (the root, no worker record), and node-a
 * started with @renew_ms and @lease_ms, holding slot 0 (*s0). Returns the
 * copy (free() it); node-a in *a, its configuration in *c.
 */
static struct memsnap *restore_setup(struct fw_fleet_config *c, uint32_t renew_ms,
				     uint64_t lease_ms, struct fw_fleet **a,
				     struct fw_fleet_slot *s0)
{
	char err[1024];
	struct fw_layout l = layout(1, 2);
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_FLEET_INIT_CREATED);
	struct memsnap *copy = memsrv_snapshot(M);
	cfg_for(c, "/a", l, 0);
	c->renew_ms = renew_ms;
	if (lease_ms)
		c->lease_ms = lease_ms;
	assert_int_equal(start(c, 1, a, err, sizeof(err)), 0);
	assert_int_equal(fw_fleet_slot(*a, 0, s0), 0);
	assert_true(s0->worker >= 0);
	return copy;
}

/*
 * A registry restored from a copy taken before node-a claimed its worker
 * ID (ZooKeeper's way: no history mark; the server restarts on the copy, so
 * every session ends). In the copy the ID is free: a fresh process would
 * claim it at floor 0 while node-a still issues under it. node-a sees the
 * restore at its reconnection (long before its next renewal), writes the
 * stop record, and node-b, started then with nothing of its own, refuses,
 * naming the record and the fence; once fenced, node-b claims above the
 * fence, so above every ID node-a issued.
 */
static void test_restore_stops_fresh_node(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL, *b = NULL;
	struct fw_fleet_slot s0, s1;
	struct fw_fleet_stop st;
	struct fw_layout l = layout(1, 2);
	/* renew_ms 10 s: detection must not wait for it */
	struct memsnap *copy = restore_setup(&c, 10000, 60000, &a, &s0);
	uint64_t t0 = mono_ms();
	memsrv_restore(M, copy, true);
	free(copy);
	WAIT_FOR(stop_record(&st), 3000);
	uint64_t took = mono_ms() - t0;
	print_message("stop record written %" PRIu64 " ms after the restore\n", took);
	assert_true(stop_record(&st));
	assert_true(took < c.renew_ms);
	assert_string_equal(st.by, "node-a");
	WAIT_FOR(status(a).root_stopped, 1000);
	assert_true(status(a).root_stopped);
	/* a fresh process: nothing of its own to compare, the record stops it */
	c.identity = "node-b";
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "/a/stopped"));
	assert_non_null(strstr(err, "node-a"));
	assert_non_null(strstr(err, "flakectl fleet fence --root /a"));
	assert_int_equal(fw_fleet_slot(a, 0, &s1), 0); /* node-a issues on within its lease */
	assert_int_equal(s1.worker, s0.worker);
	assert_int_equal(s1.lease_ms, s0.lease_ms);
	assert_false(s1.lost);
	uint64_t at = 0;
	assert_int_equal(fence("/a", l, 0, c.lease_ms, &at, err, sizeof(err)), 0);
	assert_int_equal(start(&c, 1, &b, err, sizeof(err)), 0);
	struct fw_fleet_slot sb;
	assert_int_equal(fw_fleet_slot(b, 0, &sb), 0);
	assert_true(sb.floor_ms >= at - FW_DEFAULT_EPOCH_MS);
	assert_true(sb.floor_ms >= s0.lease_ms); /* above all node-a issued under any ID */
	WAIT_FOR(!status(a).root_stopped, 2000);
	assert_false(status(a).root_stopped);
	fw_fleet_free(b);
	fw_fleet_free(a);
}

/*
 * etcd's way: the store keeps a history mark, recorded in the root by init,
 * that a restore sets back. node-a claimed after the copy and does not see
 * the restore (its session goes on, its next renewal is far): node-b,
 * started on the restored store, sees the mark below the root's and
 * refuses by itself, writing the stop record.
 */
static void test_restore_history_stops_fresh_node(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL;
	struct fw_fleet_stop st;
	struct fw_layout l = layout(1, 2);
	struct fw_fleet_slot s0;
	memsrv_keep_history(M, true);
	struct memsnap *copy = restore_setup(&c, 10000, 60000, &a, &s0);
	usleep(200 * 1000); /* past the registry thread's first round: the next is renew_ms on */
	memsrv_restore(M, copy, false);
	free(copy);
	memsrv_rev_set(M, 1000000); /* no write counter below one node-a saw */
	c.identity = "node-b";
	assert_int_equal(start(&c, 1, NULL, err, sizeof(err)), FW_EFLEET_ROOT);
	assert_non_null(strstr(err, "history mark"));
	assert_non_null(strstr(err, "flakectl fleet fence --root /a"));
	assert_true(stop_record(&st));
	assert_string_equal(st.by, "node-b");
	assert_false(status(a).root_stopped); /* node-a has seen nothing yet */
	/* the fence records the mark as it is now: a fresh node starts */
	uint64_t at = 0;
	assert_int_equal(fence("/a", l, 0, c.lease_ms, &at, err, sizeof(err)), 0);
	c.identity = "node-c";
	struct fw_fleet *cc = NULL;
	assert_int_equal(start(&c, 1, &cc, err, sizeof(err)), 0);
	fw_fleet_free(cc);
	fw_fleet_free(a);
}

/* A copy restored with the sessions going on and no write counter below
 * node-a's: its next renewal finds its own record gone and stops. */
static void test_restore_record_gone(void **state)
{
	(void)state;
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL;
	struct fw_fleet_stop st;
	struct fw_fleet_slot s0, s1;
	struct memsnap *copy = restore_setup(&c, 50, 0, &a, &s0);
	memsrv_restore(M, copy, false);
	free(copy);
	memsrv_rev_set(M, 1000000);
	WAIT_FOR(stop_record(&st), 2000);
	assert_true(stop_record(&st));
	assert_non_null(strstr(st.reason, "gone"));
	WAIT_FOR(status(a).root_stopped, 1000);
	assert_true(status(a).root_stopped);
	assert_int_equal(fw_fleet_slot(a, 0, &s1), 0);
	assert_int_equal(s1.worker, s0.worker); /* nobody else holds it: issuing on */
	assert_false(s1.lost);
	fw_fleet_free(a);
}

/*
 * The restored store already gave node-a's worker ID to another node at a
 * floor below node-a's confirmed lease (a process that started before
 * anyone saw the restore): node-a's renewal sees it, stops issuing under
 * that ID at once (its lease cut to now, not hours ahead), and stops the
 * fleet's claims.
 */
static void test_restore_taken_below_lease(void **state)
{
	(void)state;
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL;
	struct fw_fleet_stop st;
	struct fw_fleet_slot s0, s1;
	struct memsnap *copy = restore_setup(&c, 50, 60000, &a, &s0);
	memsrv_restore(M, copy, false);
	free(copy);
	memsrv_rev_set(M, 1000000);
	uint64_t now_l = memsrv_now(M) - FW_DEFAULT_EPOCH_MS;
	struct fw_fleet_rec b = {.token = 0x1234, .lease = now_l + 60000, .floor = 0};
	snprintf(b.owner, sizeof(b.owner), "node-b");
	memsrv_put(M, (uint32_t)s0.worker, &b);
	WAIT_FOR(stop_record(&st), 2000);
	assert_true(stop_record(&st));
	assert_non_null(strstr(st.reason, "node-b"));
	WAIT_FOR(status(a).root_stopped, 1000);
	assert_int_equal(fw_fleet_slot(a, 0, &s1), 0);
	assert_true(s1.lost);
	assert_true(s1.lease_ms <= memsrv_now(M) - FW_DEFAULT_EPOCH_MS); /* stopped at once */
	assert_true(s1.lease_ms < s0.lease_ms);
	fw_fleet_free(a);
}

/*
 * Case 7: the store restored from a snapshot under a running node: its record
 * is back at an older version. The node's renewal sees it, stops claiming and
 * renewing (its slot keeps its lease); after a fence it re-proves its own
 * record by its token and renews on, keeping its worker ID.
 */
static void test_restored_store(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_layout l = layout(1, 2);
	struct fw_fleet_rec old;
	int64_t old_v = 0;
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", l, 0);
	c.renew_ms = 50;
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	struct fw_fleet_slot s0, s1;
	assert_int_equal(fw_fleet_slot(f, 0, &s0), 0);
	assert_true(memsrv_get(M, (uint32_t)s0.worker, &old, &old_v)); /* the snapshot */
	WAIT_FOR(status(f).renewals >= 3, 2000);
	char text[FW_FLEET_REC_MAX];
	fw_fleet_rec_format(text, sizeof(text), &old);
	memsrv_put_version(M, (uint32_t)s0.worker, text, old_v); /* restored */
	WAIT_FOR(status(f).root_stopped, 2000);
	assert_true(status(f).root_stopped);
	uint64_t renewals = status(f).renewals;
	usleep(200 * 1000);
	assert_int_equal(status(f).renewals, renewals);
	assert_int_equal(fw_fleet_slot(f, 0, &s1), 0);
	assert_int_equal(s1.worker, s0.worker);
	assert_false(s1.lost);
	uint64_t at;
	assert_int_equal(fence("/a", l, 0, 60000, &at, err, sizeof(err)), 0);
	WAIT_FOR(!status(f).root_stopped && status(f).renewals > renewals + 1, 2000);
	assert_true(status(f).renewals > renewals + 1);
	assert_int_equal(fw_fleet_slot(f, 0, &s1), 0);
	assert_int_equal(s1.worker, s0.worker); /* its own record, re-proven by its token */
	assert_false(s1.lost);
	fw_fleet_free(f);
}

/*
 * A restore seen by the store's write counter: a claim round (here a
 * replacement asked for) reads the store's time, whose write counter is below
 * one it saw: the node stops before it claims or takes anything over.
 */
static void test_store_counter_went_back(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_layout l = layout(1, 2);
	assert_int_equal(init("/a", l, 0, NULL, err, sizeof(err)), FW_FLEET_INIT_CREATED);
	cfg_for(&c, "/a", l, 0);
	c.renew_ms = 50;
	assert_int_equal(start(&c, 1, &f, err, sizeof(err)), 0);
	struct fw_fleet_slot s0, s1;
	assert_int_equal(fw_fleet_slot(f, 0, &s0), 0);
	memsrv_rev_set(M, 101); /* below every write counter the node saw, above 0 */
	uint64_t writes = memsrv_worker_writes(M);
	assert_int_equal(fw_fleet_replace(f, 0), 0);
	WAIT_FOR(status(f).root_stopped, 2000);
	assert_true(status(f).root_stopped);
	usleep(200 * 1000);
	assert_int_equal(memsrv_worker_writes(M), writes); /* nothing claimed, nothing renewed */
	assert_int_equal(fw_fleet_slot(f, 0, &s1), 0);
	assert_int_equal(s1.worker, s0.worker);
	uint64_t at;
	int frc = fence("/a", l, 0, 60000, &at, err, sizeof(err));
	if (frc != 0)
		fail_msg("fence: %d %s", frc, err);
	WAIT_FOR(!status(f).root_stopped, 2000);
	assert_false(status(f).root_stopped);
	fw_fleet_free(f);
}

/*
 * A restore makes a version mean another record: node-a's worker record is
 * gone in the copy (claimed after it), another node's record for that worker
 * ID lands at the very version node-a holds (etcd's revisions go back with a
 * snapshot; a ZooKeeper node made again starts at version 0), and the fence
 * lets renewals go on. node-a's renewal must read the record before it
 * writes: a CAS on the version alone would overwrite node-b's record and both
 * would issue under one worker ID.
 */
static void test_fence_version_reused(void **state)
{
	(void)state;
	char err[1024];
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL;
	struct fw_fleet_slot s0, s1;
	struct fw_fleet_rec held, now;
	int64_t v_held = 0, v_now = 0;
	struct fw_layout l = layout(1, 2);
	struct memsnap *copy = restore_setup(&c, 50, 60000, &a, &s0);
	uint32_t w = (uint32_t)s0.worker;
	WAIT_FOR(status(a).renewals >= 2, 2000);
	memsrv_fail_worker(M, w, -EIO); /* no renewal lands: the version held stays */
	usleep(150 * 1000);
	assert_true(memsrv_get(M, w, &held, &v_held));
	memsrv_restore(M, copy, false);
	free(copy);
	memsrv_fail_worker(M, w, 0);
	WAIT_FOR(status(a).root_stopped, 2000); /* its record gone: stopped */
	assert_true(status(a).root_stopped);
	uint64_t now_l = memsrv_now(M) - FW_DEFAULT_EPOCH_MS;
	struct fw_fleet_rec b = {.token = 0x1234, .lease = now_l + 120000, .floor = now_l + 60000};
	snprintf(b.owner, sizeof(b.owner), "node-b");
	char text[FW_FLEET_REC_MAX];
	fw_fleet_rec_format(text, sizeof(text), &b);
	memsrv_put_version(M, w, text, v_held); /* node-b's claim, at node-a's version */
	uint64_t at;
	assert_int_equal(fence("/a", l, 0, 60000, &at, err, sizeof(err)), 0);
	WAIT_FOR(!status(a).root_stopped, 2000);
	assert_false(status(a).root_stopped);
	/* node-a's first renewal after the fence finds node-b's token: lost */
	WAIT_FOR(fw_fleet_slot(a, 0, &s1) == 0 && (s1.worker != s0.worker || s1.lost), 3000);
	assert_true(memsrv_get(M, w, &now, &v_now));
	assert_string_equal(now.owner, "node-b"); /* node-b's record stands */
	assert_int_equal(now.token, 0x1234);
	assert_int_equal(fw_fleet_slot(a, 0, &s1), 0);
	assert_true(s1.worker != s0.worker || s1.lost); /* node-a no longer issues under it */
	fw_fleet_free(a);
}

/*
 * The same without a fence: a restore under a running node put another
 * owner's record (claimed before anyone saw the restore) at the very version
 * node-a holds. node-a's session drops and comes back (a check round): its
 * renewal reads the record before it writes, finds node-b's token below its
 * confirmed lease, stops issuing under that worker ID at once and stops the
 * fleet's claims. A compare-and-set on the version alone overwrote node-b's
 * record and both went on issuing under one worker ID.
 */
static void test_reconnect_version_reused(void **state)
{
	(void)state;
	struct fw_fleet_config c;
	struct fw_fleet *a = NULL;
	struct fw_fleet_stop st;
	struct fw_fleet_slot s0, s1;
	struct fw_fleet_rec held, now;
	int64_t v_held = 0, v_now = 0;
	struct memsnap *copy = restore_setup(&c, 50, 60000, &a, &s0);
	uint32_t w = (uint32_t)s0.worker;
	WAIT_FOR(status(a).renewals >= 2, 2000);
	memsrv_fail_worker(M, w, -EIO); /* no renewal lands: the version held stays */
	usleep(150 * 1000);
	assert_true(memsrv_get(M, w, &held, &v_held));
	memsrv_restore(M, copy, false);
	free(copy);
	memsrv_rev_set(M, 1000000); /* no write counter below one node-a saw */
	uint64_t now_l = memsrv_now(M) - FW_DEFAULT_EPOCH_MS;
	struct fw_fleet_rec b = {.token = 0x1234, .lease = now_l + 60000, .floor = 0};
	snprintf(b.owner, sizeof(b.owner), "node-b");
	char text[FW_FLEET_REC_MAX];
	fw_fleet_rec_format(text, sizeof(text), &b);
	memsrv_put_version(M, w, text, v_held); /* node-b's claim, at node-a's version */
	memsrv_drop_sessions(M);                /* node-a reconnects: a check round */
	memsrv_fail_worker(M, w, 0);
	WAIT_FOR(fw_fleet_slot(a, 0, &s1) == 0 && s1.lost, 3000);
	assert_true(memsrv_get(M, w, &now, &v_now));
	assert_string_equal(now.owner, "node-b"); /* node-b's record stands */
	assert_int_equal(fw_fleet_slot(a, 0, &s1), 0);
	assert_true(s1.lost);
	assert_true(s1.lease_ms <= memsrv_now(M) - FW_DEFAULT_EPOCH_MS); /* cut at once */
	WAIT_FOR(stop_record(&st), 2000);
	assert_true(stop_record(&st));
	assert_non_null(strstr(st.reason, "node-b"));
	fw_fleet_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_node_never_creates_root),
		T(test_two_roots_one_value),
		T(test_one_layout_per_store),
		T(test_init_again),
		T(test_datacenter_mismatch),
		T(test_value_record_names_another),
		T(test_adopt_old_root),
		T(test_reserved_never_claimed),
		T(test_static_node),
		T(test_root_record),
		T(test_wiped_root),
		T(test_other_generation),
		T(test_whole_store_wiped),
		T(test_restore_stops_fresh_node),
		T(test_restore_history_stops_fresh_node),
		T(test_restore_record_gone),
		T(test_restore_taken_below_lease),
		T(test_restored_store),
		T(test_store_counter_went_back),
		T(test_fence_version_reused),
		T(test_reconnect_version_reused),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

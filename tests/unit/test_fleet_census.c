/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The root's census shared through ROOT/census (issue 50; census.c,
 * fw_fleet_census.h) over the in-memory store, counting its requests by
 * kind: the first node takes the census (one list, a read per record, one
 * liveness list) and writes it, the second reads that one record and
 * exports the first's figures; over many periods and nodes the root is
 * counted once per period, and again by another node once its taker stops;
 * a stale or garbled record is counted again and replaced at its version; a
 * write that loses exports the winner's. A start counts its census on its
 * claim's scan (each record read once), and `flakectl fleet ls` asks the
 * liveness of every owner in one request.
 * Layout: 4 worker bits (16 IDs).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_memstore.h"
#include "fw_err.h"
#include "fw_fleet_admin.h"
#include "fw_fleet_census.h"
#include "fw_fleet_registry.h"

#define EPOCH  1767225600000ull
#define PERIOD 60000u
#define KEY    "/t/census"

static struct memsrv *M;
static uint64_t clock_unix; /* the recipes' clock (unix ms) */
static uint64_t t_world;    /* when world() wrote the records */

static uint64_t test_clock(void *arg)
{
	(void)arg;
	return clock_unix;
}

static struct fw_layout layout(void)
{
	struct fw_layout l = {0};
	assert_int_equal(fw_layout_init(&l, EPOCH, 0, 4, 12, 0), 0);
	return l;
}

/* A node: its recipe over a client of its own, its liveness record claimed. */
struct node {
	struct fw_fleet_recipe r;
	char id[32];
};

static void node_open(struct node *n, const char *id)
{
	struct fw_fleet_store *s = memsrv_client(M);
	snprintf(n->id, sizeof(n->id), "%s", id);
	assert_int_equal(s->ops->connect(s, 100), 0);
	assert_int_equal(s->ops->alive_claim(s, id, "x", 1), 0);
	n->r = (struct fw_fleet_recipe){.store = s,
					.layout = layout(),
					.identity = n->id,
					.token = 0x1234,
					.lease_ms = 600000,
					.now_ms = test_clock};
}

static void node_close(struct node *n)
{
	n->r.store->ops->free(n->r.store);
}

static void put(uint32_t w, const char *owner, uint64_t lease_unix)
{
	struct fw_fleet_rec r = {.token = 7, .lease = lease_unix - EPOCH};
	r.floor = owner[0] ? 0 : r.lease;
	snprintf(r.owner, sizeof(r.owner), "%s", owner);
	memsrv_put(M, w, &r);
}

/*
 * 16 IDs: 0-1 leased to "p", 2-3 to "q" (both alive: sessions of their own), 4 to
 * "gone" (no session: stranded, back at +1 h), 5 released, 6 expired, 7-15
 * never claimed. Held 4, stranded 1, free 11.
 */
static void world(void)
{
	uint64_t now = t_world = clock_unix;
	memsrv_alive_other(M, "p");
	memsrv_alive_other(M, "q");
	put(0, "p", now + 86400000);
	put(1, "p", now + 86400000);
	put(2, "q", now + 86400000);
	put(3, "q", now + 86400000);
	put(4, "gone", now + 3600000);
	put(5, "", now - 1000);
	put(6, "gone", now - 1000);
}

static void assert_world(const struct fw_fleet_census_rec *cr)
{
	assert_int_equal(cr->c.total, 16);
	assert_int_equal(cr->c.held, 4);
	assert_int_equal(cr->c.stranded, 1);
	assert_int_equal(cr->c.free, 11);
	assert_int_equal(cr->c.next_stranded, t_world + 3600000);
}

static uint64_t calls(enum memsrv_call k)
{
	return memsrv_calls(M, k);
}

/* Requests of every kind but @a and @b (MS_CALLS: none) since the last reset. */
static uint64_t calls_but(enum memsrv_call a, enum memsrv_call b)
{
	uint64_t n = 0;
	for (int k = 0; k < MS_CALLS; k++)
		if (k != (int)a && k != (int)b)
			n += calls((enum memsrv_call)k);
	return n;
}

static int setup(void **state)
{
	(void)state;
	M = memsrv_new();
	clock_unix = memsrv_now(M); /* the store's clock, which claims and `fleet ls` use */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	memsrv_free(M);
	return 0;
}

/* The record's text round trip, and what makes one garbled (then it is counted again). */
static void test_record_text(void **state)
{
	(void)state;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_census_rec cr = {.at = 1800000000123ull, .by = "node-7"}, back;
	cr.c = (struct fw_fleet_census){.total = 1000,
					.reserved = 24,
					.free = 700,
					.held = 290,
					.stranded = 9,
					.garbled = 1,
					.next_stranded = 1800003600000ull};
	int len = fw_fleet_census_format(buf, sizeof(buf), &cr);
	assert_true(len > 0);
	assert_int_equal(fw_fleet_census_parse(buf, len, &back), 0);
	assert_int_equal(back.at, cr.at);
	assert_string_equal(back.by, "node-7");
	assert_memory_equal(&back.c, &cr.c, sizeof(cr.c));
	static const char *const bad[] = {
		/* counts that do not add up to total */
		"flakewire-census v1\nat=1\nby=a\ntotal=10\nreserved=0\nfree=5\nheld=1\n"
		"stranded=0\ngarbled=0\nnext_stranded=0\n",
		/* a field missing (held) */
		"flakewire-census v1\nat=1\nby=a\ntotal=10\nreserved=0\nfree=10\n"
		"stranded=0\ngarbled=0\nnext_stranded=0\n",
		/* stranded with no time it comes back */
		"flakewire-census v1\nat=1\nby=a\ntotal=10\nreserved=0\nfree=9\nheld=0\n"
		"stranded=1\ngarbled=0\nnext_stranded=0\n",
		/* not an identity */
		"flakewire-census v1\nat=1\nby=a/b\ntotal=10\nreserved=0\nfree=10\nheld=0\n"
		"stranded=0\ngarbled=0\nnext_stranded=0\n",
		/* a count out of range */
		"flakewire-census v1\nat=1\nby=a\ntotal=4294967296\nreserved=0\nfree=4294967296\n"
		"held=0\nstranded=0\ngarbled=0\nnext_stranded=0\n",
		"flakewire-worker v1\nowner=a\n",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fw_fleet_census_parse(bad[i], (int)strlen(bad[i]), &back),
				 -EINVAL);
}

/*
 * Fresh: its own for 7/8 of a period (its taker counts again a period
 * later), another's for a period plus the jitter, never one from far ahead.
 */
static void test_fresh_rule(void **state)
{
	(void)state;
	const uint64_t now = 1800000000000ull;
	struct fw_fleet_census_rec cr = {.by = "a"};
	cr.at = now - PERIOD * 7 / 8 + 1;
	assert_true(fw_fleet_census_fresh(&cr, "a", now, PERIOD, 0));
	cr.at = now - PERIOD * 7 / 8;
	assert_false(fw_fleet_census_fresh(&cr, "a", now, PERIOD, 0));
	assert_true(fw_fleet_census_fresh(&cr, "b", now, PERIOD, 0));
	cr.at = now - PERIOD;
	assert_false(fw_fleet_census_fresh(&cr, "b", now, PERIOD, 0));
	assert_true(fw_fleet_census_fresh(&cr, "b", now, PERIOD, 1)); /* jitter 1 ms */
	cr.at = now - PERIOD - PERIOD / 2;                            /* beyond any jitter */
	assert_false(fw_fleet_census_fresh(&cr, "b", now, PERIOD, PERIOD / 2 - 1));
	cr.at = now + PERIOD / 2; /* a little ahead: fresh */
	assert_true(fw_fleet_census_fresh(&cr, "b", now, PERIOD, 0));
	cr.at = now + PERIOD + 1; /* far ahead: never */
	assert_false(fw_fleet_census_fresh(&cr, "b", now, PERIOD, 0));
	assert_false(fw_fleet_census_fresh(&cr, "a", now, PERIOD, 0));
}

/*
 * Two nodes: the first takes the census (one list, a read per record, one
 * liveness list, no liveness read per owner) and writes it; the second,
 * ten seconds later, reads that record only and exports the first's figures.
 */
static void test_second_node_reads_the_first(void **state)
{
	(void)state;
	struct node a, b;
	struct fw_fleet_census_rec ca, cb;
	enum fw_fleet_census_src src;
	node_open(&a, "a");
	node_open(&b, "b");
	world();
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_census_shared(&a.r, "/t", PERIOD, 0, &ca, &src), 0);
	assert_int_equal(src, FW_FLEET_CENSUS_TAKEN);
	assert_world(&ca);
	assert_string_equal(ca.by, "a");
	assert_int_equal(ca.at, clock_unix);
	assert_int_equal(calls(MS_LIST), 1);
	assert_int_equal(calls(MS_GET), 7); /* the records there are, once each */
	assert_int_equal(calls(MS_ALIVE_LIST), 1);
	assert_int_equal(calls(MS_ALIVE_OF), 0);
	assert_int_equal(calls(MS_META_GET), 1);
	assert_int_equal(calls(MS_META_CREATE), 1); /* absent: S1 */
	assert_int_equal(calls_but(MS_CALLS, MS_CALLS), 11);

	clock_unix += 10000;
	put(7, "b", clock_unix + 600000); /* a claim since: the shared figures do not show it yet */
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_census_shared(&b.r, "/t", PERIOD, 0, &cb, &src), 0);
	assert_int_equal(src, FW_FLEET_CENSUS_READ);
	assert_int_equal(calls(MS_META_GET), 1);
	assert_int_equal(calls_but(MS_META_GET, MS_CALLS), 0); /* one request in all */
	assert_memory_equal(&cb, &ca, sizeof(ca));             /* the first's, as they are */
	node_close(&a);
	node_close(&b);
}

/*
 * Many nodes asking once a period each, at their own phases, for 20
 * periods: the root is counted once per period (by the node that took the
 * census first, again and again), every other ask is one read. When that
 * node stops asking, another takes over within a period and a half, and the
 * figures any node exported were never more than two periods old.
 */
static void test_one_census_per_period(void **state)
{
	(void)state;
	enum { NODES = 12, PERIODS = 20, STOP_AT = 10 };
	struct node n[NODES];
	uint64_t t0 = clock_unix, rnd = 88172645463325252ull, oldest = 0;
	uint32_t taken_by[NODES] = {0}, reads = 0;
	for (int i = 0; i < NODES; i++) {
		char id[16];
		snprintf(id, sizeof(id), "n%02d", i);
		node_open(&n[i], id);
	}
	world();
	memsrv_calls_reset(M);
	for (int k = 0; k < PERIODS; k++) {
		for (int i = 0; i < NODES; i++) {
			if (i == 0 && k >= STOP_AT)
				continue; /* the first taker stops */
			struct fw_fleet_census_rec cr;
			enum fw_fleet_census_src src;
			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			clock_unix = t0 + (uint64_t)k * PERIOD + (uint64_t)i * PERIOD / NODES + 7;
			uint64_t lists = calls(MS_LIST);
			assert_int_equal(
				fw_fleet_census_shared(&n[i].r, "/t", PERIOD, rnd, &cr, &src), 0);
			assert_world(&cr);
			if (src == FW_FLEET_CENSUS_READ)
				reads++;
			else
				taken_by[i]++;
			assert_int_equal(calls(MS_LIST) - lists, src != FW_FLEET_CENSUS_READ);
			oldest = FW_MAX(oldest, clock_unix - cr.at);
		}
	}
	/* n00 counted every period while it asked, then one other node did */
	assert_int_equal(taken_by[0], STOP_AT);
	uint32_t others = 0, takers = 0;
	for (int i = 1; i < NODES; i++) {
		others += taken_by[i];
		takers += taken_by[i] > 0;
	}
	print_message("censuses: %u by n00, %u by %u other node(s); %u reads; oldest %.1f s\n",
		      taken_by[0], others, takers, reads, oldest / 1000.0);
	assert_int_equal(takers, 1);
	assert_true(others >= PERIODS - STOP_AT - 1 && others <= PERIODS - STOP_AT);
	assert_int_equal(calls(MS_LIST), taken_by[0] + others);
	assert_int_equal(calls(MS_META_GET), reads + taken_by[0] + others);
	assert_true(oldest <= 2 * PERIOD);
	for (int i = 0; i < NODES; i++)
		node_close(&n[i]);
}

/* A record older than a period and a half (a node gone): counted again, CAS at its version. */
static void test_stale_recomputed(void **state)
{
	(void)state;
	struct node b;
	struct fw_fleet_census_rec cr = {.at = 0, .by = "x"}, out, have;
	enum fw_fleet_census_src src;
	char buf[FW_FLEET_REC_MAX];
	int64_t v0;
	node_open(&b, "b");
	world();
	cr.at = clock_unix - 2 * PERIOD;
	cr.c = (struct fw_fleet_census){.total = 16, .free = 16};
	fw_fleet_census_format(buf, sizeof(buf), &cr);
	memsrv_set_meta(M, KEY, buf);
	struct fw_fleet_ver v;
	int len;
	assert_int_equal(b.r.store->ops->meta_get(b.r.store, KEY, buf, &len, &v), 0);
	v0 = v.version;
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_census_shared(&b.r, "/t", PERIOD, PERIOD / 2 - 1, &out, &src), 0);
	assert_int_equal(src, FW_FLEET_CENSUS_TAKEN);
	assert_world(&out); /* not the stale 16 free */
	assert_int_equal(calls(MS_LIST), 1);
	assert_int_equal(calls(MS_META_CAS), 1); /* at the version read */
	assert_int_equal(calls(MS_META_CREATE), 0);
	assert_int_equal(b.r.store->ops->meta_get(b.r.store, KEY, buf, &len, &v), 0);
	assert_true(v.version != v0);
	assert_int_equal(fw_fleet_census_parse(buf, len, &have), 0);
	assert_string_equal(have.by, "b");
	assert_world(&have);
	/* a garbled record: the same */
	memsrv_set_meta(M, KEY, "flakewire-census v1\nat=1\n");
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_census_shared(&b.r, "/t", PERIOD, 0, &out, &src), 0);
	assert_int_equal(src, FW_FLEET_CENSUS_TAKEN);
	assert_int_equal(calls(MS_META_CAS), 1);
	assert_int_equal(b.r.store->ops->meta_get(b.r.store, KEY, buf, &len, &v), 0);
	assert_int_equal(fw_fleet_census_parse(buf, len, &have), 0);
	assert_world(&have);
	node_close(&b);
}

/* The winner's record, written while the loser counted (inside its list). */
static const struct fw_fleet_store_ops *real_ops;
static struct fw_fleet_store_ops racing_ops;

static int list_while_another_writes(struct fw_fleet_store *s, bool *exists, uint32_t total)
{
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_census_rec w = {.at = clock_unix, .by = "winner"};
	w.c = (struct fw_fleet_census){.total = 16, .free = 15, .held = 1};
	fw_fleet_census_format(buf, sizeof(buf), &w);
	memsrv_set_meta(M, KEY, buf);
	return real_ops->list(s, exists, total);
}

/* Two nodes count at once: the one whose write loses (S1 or S2) exports the winner's. */
static void test_lost_write_reads_the_winner(void **state)
{
	(void)state;
	struct node b;
	struct fw_fleet_census_rec out, stale = {.by = "x"};
	enum fw_fleet_census_src src;
	char buf[FW_FLEET_REC_MAX];
	node_open(&b, "b");
	world();
	real_ops = b.r.store->ops;
	racing_ops = *real_ops;
	racing_ops.list = list_while_another_writes;
	b.r.store->ops = &racing_ops;
	/* absent when read: the create loses */
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_census_shared(&b.r, "/t", PERIOD, 0, &out, &src), 0);
	assert_int_equal(src, FW_FLEET_CENSUS_WINNER);
	assert_int_equal(calls(MS_META_CREATE), 1);
	assert_int_equal(calls(MS_META_GET), 2); /* then the winner's read */
	assert_string_equal(out.by, "winner");
	assert_int_equal(out.c.free, 15);
	/* stale when read: the CAS loses */
	stale.at = clock_unix - 3 * PERIOD;
	stale.c = (struct fw_fleet_census){.total = 16, .free = 16};
	fw_fleet_census_format(buf, sizeof(buf), &stale);
	memsrv_set_meta(M, KEY, buf);
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_census_shared(&b.r, "/t", PERIOD, 0, &out, &src), 0);
	assert_int_equal(src, FW_FLEET_CENSUS_WINNER);
	assert_int_equal(calls(MS_META_CAS), 1);
	assert_string_equal(out.by, "winner");
	assert_int_equal(out.c.free, 15);
	/* the store down: its code, nothing exported */
	b.r.store->ops = real_ops;
	memsrv_set_meta(M, KEY, NULL);
	memsrv_calls_reset(M);
	memsrv_down(M, true);
	assert_int_equal(fw_fleet_census_shared(&b.r, "/t", PERIOD, 0, &out, &src), -ENOTCONN);
	memsrv_down(M, false);
	node_close(&b);
}

/* ---- over the registry ---- */

static void cfg_for(struct fw_fleet_config *c, const char *identity)
{
	fw_fleet_config_default(c);
	c->root = "/t";
	c->identity = identity;
	c->cache_file = "";
	c->layout = layout();
	c->lease_ms = 600000;
	c->renew_ms = 100;
	c->session_timeout_ms = 100;
	c->start_wait_ms = 100;
	c->now_ms = test_clock;
}

static struct fw_fleet *start(const char *identity, uint32_t n)
{
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	char err[2048];
	cfg_for(&c, identity);
	assert_int_equal(fw_fleet_create_store(&c, n, memsrv_client(M), &f, err, sizeof(err)), 0);
	int rc = fw_fleet_start(f, NULL, err, sizeof(err));
	if (rc != 0)
		fail_msg("start %s: %d: %s", identity, rc, err);
	return f;
}

static void make_root(void)
{
	struct fw_fleet_config c;
	char err[512];
	struct fw_fleet_store *s = memsrv_client(M);
	cfg_for(&c, "init");
	assert_int_equal(fw_fleet_init_store(s, "/t", &c.layout, 0, NULL, 100, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	s->ops->free(s);
}

static struct fw_fleet_census_rec census_record(void)
{
	struct fw_fleet_store *s = memsrv_client(M);
	struct fw_fleet_census_rec cr;
	struct fw_fleet_ver v;
	char buf[FW_FLEET_REC_MAX];
	int len = 0;
	assert_int_equal(s->ops->connect(s, 100), 0);
	assert_int_equal(s->ops->meta_get(s, KEY, buf, &len, &v), 0);
	assert_int_equal(fw_fleet_census_parse(buf, len, &cr), 0);
	s->ops->free(s);
	return cr;
}

/*
 * A start's census comes from its claim's scan: each worker record read
 * once (the scan), one liveness list, no liveness read per owner; its
 * gauges count its own claims, and it writes the census for the others.
 */
static void test_start_counts_on_its_scan(void **state)
{
	(void)state;
	make_root();
	world();
	memsrv_calls_reset(M);
	struct fw_fleet *c = start("c", 2); /* claims 5 (released) and 7 (new) */
	assert_int_equal(calls(MS_GET), 7); /* the scan's reads, no second round */
	assert_int_equal(calls(MS_LIST), 1);
	assert_int_equal(calls(MS_ALIVE_OF), 0);
	assert_int_equal(calls(MS_ALIVE_LIST), 1);
	struct fw_fleet_status st;
	fw_fleet_status(c, &st);
	assert_true(st.census_valid);
	assert_int_equal(st.total_ids, 16);
	assert_int_equal(st.free_ids, 11 - 2);
	assert_int_equal(st.stranded_ids, 1);
	assert_int_equal(st.next_stranded_unix, t_world + 3600000);
	assert_int_equal(st.censuses, 1);
	struct fw_fleet_census_rec cr = census_record();
	assert_string_equal(cr.by, "c");
	assert_int_equal(cr.c.free, 9);
	assert_int_equal(cr.c.held, 6);
	/* the next start counts c's claims and its own, and replaces the record */
	clock_unix += 5000; /* both clocks: a later scan (one of the same ms replaces nothing) */
	memsrv_time_offset(M, 5000);
	struct fw_fleet *d = start("d", 1);
	fw_fleet_status(d, &st);
	assert_int_equal(st.free_ids, 8);
	cr = census_record();
	assert_string_equal(cr.by, "d");
	assert_int_equal(cr.c.free, 8);
	assert_int_equal(cr.c.held, 7);
	fw_fleet_free(c);
	fw_fleet_free(d);
}

/* `flakectl fleet ls`: the liveness of every owner in one request. */
static void test_ls_one_liveness_request(void **state)
{
	(void)state;
	make_root();
	world();
	struct fw_fleet_store *s = memsrv_client(M);
	struct fw_fleet_list l;
	char err[512];
	memsrv_calls_reset(M);
	assert_int_equal(fw_fleet_list_store(s, "/t", 100, &l, err, sizeof(err)), 0);
	assert_int_equal(calls(MS_ALIVE_LIST), 1);
	assert_int_equal(calls(MS_ALIVE_OF), 0);
	assert_int_equal(calls(MS_GET), 7);
	assert_int_equal(l.n, 7);
	for (uint32_t i = 0; i < l.n; i++)
		assert_int_equal(l.v[i].alive, l.v[i].worker < 4); /* p's and q's */
	assert_int_equal(l.free_ids, 11);
	assert_int_equal(l.stranded_ids, 1);
	fw_fleet_list_free(&l);
	s->ops->free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_record_text),
		T(test_fresh_rule),
		T(test_second_node_reads_the_first),
		T(test_one_census_per_period),
		T(test_stale_recomputed),
		T(test_lost_write_reads_the_winner),
		T(test_start_counts_on_its_scan),
		T(test_ls_one_liveness_request),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/fleet's pure parts, no store: the records' text (every field, every
 * way a record is garbled), the layout record, the keys, identities, the
 * cache file (round trip, and each refusal with its reason), and the
 * backoff bounds.
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

#include "fw_err.h"
#include "fw_fleet_cache.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_registry.h"

static void test_rec_round_trip(void **state)
{
	(void)state;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_rec r = {.token = 0x0123456789abcdefull, .lease = 99, .floor = 7}, back;
	snprintf(r.owner, sizeof(r.owner), "node-a:1");
	int n = fw_fleet_rec_format(buf, sizeof(buf), &r);
	assert_true(n > 0);
	assert_string_equal(buf, "flakewire-worker v1\nowner=node-a:1\ntoken=0123456789abcdef\n"
				 "lease_until=99\nfloor=7\n");
	assert_int_equal(fw_fleet_rec_parse(buf, n, &back), 0);
	assert_memory_equal(&r, &back, sizeof(r));
	/* free: owner empty */
	r.owner[0] = '\0';
	n = fw_fleet_rec_format(buf, sizeof(buf), &r);
	assert_int_equal(fw_fleet_rec_parse(buf, n, &back), 0);
	assert_string_equal(back.owner, "");
	assert_int_equal(fw_fleet_rec_format(buf, 20, &r), -ENOSPC);
}

static void test_rec_garbled(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",
		"flakewire-worker v2\nowner=a\ntoken=1\nlease_until=1\nfloor=1\n",
		"flakewire-worker v1\ntoken=1\nlease_until=1\nfloor=1\n", /* no owner */
		"flakewire-worker v1\nowner=a\nlease_until=1\nfloor=1\n", /* no token */
		"flakewire-worker v1\nowner=a\ntoken=1\nfloor=1\n",       /* no lease */
		"flakewire-worker v1\nowner=a\ntoken=1\nlease_until=1\n", /* no floor */
		"flakewire-worker v1\nowner=a\ntoken=1\nlease_until=x\nfloor=1\n",
		"flakewire-worker v1\nowner=a\ntoken=1\nlease_until=-5\nfloor=1\n",
		"flakewire-worker v1\nowner=a\ntoken=1\nlease_until=1\nfloor=1x\n",
		"flakewire-worker v1\nowner=a\ntoken=zz\nlease_until=1\nfloor=1\n",
		"flakewire-worker v1\nowner=a\ngarbage\nlease_until=1\nfloor=1\n",
		"flakewire-worker "
		"v1\nowner=a\ntoken=1\nlease_until=99999999999999999999\nfloor=1\n",
	};
	struct fw_fleet_rec r;
	for (size_t i = 0; i < FW_ARRAY_SIZE(bad); i++) {
		if (fw_fleet_rec_parse(bad[i], (int)strlen(bad[i]), &r) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	}
	char big[FW_FLEET_REC_MAX + 200];
	int n = snprintf(big, sizeof(big), "flakewire-worker v1\nowner=");
	memset(big + n, 'a', FW_FLEET_IDENTITY_MAX);
	n += FW_FLEET_IDENTITY_MAX;
	n += snprintf(big + n, sizeof(big) - (size_t)n, "\ntoken=1\nlease_until=1\nfloor=1\n");
	assert_int_equal(fw_fleet_rec_parse(big, n, &r), -EINVAL); /* owner too long */
	assert_int_equal(fw_fleet_rec_parse(big, FW_FLEET_REC_MAX + 1, &r), -EINVAL);
	assert_int_equal(fw_fleet_rec_parse(big, -1, &r), -EINVAL);
}

/* The liveness record (issue 49): its text, and what proves nothing. */
static void test_alive_text(void **state)
{
	(void)state;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_alive a = {4242, 0x0123456789abcdefull, 0xfedcba9876543210ull, "2049:17:b"},
			      back;
	int n = fw_fleet_alive_format(buf, sizeof(buf), &a);
	assert_string_equal(buf, "pid=4242\ntoken=0123456789abcdef\nprocess=fedcba9876543210\n"
				 "state=2049:17:b\n");
	assert_int_equal(fw_fleet_alive_parse(buf, n, &back), 0);
	assert_memory_equal(&a, &back, sizeof(a));
	a.state[0] = '\0'; /* no state: a record nothing replaces */
	n = fw_fleet_alive_format(buf, sizeof(buf), &a);
	assert_int_equal(fw_fleet_alive_parse(buf, n, &back), 0);
	assert_string_equal(back.state, "");
	snprintf(a.state, sizeof(a.state), "a\nstate=b");
	assert_int_equal(fw_fleet_alive_format(buf, sizeof(buf), &a), -ENOSPC);
	assert_int_equal(fw_fleet_alive_format(buf, 20, &back), -ENOSPC);
	static const char *const bad[] = {
		"pid=1\n", /* before issue 49 */
		"",
		"pid=1\ntoken=1\nprocess=1\n", /* no state */
		"pid=1\ntoken=1\nstate=s\n",   /* no process */
		"pid=1\nprocess=1\nstate=s\n", /* no token */
		"token=1\nprocess=1\nstate=s\n",
		"pid=x\ntoken=1\nprocess=1\nstate=s\n",
		"pid=1\ntoken=-1\nprocess=1\nstate=s\n",
		"pid=1\ntoken=1\nprocess=1\nstate=s\ngarbage\n",
	};
	for (size_t i = 0; i < FW_ARRAY_SIZE(bad); i++)
		if (fw_fleet_alive_parse(bad[i], (int)strlen(bad[i]), &back) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	assert_int_equal(fw_fleet_alive_parse(buf, -1, &back), -EINVAL);
}

static void test_layout(void **state)
{
	(void)state;
	char buf[FW_FLEET_REC_MAX];
	struct fw_layout l = {.epoch_ms = 1767225600000ull,
			      .dc_bits = 5,
			      .worker_bits = 5,
			      .seq_bits = 12,
			      .time_bits = 41},
			 back;
	int n = fw_fleet_layout_format(buf, sizeof(buf), &l);
	assert_int_equal(fw_fleet_layout_parse(buf, n, &back), 0);
	assert_true(fw_fleet_layout_same(&l, &back));
	assert_int_equal(back.time_bits, 41);
	struct fw_layout other = l;
	other.worker_bits = 4;
	assert_false(fw_fleet_layout_same(&l, &other));
	other = l;
	other.epoch_ms++;
	assert_false(fw_fleet_layout_same(&l, &other));
	assert_int_equal(fw_fleet_layout_parse("hello", 5, &back), -EINVAL);
	assert_int_equal(fw_fleet_layout_parse(buf, 0, &back), -EINVAL);
	const char *wide = "flakewire-fleet v1\nepoch_ms=1\ndatacenter_bits=30\nworker_bits=30\n"
			   "sequence_bits=12\n";
	assert_int_equal(fw_fleet_layout_parse(wide, (int)strlen(wide), &back), -EINVAL);
	/* garbage a store can hold (issue 33): a sum that wraps to 63, widths no layout
	 * allows (worker_bits 40 would make `1u << worker_bits` undefined), no sequence */
	static const char *const garbage[] = {
		"flakewire-fleet v1\nepoch_ms=1\ndatacenter_bits=4294967295\nworker_bits=10\n"
		"sequence_bits=54\n",
		"flakewire-fleet v1\nepoch_ms=1\ndatacenter_bits=0\nworker_bits=40\n"
		"sequence_bits=12\n",
		"flakewire-fleet v1\nepoch_ms=1\ndatacenter_bits=0\nworker_bits=10\n"
		"sequence_bits=0\n",
		"flakewire-fleet v1\nepoch_ms=1\ndatacenter_bits=20\nworker_bits=10\n"
		"sequence_bits=12\n",
		"flakewire-fleet v1\nepoch_ms=1\ndatacenter_bits=0\nworker_bits=16\n"
		"sequence_bits=22\n", /* 25 time bits */
	};
	for (size_t i = 0; i < FW_ARRAY_SIZE(garbage); i++)
		if (fw_fleet_layout_parse(garbage[i], (int)strlen(garbage[i]), &back) != -EINVAL)
			fail_msg("layout record %zu accepted:\n%s", i, garbage[i]);
}

static void test_keys_identity(void **state)
{
	(void)state;
	char k[128];
	fw_fleet_key_worker(k, sizeof(k), "/flakewire/dc1", 42);
	assert_string_equal(k, "/flakewire/dc1/workers/00042");
	fw_fleet_key_node(k, sizeof(k), "/flakewire/dc1", "node-a");
	assert_string_equal(k, "/flakewire/dc1/nodes/node-a");
	fw_fleet_key_sub(k, sizeof(k), "/r", "clock");
	assert_string_equal(k, "/r/clock");
	assert_int_equal(fw_fleet_key_worker_parse("00042", 1024), 42);
	assert_int_equal(fw_fleet_key_worker_parse("01024", 1024), -1);
	assert_int_equal(fw_fleet_key_worker_parse("4x", 1024), -1);
	assert_int_equal(fw_fleet_key_worker_parse("-1", 1024), -1);
	assert_int_equal(fw_fleet_key_worker_parse("", 1024), -1);
	assert_true(fw_fleet_identity_ok("node-a.dc1_2:x"));
	assert_false(fw_fleet_identity_ok(""));
	assert_false(fw_fleet_identity_ok("."));
	assert_false(fw_fleet_identity_ok(".."));
	assert_false(fw_fleet_identity_ok("a/b"));
	assert_false(fw_fleet_identity_ok("a b"));
	char longer[FW_FLEET_IDENTITY_MAX + 1];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_false(fw_fleet_identity_ok(longer));
	longer[FW_FLEET_IDENTITY_MAX - 1] = '\0';
	assert_true(fw_fleet_identity_ok(longer));
}

static char cache_path[256];

static const struct fw_fleet_cache_of *cache_of(void)
{
	static struct fw_fleet_cache_of of;
	of = (struct fw_fleet_cache_of){
		"/r",
		"node-a",
		{.epoch_ms = 1767225600000ull, .worker_bits = 4, .seq_bits = 12, .time_bits = 47},
		"8:1234:boot-a"};
	return &of;
}

static void write_file(const char *text)
{
	FILE *f = fopen(cache_path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_cache_round_trip(void **state)
{
	(void)state;
	struct fw_fleet_held s[3] = {{5, 123456789012ll, 1000, 10, false, false,
				      0xfedcba9876543210ull},
				     {FW_FLEET_WORKER_NONE, 0, 0, 0, false, false, 0},
				     {15, 0, 2000, 0, true, false, 7}},
			     back[3];
	assert_int_equal(fw_fleet_cache_write(cache_path, cache_of(), 1767225600123ull, s, 3), 0);
	for (int i = 0; i < 3; i++)
		back[i].worker = FW_FLEET_WORKER_NONE;
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), NULL, back, 3), 2);
	assert_int_equal(back[0].worker, 5);
	assert_int_equal(back[0].version, 123456789012ll);
	assert_int_equal(back[0].lease, 1000);
	assert_int_equal(back[0].floor, 10);
	assert_true(back[0].cached);
	assert_true(back[0].token == 0xfedcba9876543210ull); /* the proof of a take-back */
	assert_int_equal(back[1].worker, FW_FLEET_WORKER_NONE);
	assert_int_equal(back[2].worker, 15);
	assert_false(back[2].lost); /* a lost ID's limit is in its lease: no flag kept */
	uint64_t mark = 0;
	for (int i = 0; i < 3; i++)
		back[i].worker = FW_FLEET_WORKER_NONE;
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), &mark, back, 3), 2);
	assert_true(mark == 1767225600123ull); /* the mark the state held when written */
	/* fewer slots now: the others are ignored */
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), NULL, back, 1), 1);
	/* no temp file left behind */
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", cache_path);
	assert_int_equal(access(tmp, F_OK), -1);
}

static void test_cache_refused(void **state)
{
	(void)state;
	struct fw_fleet_held s[2];
	unlink(cache_path);
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), NULL, s, 2), -ENOENT);
	assert_non_null(strstr(fw_fleet_cache_why(-ENOENT), "does not exist"));

	const char *head = "flakewire-fleet-cache v2\nroot=/r\nidentity=node-a\n"
			   "layout=1767225600000/0/4/12\nstate=8:1234:boot-a\n";
	char text[1024];
	/* another identity, root, layout, state (a copied directory: another inode;
	 * a clone: another boot), or the format without states: nothing loaded */
	static const char *const other[] = {
		"flakewire-fleet-cache v2\nroot=/r\nidentity=node-b\nlayout=1767225600000/0/4/12\n"
		"state=8:1234:boot-a\n",
		"flakewire-fleet-cache v2\nroot=/x\nidentity=node-a\nlayout=1767225600000/0/4/12\n"
		"state=8:1234:boot-a\n",
		"flakewire-fleet-cache v2\nroot=/r\nidentity=node-a\nlayout=1767225600000/0/5/12\n"
		"state=8:1234:boot-a\n",
		"flakewire-fleet-cache v2\nroot=/r\nidentity=node-a\nlayout=1767225600000/0/4/12\n"
		"state=8:9999:boot-a\n",
		"flakewire-fleet-cache v2\nroot=/r\nidentity=node-a\nlayout=1767225600000/0/4/12\n"
		"state=8:1234:boot-b\n",
		"flakewire-fleet-cache v1\nroot=/r\nidentity=node-a\nlayout=1767225600000/0/4/12\n",
	};
	for (size_t i = 0; i < FW_ARRAY_SIZE(other); i++) {
		snprintf(text, sizeof(text),
			 "%sslot=0 worker=1 version=1 lease_until=9 floor=0 "
			 "token=0000000000000007\n",
			 other[i]);
		write_file(text);
		s[0].worker = FW_FLEET_WORKER_NONE;
		assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), NULL, s, 2), -ESTALE);
		assert_int_equal(s[0].worker, FW_FLEET_WORKER_NONE);
	}
	assert_non_null(
		strstr(fw_fleet_cache_why(-ESTALE), "another root, identity, layout or state"));
	/* no state of this process's own (no lock): no cache is ours */
	snprintf(text, sizeof(text), "%sslot=0 worker=1 version=1 lease_until=9 floor=0 token=07\n",
		 head);
	write_file(text);
	struct fw_fleet_cache_of none = *cache_of();
	none.stamp = "";
	assert_int_equal(fw_fleet_cache_read(cache_path, &none, NULL, s, 2), -ESTALE);
	/* garbled: every slot cleared, with its reason */
	static const char *const lines[] = {
		"slot=0 worker=1 version=1 lease_until=9\n",                  /* truncated */
		"slot=0 worker=1 version=1 lease_until=9 floor=0\n",          /* no token */
		"slot=0 worker=16 version=1 lease_until=9 floor=0 token=1\n", /* outside the layout
									       */
		"slot=0 worker=-1 version=1 lease_until=9 floor=0 token=1\n",
		"hello\n",
	};
	for (size_t i = 0; i < FW_ARRAY_SIZE(lines); i++) {
		snprintf(text, sizeof(text),
			 "%sslot=1 worker=2 version=1 lease_until=9 floor=0 token=1\n%s", head,
			 lines[i]);
		write_file(text);
		assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), NULL, s, 2),
				 FW_ESTATE_CORRUPT);
		assert_int_equal(s[0].worker, FW_FLEET_WORKER_NONE);
		assert_int_equal(s[1].worker, FW_FLEET_WORKER_NONE);
	}
	write_file("not a cache\n");
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), NULL, s, 2),
			 FW_ESTATE_CORRUPT);
	assert_non_null(strstr(fw_fleet_cache_why(FW_ESTATE_CORRUPT), "garbled"));
	unlink(cache_path);
}

/*
 * The mark line (issue 48): v3 records the mark; a v2 file, written before
 * the line existed, is read as before with no mark (FW_FLEET_CACHE_NO_MARK);
 * a v3 file without its mark line, or with a bad one, is garbled.
 */
static void test_cache_mark_line(void **state)
{
	(void)state;
	struct fw_fleet_held s[2];
	uint64_t mark = 0;
	const char *who = "root=/r\nidentity=node-a\nlayout=1767225600000/0/4/12\n"
			  "state=8:1234:boot-a\n";
	const char *slot = "slot=0 worker=3 version=1 lease_until=9 floor=0 token=07\n";
	char text[1024];
	snprintf(text, sizeof(text), "flakewire-fleet-cache v2\n%s%s", who, slot);
	write_file(text);
	s[0].worker = FW_FLEET_WORKER_NONE;
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), &mark, s, 2), 1);
	assert_int_equal(s[0].worker, 3);
	assert_true(mark == FW_FLEET_CACHE_NO_MARK);
	snprintf(text, sizeof(text), "flakewire-fleet-cache v3\n%smark=42\n%s", who, slot);
	write_file(text);
	assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), &mark, s, 2), 1);
	assert_true(mark == 42);
	static const char *const bad[] = {"", "mark=\n", "mark=x\n", "mark=12 \n",
					  "mark=18446744073709551615\n"};
	for (size_t i = 0; i < FW_ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "flakewire-fleet-cache v3\n%s%s%s", who, bad[i], slot);
		write_file(text);
		assert_int_equal(fw_fleet_cache_read(cache_path, cache_of(), &mark, s, 2),
				 FW_ESTATE_CORRUPT);
		assert_true(mark == FW_FLEET_CACHE_NO_MARK);
	}
	/* a write records the mark and the v3 magic */
	struct fw_fleet_held h = {3, 1, 9, 0, false, false, 7};
	assert_int_equal(fw_fleet_cache_write(cache_path, cache_of(), 77, &h, 1), 0);
	FILE *f = fopen(cache_path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "flakewire-fleet-cache v3\n");
	assert_int_equal(
		fw_fleet_cache_write(cache_path, cache_of(), FW_FLEET_CACHE_NO_MARK, &h, 1),
		-EINVAL);
	assert_non_null(strstr(fw_fleet_cache_why(FW_FLEET_CACHE_MARK_BELOW), "below the mark"));
	unlink(cache_path);
}

static void test_backoff_bounds(void **state)
{
	(void)state;
	for (uint32_t fails = 1; fails < 40; fails++) {
		uint64_t b = 250ull << (fails - 1 < 12 ? fails - 1 : 12);
		if (b > 60000)
			b = 60000;
		uint64_t lo = UINT64_MAX, hi = 0;
		for (uint64_t rnd = 0; rnd < 70000; rnd += 7) {
			uint64_t w = fw_fleet_backoff_ms(fails, 60000, rnd * 2654435761u);
			lo = w < lo ? w : lo;
			hi = w > hi ? w : hi;
		}
		if (lo < b - b / 4 || hi >= b - b / 4 + b / 2)
			fail_msg("fails %u: [%llu, %llu] outside [%llu, %llu)", fails,
				 (unsigned long long)lo, (unsigned long long)hi,
				 (unsigned long long)(b - b / 4),
				 (unsigned long long)(b - b / 4 + b / 2));
		assert_true(hi > lo); /* jitter */
	}
	/* first retry fast, never above the renew interval plus its jitter */
	assert_true(fw_fleet_backoff_ms(1, 60000, 0) < 250);
	assert_true(fw_fleet_backoff_ms(100, 500, ~0ull) < 625);
}

/* Liveness for the census test: "alive" only; counts the questions. */
static int asked;
static int census_alive(void *arg, const char *owner, bool *alive)
{
	(void)arg;
	asked++;
	if (!strcmp(owner, "down"))
		return -ENOTCONN;
	*alive = !strcmp(owner, "alive");
	return 0;
}

/*
 * The census a node's gauges and `flakectl fleet ls` share (issue 50): the
 * root's reserved IDs are neither claimable nor free, whatever their
 * records; a garbled record is never free; only a running lease asks about
 * its owner; a failing liveness read counts nothing.
 */
static void test_census(void **state)
{
	(void)state;
	struct fw_fleet_reserve res;
	struct fw_fleet_census c;
	assert_int_equal(fw_fleet_reserve_parse("0-1,9", 16, &res), 0);
	fw_fleet_census_init(&c);
	const uint64_t now = 1000;
	struct {
		int rc;
		const char *owner;
		uint64_t lease;
	} w[16] = {
		[0] = {-ENOENT, "", 0},   /* reserved, no record */
		[1] = {0, "alive", 5000}, /* reserved, a record: still not counted */
		[2] = {-ENOENT, "", 0},   /* never claimed: free */
		[3] = {0, "", 900},       /* released: free */
		[4] = {0, "gone", 999},   /* lease ended: free */
		[5] = {0, "alive", 1000}, /* running (ends at now): held */
		[6] = {0, "gone", 3000},  /* no live session: stranded */
		[7] = {0, "gone", 2000},  /* stranded, the first back */
		[8] = {-EINVAL, "", 0},   /* garbled: never free */
		[9] = {-ENOENT, "", 0},   /* reserved */
	};
	for (uint32_t i = 10; i < 16; i++)
		w[i].rc = -ENOENT;
	for (uint32_t i = 0; i < 16; i++) {
		struct fw_fleet_rec r = {.lease = w[i].lease, .token = 1};
		snprintf(r.owner, sizeof(r.owner), "%s", w[i].owner);
		assert_int_equal(
			fw_fleet_census_add(&c, &res, i, w[i].rc, &r, now, census_alive, NULL), 0);
	}
	assert_int_equal(c.reserved, 3);
	assert_int_equal(c.total, 13);
	assert_int_equal(c.free, 3 + 6); /* 2, 3, 4 and 10-15 */
	assert_int_equal(c.held, 1);
	assert_int_equal(c.stranded, 2);
	assert_int_equal(c.garbled, 1);
	assert_int_equal(c.next_stranded, 2000);
	assert_int_equal(asked, 3); /* 5, 6, 7 */
	assert_int_equal(c.total, c.free + c.held + c.stranded + c.garbled);
	/* the owner's liveness unknown: an error, nothing counted */
	struct fw_fleet_rec d = {.owner = "down", .lease = 5000};
	assert_int_equal(fw_fleet_census_add(&c, &res, 10, 0, &d, now, census_alive, NULL),
			 -ENOTCONN);
	assert_int_equal(c.total, 13);
	/* no reservation: every ID counts */
	fw_fleet_census_init(&c);
	for (uint32_t i = 0; i < 4; i++)
		fw_fleet_census_add(&c, NULL, i, -ENOENT, &d, now, census_alive, NULL);
	assert_int_equal(c.total, 4);
	assert_int_equal(c.free, 4);
	assert_int_equal(c.reserved, 0);
	assert_int_equal(c.next_stranded, UINT64_MAX);
}

int main(void)
{
	snprintf(cache_path, sizeof(cache_path), "/tmp/fwt-fleet-cache.%d", (int)getpid());
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rec_round_trip), cmocka_unit_test(test_rec_garbled),
		cmocka_unit_test(test_alive_text),     cmocka_unit_test(test_layout),
		cmocka_unit_test(test_keys_identity),  cmocka_unit_test(test_cache_round_trip),
		cmocka_unit_test(test_cache_refused),  cmocka_unit_test(test_cache_mark_line),
		cmocka_unit_test(test_backoff_bounds), cmocka_unit_test(test_census),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

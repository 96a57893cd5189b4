/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_serve.h"

#define NOW 500000u
#define CAP 2048

static struct fw_serve srv;
static uint8_t buf[CAP];

static void setup_serve(uint32_t borrow)
{
	struct fw_layout l;
	struct fw_gen_config gc;
	fw_layout_default(&l);
	fw_gen_config_default(&gc);
	gc.worker = 9;
	gc.max_borrow_ms = borrow;
	assert_int_equal(fw_serve_init(&srv, &l, &gc, NULL), 0);
	fw_gen_set_mark(&srv.gen, NOW + 1000);
}

/* Sends a request of @op/@count padded to @len (0: the client's padded size). */
static int ask(uint8_t op, uint16_t count, size_t len, bool trusted, uint64_t now,
	       struct fw_wire_reply *r)
{
	memset(buf, 0, sizeof(buf));
	int n = fw_wire_write_request(buf, sizeof(buf), op, count, 0xabcdef, false);
	assert_true(n == FW_WIRE_HDR_LEN);
	if (len == 0)
		len = fw_wire_request_size(op, count);
	int out = fw_serve_answer(&srv, now, buf, len, sizeof(buf), trusted);
	if (out > 0) {
		if (!trusted)
			assert_true((size_t)out <= len);
		assert_int_equal(fw_wire_parse_reply(buf, (size_t)out, r), 0);
		assert_int_equal(r->hdr.tag, 0xabcdef);
		assert_int_equal(r->hdr.op, op | FW_WIRE_OP_REPLY);
		assert_int_equal(r->hdr.worker, 9);
	}
	return out;
}

static void single_id_trusted_and_padded(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(4);
	assert_int_equal(ask(FW_WIRE_OP_ID, 1, FW_WIRE_HDR_LEN, true, NOW, &r), 32);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	assert_int_equal(r.hdr.count, 1);
	assert_int_equal(r.body.ids[0] >> 22, NOW);
	assert_int_equal((r.body.ids[0] >> 12) & 1023, 9);
	uint64_t first = r.body.ids[0];
	assert_int_equal(ask(FW_WIRE_OP_ID, 1, 0, false, NOW, &r), 32);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	assert_true(r.body.ids[0] > first);
	assert_int_equal(srv.stats.ids, 2);
	assert_int_equal(srv.stats.ops[FW_WIRE_OP_ID], 2);
}

static void unpadded_untrusted_single_is_refused(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(4);
	assert_int_equal(ask(FW_WIRE_OP_ID, 1, FW_WIRE_HDR_LEN, false, NOW, &r), FW_WIRE_HDR_LEN);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_REFUSED);
	assert_int_equal(srv.stats.ids, 0);
	assert_int_equal(srv.stats.status[FW_WIRE_ST_REFUSED], 1);
}

static void list_full_and_shrunk_to_request(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(4);
	assert_int_equal(ask(FW_WIRE_OP_LIST, FW_WIRE_LIST_MAX, FW_WIRE_HDR_LEN, true, NOW, &r),
			 FW_WIRE_HDR_LEN + 8 * FW_WIRE_LIST_MAX);
	assert_int_equal(r.hdr.count, FW_WIRE_LIST_MAX);
	for (int i = 1; i < FW_WIRE_LIST_MAX; i++)
		assert_true(r.body.ids[i] > r.body.ids[i - 1]);
	assert_false(r.hdr.flags & FW_WIRE_F_PARTIAL);

	/* Untrusted, room for 10 IDs: 10 IDs, flagged partial. */
	assert_int_equal(ask(FW_WIRE_OP_LIST, 100, FW_WIRE_HDR_LEN + 80, false, NOW, &r),
			 FW_WIRE_HDR_LEN + 80);
	assert_int_equal(r.hdr.count, 10);
	assert_true(r.hdr.flags & FW_WIRE_F_PARTIAL);
	assert_int_equal(srv.stats.partial, 1);
}

static void range_spans_milliseconds_in_several_ranges(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(4);
	assert_true(ask(FW_WIRE_OP_RANGE, 10000, 0, false, NOW, &r) > 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	assert_int_equal(r.hdr.count, 3);
	uint32_t total = 0;
	uint64_t last = 0;
	for (int i = 0; i < r.hdr.count; i++) {
		uint64_t first = r.body.ranges[i].first, end = first + r.body.ranges[i].n - 1;
		assert_true(first > last);
		assert_int_equal(first >> 22, end >> 22);
		total += r.body.ranges[i].n;
		last = end;
	}
	assert_int_equal(total, 10000);
	assert_true(r.hdr.flags & FW_WIRE_F_BORROWED);
	assert_int_equal(srv.stats.ids, 10000);

	/* Room for a single range: one range, partial. NOW + 10's sequence goes
	 * on from where NOW + 2's stopped (10000 - 2 * 4096 = 1808, fw_gen.h). */
	assert_int_equal(ask(FW_WIRE_OP_RANGE, 5000, FW_WIRE_HDR_LEN + 12, false, NOW + 10, &r),
			 FW_WIRE_HDR_LEN + 12);
	assert_int_equal(r.hdr.count, 1);
	assert_int_equal(r.body.ranges[0].n, 4096 - 1808);
	assert_int_equal(r.body.ranges[0].first & 4095, 1808);
	assert_true(r.hdr.flags & FW_WIRE_F_PARTIAL);
}

static void range_count_capped_by_config(void **state)
{
	(void)state;
	struct fw_layout l;
	struct fw_gen_config gc;
	struct fw_serve_config sc;
	struct fw_wire_reply r;
	fw_layout_default(&l);
	fw_gen_config_default(&gc);
	gc.worker = 9;
	fw_serve_config_default(&sc);
	sc.range_ids_max = 1000;
	assert_int_equal(fw_serve_init(&srv, &l, &gc, &sc), 0);
	fw_gen_set_mark(&srv.gen, NOW + 1000);
	assert_true(ask(FW_WIRE_OP_RANGE, 5000, 0, true, NOW, &r) > 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	assert_int_equal(r.hdr.count, 1);
	assert_int_equal(r.body.ranges[0].n, 1000);
	assert_true(r.hdr.flags & FW_WIRE_F_PARTIAL);
	assert_int_equal(srv.stats.capped, 1);
	assert_int_equal(srv.stats.ids, 1000);
	/* at or below the cap: neither capped nor partial */
	assert_true(ask(FW_WIRE_OP_RANGE, 1000, 0, true, NOW, &r) > 0);
	assert_false(r.hdr.flags & FW_WIRE_F_PARTIAL);
	assert_int_equal(srv.stats.capped, 1);
	sc.range_ids_max = 0;
	assert_int_equal(fw_serve_init(&srv, &l, &gc, &sc), -EINVAL);
}

static void info_reports_layout(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(4);
	srv.clock_offset_ns = -1234;
	srv.extra_flags = FW_WIRE_F_SLEWING;
	assert_int_equal(ask(FW_WIRE_OP_INFO, 1, 0, false, NOW, &r), 56);
	assert_int_equal(r.body.info.epoch_ms, FW_DEFAULT_EPOCH_MS);
	assert_int_equal(r.body.info.time_bits, 41);
	assert_int_equal(r.body.info.worker_bits, 10);
	assert_int_equal(r.body.info.seq_bits, 12);
	assert_int_equal(r.body.info.max_borrow_ms, 4);
	assert_int_equal(r.body.info.clock_offset_ns, -1234);
	assert_true(r.hdr.flags & FW_WIRE_F_SLEWING);
	assert_int_equal(r.body.info.features, FW_WIRE_INFO_F_UUID7);
	assert_int_equal(ask(FW_WIRE_OP_INFO, 1, FW_WIRE_HDR_LEN, false, NOW, &r), FW_WIRE_HDR_LEN);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_REFUSED);
}

static void error_statuses(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(0);

	/* Sequence used up, no borrowing: retry after the rest of the ms. */
	assert_true(ask(FW_WIRE_OP_RANGE, 4096, 0, true, NOW, &r) > 0);
	assert_true(ask(FW_WIRE_OP_ID, 1, 0, true, NOW, &r) > 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_RETRY_AFTER);
	assert_int_equal(r.hdr.retry_after_us, 1000);
	assert_int_equal(r.hdr.count, 0);

	/* Clock far behind what was issued: clock unsafe. */
	assert_true(ask(FW_WIRE_OP_LIST, 5, 0, true, NOW - 5000, &r) > 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_CLOCK_UNSAFE);
	assert_true(r.hdr.flags & FW_WIRE_F_UNSAFE);

	/* Past the reserved mark: retry after the configured delay. */
	assert_true(ask(FW_WIRE_OP_ID, 1, 0, true, NOW + 2000, &r) > 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_RETRY_AFTER);
	assert_int_equal(r.hdr.retry_after_us, 1000);

	/* Bad requests: count 0, count too large, unknown op. */
	memset(buf, 0, sizeof(buf));
	int n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_LIST, 1, 5, true);
	buf[7] = 0; /* count = 0 */
	assert_int_equal(fw_serve_answer(&srv, NOW, buf, (size_t)n, CAP, false), FW_WIRE_HDR_LEN);
	assert_int_equal(fw_wire_parse_reply(buf, FW_WIRE_HDR_LEN, &r), 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_BAD_REQUEST);
	n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, 5, true);
	buf[3] = 9; /* unknown op */
	assert_int_equal(fw_serve_answer(&srv, NOW, buf, (size_t)n, CAP, false), FW_WIRE_HDR_LEN);
	assert_int_equal(buf[4], FW_WIRE_ST_BAD_REQUEST);

	/* Unsupported version: answered with our version. */
	n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, 5, true);
	buf[2] = 7;
	assert_int_equal(fw_serve_answer(&srv, NOW, buf, (size_t)n, CAP, false), FW_WIRE_HDR_LEN);
	assert_int_equal(buf[2], FW_WIRE_VERSION);
	assert_int_equal(buf[4], FW_WIRE_ST_BAD_VERSION);
	assert_int_equal(srv.stats.status[FW_WIRE_ST_BAD_REQUEST], 2);
	assert_int_equal(srv.stats.status[FW_WIRE_ST_BAD_VERSION], 1);
}

static void garbage_and_replies_are_dropped_and_counted(void **state)
{
	(void)state;
	setup_serve(4);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(fw_serve_answer(&srv, NOW, buf, 10, CAP, true), FW_EWIRE_SHORT);
	assert_int_equal(fw_serve_answer(&srv, NOW, buf, 100, CAP, true), FW_EWIRE_MAGIC);
	int n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, 5, true);
	buf[3] |= FW_WIRE_OP_REPLY;
	assert_true(fw_serve_answer(&srv, NOW, buf, (size_t)n, CAP, true) < 0);
	assert_int_equal(srv.stats.drops[FW_SERVE_DROP_SHORT], 1);
	assert_int_equal(srv.stats.drops[FW_SERVE_DROP_MAGIC], 1);
	assert_int_equal(srv.stats.drops[FW_SERVE_DROP_REPLY], 1);
	assert_int_equal(srv.stats.requests, 0);
}

/* The anti-amplification rule, exhaustively over ops, counts and lengths. */
static void untrusted_reply_never_larger_than_request(void **state)
{
	(void)state;
	static const uint8_t ops[] = {FW_WIRE_OP_ID, FW_WIRE_OP_LIST, FW_WIRE_OP_RANGE,
				      FW_WIRE_OP_INFO, FW_WIRE_OP_UUID7};
	uint64_t now = NOW;
	setup_serve(4);
	fw_gen_set_mark(&srv.gen, UINT64_C(1) << 40);
	for (size_t o = 0; o < FW_ARRAY_SIZE(ops); o++) {
		for (size_t len = FW_WIRE_HDR_LEN; len <= 400; len += 7) {
			uint16_t counts[] = {1, 2, 50, 90, 181, 5000};
			for (size_t c = 0; c < FW_ARRAY_SIZE(counts); c++) {
				uint16_t count = counts[c];
				if (ops[o] == FW_WIRE_OP_ID || ops[o] == FW_WIRE_OP_INFO)
					count = 1;
				memset(buf, 0, sizeof(buf));
				fw_wire_write_request(buf, sizeof(buf), ops[o], count, 1, false);
				int out = fw_serve_answer(&srv, now++, buf, len, CAP, false);
				assert_true(out > 0);
				assert_true((size_t)out <= len);
			}
		}
	}
}

/* Checks a UUID of worker 9 in the default layout; returns its (ms, counter) as an ID would hold
 * them. */
static uint64_t check_uuid(const uint8_t *u)
{
	struct fw_uuid7_parts p;

	assert_int_equal(u[6] >> 4, 7); /* version */
	assert_int_equal(u[8] >> 6, 2); /* variant 10 */
	assert_int_equal(fw_uuid7_decode(NULL, u, &p), 0);
	assert_true(p.is_v7 && p.flakewire);
	assert_int_equal(p.worker, 9);
	assert_int_equal(p.datacenter, 0);
	assert_true(p.unix_ms >= FW_DEFAULT_EPOCH_MS);
	return (p.unix_ms - FW_DEFAULT_EPOCH_MS) << 22 | 9u << 12 | p.counter;
}

static void uuid7_list_is_rfc9562_and_carries_the_worker(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	setup_serve(4);
	assert_int_equal(ask(FW_WIRE_OP_UUID7, FW_WIRE_UUID7_MAX, 0, false, NOW, &r), 1464);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	assert_int_equal(r.hdr.count, FW_WIRE_UUID7_MAX);
	assert_int_equal(r.hdr.flags, 0);
	for (unsigned i = 0; i < FW_WIRE_UUID7_MAX; i++) {
		uint64_t key = check_uuid(r.body.uuids[i]);
		assert_int_equal(key, (uint64_t)NOW << 22 | 9u << 12 | i); /* counter = sequence */
		if (i > 0)
			assert_true(fw_uuid_cmp(r.body.uuids[i - 1], r.body.uuids[i]) < 0);
	}
	/* Random bits differ between neighbours (2^-44 to collide). */
	assert_memory_not_equal(r.body.uuids[0] + 10, r.body.uuids[1] + 10, 6);
	assert_int_equal(srv.stats.uuids, FW_WIRE_UUID7_MAX);
	assert_int_equal(srv.stats.ids, FW_WIRE_UUID7_MAX);
	assert_int_equal(srv.stats.ops[FW_WIRE_OP_UUID7], 1);

	/* Untrusted: fit the request; not even one UUID: REFUSED. */
	assert_int_equal(ask(FW_WIRE_OP_UUID7, 2, 0, false, NOW, &r), 56);
	assert_int_equal(r.hdr.count, 2);
	assert_int_equal(ask(FW_WIRE_OP_UUID7, 2, 50, false, NOW, &r), 40);
	assert_int_equal(r.hdr.count, 1);
	assert_true(r.hdr.flags & FW_WIRE_F_PARTIAL);
	assert_int_equal(ask(FW_WIRE_OP_UUID7, 1, 39, false, NOW, &r), FW_WIRE_HDR_LEN);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_REFUSED);
	/* Trusted and unpadded: the full reply. */
	assert_int_equal(ask(FW_WIRE_OP_UUID7, 90, FW_WIRE_HDR_LEN, true, NOW, &r), 1464);
	/* Bad counts. */
	assert_int_equal(ask(FW_WIRE_OP_UUID7, 91, 0, false, NOW, &r), FW_WIRE_HDR_LEN);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_BAD_REQUEST);
}

/*
 * IDs and UUIDs from one worker, interleaved, across borrowing, RETRY_AFTER
 * and a small backward step: every (ms, sequence) is used once, and each kind
 * strictly increases.
 */
static void uuid7_and_ids_share_one_sequence(void **state)
{
	(void)state;
	static uint64_t keys[40000];
	size_t nk = 0;
	uint8_t last_uuid[FW_UUID_LEN] = {0};
	uint64_t last_id = 0, now = NOW;
	bool borrowed = false, retried = false, backstep = false;
	struct fw_wire_reply r;

	setup_serve(2);
	for (int round = 0; round < 300; round++) {
		uint8_t op = round % 3 == 0 ? FW_WIRE_OP_LIST : FW_WIRE_OP_UUID7;
		uint16_t count = op == FW_WIRE_OP_LIST ? FW_WIRE_LIST_MAX : FW_WIRE_UUID7_MAX;
		if (round == 150)
			now -= 1; /* a step back by 1 ms */
		else if (round % 40 == 39)
			now += 1;
		int out = ask(op, count, 0, true, now, &r);
		assert_true(out > 0);
		if (r.hdr.status == FW_WIRE_ST_RETRY_AFTER) {
			retried = true;
			assert_true(r.hdr.retry_after_us > 0);
			continue;
		}
		assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
		borrowed |= (r.hdr.flags & FW_WIRE_F_BORROWED) != 0;
		backstep |= (r.hdr.flags & FW_WIRE_F_BACKSTEP) != 0;
		for (unsigned i = 0; i < r.hdr.count; i++) {
			assert_true(nk < FW_ARRAY_SIZE(keys));
			if (op == FW_WIRE_OP_LIST) {
				assert_true(r.body.ids[i] > last_id);
				last_id = r.body.ids[i];
				keys[nk++] = r.body.ids[i];
			} else {
				assert_true(fw_uuid_cmp(last_uuid, r.body.uuids[i]) < 0);
				memcpy(last_uuid, r.body.uuids[i], FW_UUID_LEN);
				keys[nk++] = check_uuid(r.body.uuids[i]);
			}
		}
	}
	assert_true(borrowed && retried && backstep);
	/* Issue order is (ms, sequence) order: the merged keys strictly increase. */
	for (size_t i = 1; i < nk; i++)
		assert_true(keys[i] > keys[i - 1]);
	assert_true(nk > 10000);
}

/*
 * A fleet swaps a worker's ID under it (fw_keeper_worker_swap re-initialises
 * the generator); fw_serve_worker_changed() must carry the new ID into every
 * reply header (the fast single-ID path caches it) and into the UUIDv7 node
 * bits, or a UUID of the new worker would carry the old worker's bits.
 */
static void worker_swap_reaches_headers_and_uuids(void **state)
{
	(void)state;
	struct fw_wire_reply r;
	struct fw_layout l;
	struct fw_gen_config gc;

	setup_serve(4);
	fw_layout_default(&l);
	fw_gen_config_default(&gc);
	gc.worker = 21; /* what fw_keeper_worker_swap does to the generator */
	assert_int_equal(fw_gen_init(&srv.gen, &l, &gc), 0);
	fw_gen_set_mark(&srv.gen, NOW + 1000);
	assert_int_equal(fw_serve_worker_changed(&srv), 0);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, 7, false),
			 FW_WIRE_HDR_LEN);
	int n = fw_serve_answer_fast(&srv, NOW, buf, 32, sizeof(buf), false);
	assert_int_equal(n, 32);
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
	assert_int_equal(r.hdr.worker, 21);
	assert_int_equal((r.body.ids[0] >> 12) & 1023, 21);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_UUID7, 3, 8, false),
			 FW_WIRE_HDR_LEN);
	n = fw_serve_answer(&srv, NOW, buf, fw_wire_request_size(FW_WIRE_OP_UUID7, 3), sizeof(buf),
			    false);
	assert_true(n > 0);
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
	assert_int_equal(r.hdr.worker, 21);
	assert_int_equal(r.hdr.count, 3);
	for (unsigned i = 0; i < 3; i++) {
		struct fw_uuid7_parts p;
		assert_int_equal(fw_uuid7_decode(NULL, r.body.uuids[i], &p), 0);
		assert_true(p.is_v7 && p.flakewire);
		assert_int_equal(p.worker, 21);
	}
}

static void stats_add_sums_every_counter(void **state)
{
	(void)state;
	struct fw_serve_stats a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 1, sizeof(b));
	fw_serve_stats_add(&a, &b);
	fw_serve_stats_add(&a, &b);
	assert_int_equal(a.ids, 2 * b.ids);
	assert_int_equal(a.drops[FW_SERVE_DROP_REPLY], 2 * b.drops[FW_SERVE_DROP_REPLY]);
	assert_int_equal(a.partial, 2 * b.partial);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(single_id_trusted_and_padded),
		cmocka_unit_test(unpadded_untrusted_single_is_refused),
		cmocka_unit_test(list_full_and_shrunk_to_request),
		cmocka_unit_test(range_spans_milliseconds_in_several_ranges),
		cmocka_unit_test(range_count_capped_by_config),
		cmocka_unit_test(info_reports_layout),
		cmocka_unit_test(error_statuses),
		cmocka_unit_test(garbage_and_replies_are_dropped_and_counted),
		cmocka_unit_test(untrusted_reply_never_larger_than_request),
		cmocka_unit_test(stats_add_sums_every_counter),
		cmocka_unit_test(uuid7_list_is_rfc9562_and_carries_the_worker),
		cmocka_unit_test(uuid7_and_ids_share_one_sequence),
		cmocka_unit_test(worker_swap_reaches_headers_and_uuids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

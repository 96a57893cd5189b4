/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_layout.h"

static void default_layout_is_41_0_10_12(void **state)
{
	(void)state;
	struct fw_layout l;
	fw_layout_default(&l);
	assert_int_equal(l.time_bits, 41);
	assert_int_equal(l.dc_bits, 0);
	assert_int_equal(l.worker_bits, 10);
	assert_int_equal(l.seq_bits, 12);
	assert_int_equal(l.epoch_ms, UINT64_C(1767225600000));
	assert_int_equal(fw_layout_validate(&l, 0), 0);
	assert_int_equal(fw_layout_ids_per_ms(&l), 4096);
	assert_int_equal(fw_layout_ids_per_sec(&l), 4096000);
	assert_int_equal(fw_layout_workers(&l), 1024);
	assert_int_equal(fw_layout_datacenters(&l), 1);
	/* 2^41 ms after 2026-01-01 is 2095-09-07T15:47:35.551Z. */
	char buf[FW_ISO8601_LEN];
	assert_string_equal(fw_format_iso8601(fw_layout_end_unix_ms(&l), buf),
			    "2095-09-07T15:47:35.551Z");
}

static void validation_names_each_error(void **state)
{
	(void)state;
	struct fw_layout l;
	fw_layout_default(&l);
	struct fw_layout before = l;
	assert_int_equal(fw_layout_init(&l, 0, 0, 10, 0, 0), FW_ELAYOUT_SEQ);
	assert_int_equal(fw_layout_init(&l, 0, 0, 10, 23, 0), FW_ELAYOUT_SEQ);
	assert_int_equal(fw_layout_init(&l, 0, 11, 10, 12, 0), FW_ELAYOUT_NODE);
	assert_int_equal(fw_layout_init(&l, 0, 0, 17, 12, 0), FW_ELAYOUT_NODE);
	assert_int_equal(fw_layout_init(&l, 0, 10, 16, 22, 0), FW_ELAYOUT_TIME);
	/* Epoch more than a day after "now". */
	uint64_t now = UINT64_C(1767225600000);
	assert_int_equal(fw_layout_init(&l, now + FW_LAYOUT_EPOCH_SLACK_MS + 1, 0, 10, 12, now),
			 FW_ELAYOUT_EPOCH);
	assert_int_equal(fw_layout_init(&l, now + FW_LAYOUT_EPOCH_SLACK_MS, 0, 10, 12, now), 0);
	assert_memory_not_equal(&l, &before, sizeof(l));

	struct fw_layout bad = {.epoch_ms = 0, .time_bits = 40, .worker_bits = 10, .seq_bits = 12};
	assert_int_equal(fw_layout_validate(&bad, 0), FW_ELAYOUT_SUM);
	assert_int_equal(fw_layout_validate(NULL, 0), -EINVAL);
}

static void failed_init_leaves_layout_unchanged(void **state)
{
	(void)state;
	struct fw_layout l, before;
	fw_layout_default(&l);
	before = l;
	assert_int_not_equal(fw_layout_init(&l, 5, 0, 10, 0, 0), 0);
	assert_memory_equal(&l, &before, sizeof(l));
}

static uint64_t rnd64(void)
{
	return ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
}

static void round_trip_over_many_layouts(void **state)
{
	(void)state;
	srand(42);
	unsigned layouts = 0;
	for (unsigned seq = FW_LAYOUT_SEQ_BITS_MIN; seq <= FW_LAYOUT_SEQ_BITS_MAX; seq++) {
		for (unsigned dc = 0; dc <= FW_LAYOUT_DC_BITS_MAX; dc += 3) {
			for (unsigned w = 0; w <= FW_LAYOUT_WORKER_BITS_MAX; w += 2) {
				struct fw_layout l;
				if (fw_layout_init(&l, 1000 * seq, dc, w, seq, 0) != 0)
					continue;
				layouts++;
				assert_int_equal(
					l.time_bits + l.dc_bits + l.worker_bits + l.seq_bits, 63);
				for (int i = 0; i < 200; i++) {
					uint64_t ms = rnd64() & ((UINT64_C(1) << l.time_bits) - 1);
					uint32_t d = (uint32_t)(rnd64() &
								(fw_layout_datacenters(&l) - 1));
					uint32_t wk =
						(uint32_t)(rnd64() & (fw_layout_workers(&l) - 1));
					uint32_t sq = (uint32_t)(rnd64() &
								 (fw_layout_ids_per_ms(&l) - 1));
					uint64_t id;
					assert_int_equal(fw_layout_encode(&l, ms, d, wk, sq, &id),
							 0);
					assert_true(id >> 63 == 0);
					struct fw_id_parts p;
					assert_int_equal(fw_layout_decode(&l, id, &p), 0);
					assert_int_equal(p.ms, ms);
					assert_int_equal(p.unix_ms, ms + l.epoch_ms);
					assert_int_equal(p.datacenter, d);
					assert_int_equal(p.worker, wk);
					assert_int_equal(p.sequence, sq);
				}
			}
		}
	}
	assert_true(layouts > 500);
}

static void encode_rejects_values_that_do_not_fit(void **state)
{
	(void)state;
	struct fw_layout l;
	fw_layout_default(&l);
	uint64_t id = 7;
	assert_int_equal(fw_layout_encode(&l, UINT64_C(1) << 41, 0, 0, 0, &id), FW_ERANGE);
	assert_int_equal(fw_layout_encode(&l, 0, 1, 0, 0, &id), FW_ERANGE);
	assert_int_equal(fw_layout_encode(&l, 0, 0, 1024, 0, &id), FW_ERANGE);
	assert_int_equal(fw_layout_encode(&l, 0, 0, 0, 4096, &id), FW_ERANGE);
	assert_int_equal(id, 7);
}

static void decode_known_values(void **state)
{
	(void)state;
	struct fw_layout l;
	struct fw_id_parts p;
	char buf[FW_ISO8601_LEN];

	fw_layout_default(&l);
	/* 1000 ms after the epoch, worker 5, sequence 7. */
	assert_int_equal(fw_layout_decode(&l, (UINT64_C(1000) << 22) | (5 << 12) | 7, &p), 0);
	assert_int_equal(p.unix_ms, UINT64_C(1767225601000));
	assert_int_equal(p.worker, 5);
	assert_int_equal(p.sequence, 7);
	assert_string_equal(fw_format_iso8601(p.unix_ms, buf), "2026-01-01T00:00:01.000Z");

	/* Twitter: the ID of a 2019 tweet, epoch 1288834974657, 41/5/5/12. */
	assert_int_equal(fw_layout_init(&l, UINT64_C(1288834974657), 5, 5, 12, 0), 0);
	assert_int_equal(fw_layout_decode(&l, UINT64_C(1212161184839843840), &p), 0);
	assert_int_equal(p.unix_ms,
			 (UINT64_C(1212161184839843840) >> 22) + UINT64_C(1288834974657));
	assert_string_equal(fw_format_iso8601(p.unix_ms, buf), "2019-12-31T23:58:41.988Z");

	/* Discord: epoch 2015-01-01, the ID in Discord's own API documentation. */
	assert_int_equal(fw_layout_init(&l, UINT64_C(1420070400000), 5, 5, 12, 0), 0);
	assert_int_equal(fw_layout_decode(&l, UINT64_C(175928847299117063), &p), 0);
	assert_string_equal(fw_format_iso8601(p.unix_ms, buf), "2016-04-30T11:18:25.796Z");
	assert_int_equal(p.datacenter, 1);
	assert_int_equal(p.worker, 0);
	assert_int_equal(p.sequence, 7);

	assert_int_equal(fw_layout_decode(&l, UINT64_C(1) << 63, &p), FW_ENEGATIVE);
}

/* A run of IDs from one reply: bounds, sign and the worker it must come from. */
static void check_run_bounds_sign_and_worker(void **state)
{
	(void)state;
	struct fw_layout l;
	struct fw_id_parts a, b;
	uint64_t w5 = (UINT64_C(1000) << 22) | (5 << 12); /* ms 1000, worker 5, sequence 0 */

	fw_layout_default(&l);
	assert_int_equal(fw_layout_check_run(&l, w5, 4096, 0, 5, &a, &b), 0);
	assert_int_equal(a.sequence, 0);
	assert_int_equal(b.sequence, 4095);
	assert_int_equal(b.worker, 5);
	/* one more carries into the worker field: the last ID is worker 6's */
	assert_int_equal(fw_layout_check_run(&l, w5, 4097, 0, 5, &a, &b), FW_EINVALID);
	assert_int_equal(b.worker, 6);
	assert_int_equal(fw_layout_check_run(&l, w5, 1, 0, 4, NULL, NULL), FW_EINVALID);
	assert_int_equal(fw_layout_check_run(&l, w5, 1, 1, 5, NULL, NULL), FW_EINVALID);
	/* empty, wrapping, reaching bit 63: with or without a layout */
	assert_int_equal(fw_layout_check_run(&l, w5, 0, 0, 5, NULL, NULL), FW_ENEGATIVE);
	assert_int_equal(fw_layout_check_run(NULL, w5, 0, 0, 5, NULL, NULL), FW_ENEGATIVE);
	assert_int_equal(fw_layout_check_run(NULL, UINT64_MAX, 2, 0, 0, NULL, NULL), FW_ENEGATIVE);
	assert_int_equal(fw_layout_check_run(NULL, INT64_MAX, 1, 0, 0, NULL, NULL), 0);
	assert_int_equal(fw_layout_check_run(NULL, INT64_MAX, 2, 0, 0, NULL, NULL), FW_ENEGATIVE);
	assert_int_equal(fw_layout_check_run(&l, UINT64_C(1) << 63, 1, 0, 0, NULL, NULL),
			 FW_ENEGATIVE);
	/* without a layout the fields are not checked */
	assert_int_equal(fw_layout_check_run(NULL, w5, 4097, 0, 4, NULL, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(default_layout_is_41_0_10_12),
		cmocka_unit_test(validation_names_each_error),
		cmocka_unit_test(failed_init_leaves_layout_unchanged),
		cmocka_unit_test(round_trip_over_many_layouts),
		cmocka_unit_test(encode_rejects_values_that_do_not_fit),
		cmocka_unit_test(decode_known_values),
		cmocka_unit_test(check_run_bounds_sign_and_worker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

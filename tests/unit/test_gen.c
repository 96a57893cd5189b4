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
#include "fw_gen.h"

#define T0 100000u /* a scripted "now", ms since the epoch */

static struct fw_layout layout;

static void make(struct fw_gen *g, uint32_t worker, uint32_t borrow, uint32_t backstep)
{
	struct fw_gen_config cfg;
	fw_layout_default(&layout);
	fw_gen_config_default(&cfg);
	cfg.worker = worker;
	cfg.max_borrow_ms = borrow;
	cfg.max_backstep_ms = backstep;
	assert_int_equal(fw_gen_init(g, &layout, &cfg), 0);
	fw_gen_set_mark(g, UINT64_C(1) << 40);
}

static uint64_t ms_of(uint64_t id)
{
	return id >> 22;
}

static void init_checks_worker_range(void **state)
{
	(void)state;
	struct fw_gen g;
	struct fw_gen_config cfg;
	fw_layout_default(&layout);
	fw_gen_config_default(&cfg);
	cfg.worker = 1024;
	assert_int_equal(fw_gen_init(&g, &layout, &cfg), FW_ERANGE);
	cfg.worker = 1023;
	cfg.datacenter = 1;
	assert_int_equal(fw_gen_init(&g, &layout, &cfg), FW_ERANGE);
	assert_int_equal(fw_gen_init(NULL, &layout, &cfg), -EINVAL);
}

static void steady_clock_gives_increasing_ids_at_now(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 5, 4, 1000);
	uint64_t last = 0, k = 0;
	for (uint64_t now = T0; now < T0 + 50; now++) {
		for (int i = 0; i < 100; i++) {
			uint64_t id;
			assert_int_equal(fw_gen_next(&g, now, &id), 0);
			assert_true(id > last);
			assert_int_equal((id >> 12) & 1023, 5);
			/* Each ms goes on from where the last stopped (FW_GEN_SEQ_CARRY)... */
			assert_int_equal(id & 4095, k & 4095);
			/* ...so the 4096th ID, in ms 40 (IDs 4000-4099), wraps the
			 * count into ms 41 for the rest of ms 40: 4 IDs borrowed. */
			if (k >= 4096 && k < 4100) {
				assert_int_equal(ms_of(id), T0 + 41);
				assert_int_equal(fw_gen_flags(&g), FW_GEN_F_BORROWED);
			} else {
				assert_int_equal(ms_of(id), now);
				assert_int_equal(fw_gen_flags(&g), 0);
			}
			k++;
			last = id;
		}
	}
	assert_int_equal(fw_gen_stats(&g)->issued, 5000);
	assert_int_equal(fw_gen_stats(&g)->borrowed_ms, 1);
}

static void stalled_clock_borrows_then_retries(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	uint64_t id, last = 0;
	for (int i = 0; i < 5 * 4096; i++) {
		assert_int_equal(fw_gen_next(&g, T0, &id), 0);
		assert_true(id > last);
		last = id;
		assert_true(ms_of(id) <= T0 + 4);
	}
	assert_int_equal(ms_of(last), T0 + 4);
	assert_true(fw_gen_flags(&g) & FW_GEN_F_BORROWED);
	assert_int_equal(fw_gen_stats(&g)->borrowed_ms, 4);

	id = 0;
	assert_int_equal(fw_gen_next(&g, T0, &id), FW_ERETRY);
	assert_int_equal(id, 0);
	assert_int_equal(fw_gen_retry_after_us(&g), 1000);
	assert_int_equal(fw_gen_stats(&g)->retries, 1);
	/* Nothing consumed: once the clock reaches T0 + 1, T0 + 5 may be entered. */
	assert_int_equal(fw_gen_next(&g, T0 + 1, &id), 0);
	assert_int_equal(ms_of(id), T0 + 5);
	assert_int_equal(id & 4095, 0);
}

static void no_borrowing_means_retry_at_end_of_ms(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 0, 1000);
	uint64_t ids[4096], id;
	assert_int_equal(fw_gen_list(&g, T0, ids, 4096), 4096);
	assert_int_equal(fw_gen_next(&g, T0, &id), FW_ERETRY);
	assert_int_equal(fw_gen_stats(&g)->borrowed_ms, 0);
	assert_int_equal(fw_gen_next(&g, T0 + 1, &id), 0);
	assert_int_equal(ms_of(id), T0 + 1);
}

static void small_step_back_keeps_issuing_from_last_ms(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	uint64_t id, last;
	assert_int_equal(fw_gen_next(&g, T0, &last), 0);
	/* The clock steps back 3 ms: within the borrow bound, keep issuing at T0. */
	for (int i = 0; i < 100; i++) {
		assert_int_equal(fw_gen_next(&g, T0 - 3, &id), 0);
		assert_true(id > last);
		assert_int_equal(ms_of(id), T0);
		last = id;
	}
	assert_true(fw_gen_flags(&g) & FW_GEN_F_BACKSTEP);
	assert_true(fw_gen_flags(&g) & FW_GEN_F_BORROWED);
	assert_int_equal(fw_gen_stats(&g)->backsteps, 1);
	assert_int_equal(fw_gen_stats(&g)->max_backstep_ms, 3);
	/* Clock recovers: normal again. */
	assert_int_equal(fw_gen_next(&g, T0 + 1, &id), 0);
	assert_int_equal(ms_of(id), T0 + 1);
	assert_int_equal(fw_gen_flags(&g), 0);
}

static void medium_step_back_answers_retry_after(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	uint64_t id;
	assert_int_equal(fw_gen_next(&g, T0, &id), 0);
	assert_int_equal(fw_gen_next(&g, T0 - 100, &id), FW_ERETRY);
	/* Issuable again when the clock is within 4 ms of T0: 96 ms from now. */
	assert_int_equal(fw_gen_retry_after_us(&g), 96000);
	assert_int_equal(fw_gen_next(&g, T0 - 4, &id), 0);
	assert_int_equal(ms_of(id), T0);
}

static void large_step_back_is_clock_unsafe(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	uint64_t id, last;
	assert_int_equal(fw_gen_next(&g, T0 + 5000, &last), 0);
	id = 0;
	assert_int_equal(fw_gen_next(&g, T0, &id), FW_ECLOCK);
	assert_int_equal(fw_gen_list(&g, T0, &id, 1), FW_ECLOCK);
	assert_int_equal(fw_gen_range(&g, T0, 10, &id), FW_ECLOCK);
	assert_int_equal(id, 0);
	assert_true(fw_gen_flags(&g) & FW_GEN_F_UNSAFE);
	assert_int_equal(fw_gen_stats(&g)->unsafe, 3);
	assert_int_equal(fw_gen_stats(&g)->max_backstep_ms, 5000);
	/* Within the backstep bound again (1000 ms behind): retry-after, not unsafe. */
	assert_int_equal(fw_gen_next(&g, T0 + 4000, &id), FW_ERETRY);
	assert_int_equal(fw_gen_next(&g, T0 + 5001, &id), 0);
	assert_true(id > last);
}

static void jump_ahead_moves_to_new_ms(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	uint64_t a, b;
	assert_int_equal(fw_gen_next(&g, T0, &a), 0);
	assert_int_equal(fw_gen_next(&g, T0 + 3600000, &b), 0);
	assert_true(b > a);
	assert_int_equal(ms_of(b), T0 + 3600000);
}

static void mark_is_never_passed(void **state)
{
	(void)state;
	struct fw_gen g;
	struct fw_gen_config cfg;
	fw_layout_default(&layout);
	fw_gen_config_default(&cfg);
	assert_int_equal(fw_gen_init(&g, &layout, &cfg), 0);
	uint64_t id = 0;
	/* A fresh generator has mark 0: nothing may be issued yet. */
	assert_int_equal(fw_gen_next(&g, T0, &id), FW_EMARK);
	assert_int_equal(fw_gen_set_mark(&g, T0 + 1), T0 + 1);
	assert_int_equal(fw_gen_set_mark(&g, T0 - 10), T0 + 1); /* never moves back */
	assert_int_equal(fw_gen_next(&g, T0 + 1, &id), 0);
	assert_int_equal(fw_gen_next(&g, T0 + 2, &id), FW_EMARK);
	assert_int_equal(fw_gen_stats(&g)->mark_hits, 2);
	/* Borrowing stops at the mark too. */
	uint64_t ids[4096];
	assert_int_equal(fw_gen_list(&g, T0 + 1, ids, 4096), 4095);
	assert_int_equal(fw_gen_next(&g, T0 + 1, &id), FW_EMARK);
	fw_gen_set_mark(&g, T0 + 10);
	assert_int_equal(fw_gen_next(&g, T0 + 2, &id), 0);
	assert_int_equal(ms_of(id), T0 + 2);
}

static void floor_forbids_ids_at_or_below_it(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	assert_int_equal(fw_gen_set_floor(&g, T0 + 2), 0);
	uint64_t id;
	/* Clock 2 ms behind the floor: borrow T0 + 3 (3 ms ahead, within 4). */
	assert_int_equal(fw_gen_next(&g, T0, &id), 0);
	assert_int_equal(ms_of(id), T0 + 3);
	/* Clock far behind a floor: retry after the clock is within the borrow
	 * bound of floor + 1, not a backward step. */
	make(&g, 1, 4, 1000);
	fw_gen_set_floor(&g, T0 + 100000);
	assert_int_equal(fw_gen_next(&g, T0, &id), FW_ERETRY);
	assert_int_equal(fw_gen_retry_after_us(&g), (100000 + 1 - 4) * 1000);
	assert_int_equal(fw_gen_stats(&g)->backsteps, 0);
	assert_int_equal(fw_gen_next(&g, T0 + 99996, &id), FW_ERETRY);
	assert_int_equal(fw_gen_next(&g, T0 + 99997, &id), 0);
	assert_int_equal(ms_of(id), T0 + 100001);
	/* A floor below what was issued changes nothing. */
	fw_gen_set_floor(&g, T0);
	uint64_t next;
	assert_int_equal(fw_gen_next(&g, T0 + 100001, &next), 0);
	assert_int_equal(next, id + 1);
}

static void range_stays_in_one_ms(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 3, 4, 1000);
	uint64_t first, id;
	assert_int_equal(fw_gen_range(&g, T0, 10, &first), 10);
	assert_int_equal(ms_of(first), T0);
	assert_int_equal(first & 4095, 0);
	/* The rest of the ms: 4086 left, asking for more gives 4086. */
	assert_int_equal(fw_gen_range(&g, T0, 10000, &first), 4086);
	assert_int_equal(first & 4095, 10);
	assert_int_equal(ms_of(first + 4085), T0);
	/* The next range borrows the next ms. */
	assert_int_equal(fw_gen_range(&g, T0, 1, &first), 1);
	assert_int_equal(ms_of(first), T0 + 1);
	assert_int_equal(fw_gen_next(&g, T0, &id), 0);
	assert_int_equal(id, first + 1);
	assert_int_equal(fw_gen_stats(&g)->issued, 10 + 4086 + 1 + 1);
	assert_int_equal(fw_gen_range(&g, T0, 0, &first), -EINVAL);
}

static void list_stops_at_limit_and_reports_it_next(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 1, 1000);
	uint64_t ids[3 * 4096];
	assert_int_equal(fw_gen_list(&g, T0, ids, 3 * 4096), 2 * 4096);
	for (int i = 1; i < 2 * 4096; i++)
		assert_true(ids[i] > ids[i - 1]);
	assert_int_equal(fw_gen_list(&g, T0, ids, 1), FW_ERETRY);
}

/* A nonsense clock reading (beyond the time field) never yields an ID. */
static void clock_beyond_time_field_issues_nothing(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 1, 4, 1000);
	uint64_t id = 0;
	assert_int_equal(fw_gen_next(&g, UINT64_MAX, &id), FW_EMARK);
	assert_int_equal(fw_gen_next(&g, UINT64_C(1) << 41, &id), FW_EMARK);
	assert_int_equal(id, 0);
	/* ...and leaves no trace: the next sane reading issues normally. */
	assert_int_equal(fw_gen_next(&g, T0, &id), 0);
	assert_int_equal(ms_of(id), T0);
}

/* An adversarial clock: stalls, small and large steps back, jumps ahead. */
static void adversarial_clock_never_breaks_order(void **state)
{
	(void)state;
	struct fw_gen g;
	struct fw_gen_config cfg;
	fw_layout_default(&layout);
	fw_gen_config_default(&cfg);
	cfg.worker = 77;
	assert_int_equal(fw_gen_init(&g, &layout, &cfg), 0);
	uint64_t mark = T0 + 100;
	fw_gen_set_mark(&g, mark);
	uint64_t now = T0, last = 0, issued = 0;
	srand(7);
	/* Whatever the clock does, the sequence of the k-th ID is k mod 4096 (the
	 * start rule's promise: id % N goes round for every N dividing 4096). */
	for (long step = 0; step < 3000000; step++) {
		int r = rand() % 1000;
		if (r < 300)
			now += 1;
		else if (r < 310)
			now -= FW_MIN(now, (uint64_t)(rand() % 8));
		else if (r < 312)
			now -= FW_MIN(now, (uint64_t)(rand() % 3000));
		else if (r < 314)
			now += (uint64_t)(rand() % 3000);
		if (rand() % 50 == 0)
			mark = fw_gen_set_mark(&g, now + (uint64_t)(rand() % 50));

		uint64_t ids[8];
		int n;
		int op = rand() % 3;
		if (op == 0) {
			n = fw_gen_next(&g, now, &ids[0]) == 0 ? 1 : 0;
		} else if (op == 1) {
			n = fw_gen_list(&g, now, ids, 1 + (uint32_t)(rand() % 8));
		} else {
			uint64_t first;
			int c = fw_gen_range(&g, now, 1 + (uint32_t)(rand() % 5000), &first);
			if (c > 0) {
				assert_int_equal(ms_of(first), ms_of(first + (uint64_t)c - 1));
				assert_true(first > last);
				assert_true(ms_of(first) <= mark);
				assert_true(ms_of(first) <= now + 4);
				assert_int_equal(first & 4095, issued & 4095);
				last = first + (uint64_t)c - 1;
				issued += (uint64_t)c;
			}
			continue;
		}
		for (int i = 0; i < n; i++) {
			assert_true(ids[i] > last);
			assert_true(ms_of(ids[i]) <= mark);
			assert_true(ms_of(ids[i]) <= now + 4);
			assert_int_equal((ids[i] >> 12) & 1023, 77);
			assert_int_equal(ids[i] & 4095, (issued + (uint64_t)i) & 4095);
			last = ids[i];
		}
		if (n > 0)
			issued += (uint64_t)n;
	}
	assert_int_equal(fw_gen_stats(&g)->issued, issued);
	assert_true(issued > 1000000);
	assert_true(fw_gen_stats(&g)->backsteps > 0);
	assert_true(fw_gen_stats(&g)->unsafe > 0);
	assert_true(fw_gen_stats(&g)->retries > 0);
	assert_true(fw_gen_stats(&g)->mark_hits > 0);
}

/* Issues @per IDs at each of @ms_count clock readings @gap ms apart (gap 0:
 * one reading), checking order and that the k-th ID's sequence is k mod 4096. */
static void expect_counting_sequence(struct fw_gen *g, uint64_t gap, uint32_t per,
				     uint32_t ms_count)
{
	uint64_t last = 0, k = 0, now = T0;
	for (uint32_t m = 0; m < ms_count; m++, now += gap) {
		for (uint32_t i = 0; i < per; i++) {
			uint64_t id;
			assert_int_equal(fw_gen_next(g, now, &id), 0);
			assert_true(id > last);
			assert_int_equal(id & 4095, k & 4095);
			last = id;
			k++;
		}
	}
}

/* The start rule at low, middle and full rates: the sequence counts IDs. */
static void sequence_counts_ids_at_any_rate(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 2, 4, 1000);
	expect_counting_sequence(&g, 10, 1, 10000); /* 0.1 ID/ms */
	make(&g, 2, 4, 1000);
	expect_counting_sequence(&g, 1, 1, 10000); /* 1 ID/ms */
	make(&g, 2, 4, 1000);
	expect_counting_sequence(&g, 1, 37, 1000); /* 37 IDs/ms */
	make(&g, 2, 4, 1000);
	expect_counting_sequence(&g, 1, 4096, 20); /* saturating, through the wrap */
	/* A floor (restart) starts a fresh count at 0. */
	make(&g, 2, 4, 1000);
	uint64_t id;
	assert_int_equal(fw_gen_next(&g, T0, &id), 0);
	fw_gen_set_floor(&g, T0 + 5);
	assert_int_equal(fw_gen_next(&g, T0 + 6, &id), 0);
	assert_int_equal(id & 4095, 0);
}

/*
 * Capacity after a quiet spell: the counter stopped at c (any value), then a
 * load that takes everything. The clock's ms offers 4096 - c, every ms after
 * it (borrowed or reached by the clock) all 4096: after K readings the load
 * has exactly (K + max_borrow) * 4096 - c IDs, and each borrowed ms is full.
 */
static void full_load_after_a_quiet_spell_gets_every_ms_whole(void **state)
{
	(void)state;
	static const uint32_t quiet[] = {0, 1, 5, 2048, 4000, 4095};
	for (size_t q = 0; q < sizeof(quiet) / sizeof(quiet[0]); q++) {
		struct fw_gen g;
		make(&g, 4, 4, 1000);
		uint64_t id, last = 0, now = T0 - 100000;
		for (uint32_t i = 0; i < quiet[q]; i++, now += 20) { /* 0.05 ID/ms */
			assert_int_equal(fw_gen_next(&g, now, &id), 0);
			last = id;
		}
		const uint64_t K = 10;
		uint64_t got = 0, per_ms[16] = {0};
		for (now = T0; now < T0 + K; now++) {
			while (fw_gen_next(&g, now, &id) == 0) {
				assert_true(id > last);
				last = id;
				got++;
				per_ms[ms_of(id) - T0]++;
			}
		}
		assert_int_equal(got, (K + 4) * 4096 - quiet[q]);
		assert_int_equal(per_ms[0], 4096 - quiet[q]);
		for (uint64_t m = 1; m < K + 4; m++)
			assert_int_equal(per_ms[m], 4096);
	}
}

/* A load of exactly 4096 IDs per ms is served whole from any counter, never
 * asked to retry, never more than 1 ms ahead of the clock. */
static void load_at_full_rate_is_served_from_any_start(void **state)
{
	(void)state;
	static const uint32_t start[] = {0, 1, 3000, 4095};
	for (size_t q = 0; q < sizeof(start) / sizeof(start[0]); q++) {
		struct fw_gen g;
		make(&g, 4, 1, 1000);
		uint64_t id, last = 0;
		for (uint32_t i = 0; i < start[q]; i++) {
			assert_int_equal(fw_gen_next(&g, T0 - 10000 + 2 * i, &id), 0);
			last = id;
		}
		for (uint64_t now = T0; now < T0 + 100; now++) {
			for (int i = 0; i < 4096; i++) {
				assert_int_equal(fw_gen_next(&g, now, &id), 0);
				assert_true(id > last);
				assert_true(ms_of(id) <= now + 1);
				last = id;
			}
		}
		assert_int_equal(fw_gen_stats(&g)->retries, 0);
	}
}

/* A range after a quiet spell starts where the count stopped and stays whole
 * and contiguous; its rest of the ms is 4096 - start. */
static void range_goes_on_from_the_count(void **state)
{
	(void)state;
	struct fw_gen g;
	make(&g, 3, 4, 1000);
	uint64_t id, first;
	for (int i = 0; i < 100; i++)
		assert_int_equal(fw_gen_next(&g, T0 + (uint64_t)i, &id), 0);
	assert_int_equal(fw_gen_range(&g, T0 + 200, 10000, &first), 4096 - 100);
	assert_int_equal(first, id + (200 - 99) * (UINT64_C(1) << 22) + 1);
	assert_int_equal(ms_of(first + 4095 - 100), T0 + 200);
	/* Used up: the next (borrowed) ms starts at 0 and is whole. */
	assert_int_equal(fw_gen_range(&g, T0 + 200, 10000, &first), 4096);
	assert_int_equal(first & 4095, 0);
	assert_int_equal(ms_of(first), T0 + 201);
}

/* Without borrowing a ms cannot pass its sequence on, so every ms starts at
 * 0 (capacity first); FW_GEN_SEQ_ZERO is the rule before issue 36. */
static void no_borrowing_or_zero_rule_starts_each_ms_at_zero(void **state)
{
	(void)state;
	struct fw_gen g;
	uint64_t id;
	make(&g, 1, 0, 1000);
	for (uint64_t now = T0; now < T0 + 5; now++) {
		assert_int_equal(fw_gen_next(&g, now, &id), 0);
		assert_int_equal(id & 4095, 0);
	}
	struct fw_gen_config cfg;
	fw_layout_default(&layout);
	fw_gen_config_default(&cfg);
	assert_int_equal(cfg.seq_start, FW_GEN_SEQ_CARRY);
	cfg.seq_start = FW_GEN_SEQ_ZERO;
	assert_int_equal(fw_gen_init(&g, &layout, &cfg), 0);
	fw_gen_set_mark(&g, UINT64_C(1) << 40);
	for (uint64_t now = T0; now < T0 + 5; now++) {
		assert_int_equal(fw_gen_next(&g, now, &id), 0);
		assert_int_equal(id & 4095, 0);
	}
	cfg.seq_start = 2;
	assert_int_equal(fw_gen_init(&g, &layout, &cfg), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_checks_worker_range),
		cmocka_unit_test(steady_clock_gives_increasing_ids_at_now),
		cmocka_unit_test(stalled_clock_borrows_then_retries),
		cmocka_unit_test(no_borrowing_means_retry_at_end_of_ms),
		cmocka_unit_test(small_step_back_keeps_issuing_from_last_ms),
		cmocka_unit_test(medium_step_back_answers_retry_after),
		cmocka_unit_test(large_step_back_is_clock_unsafe),
		cmocka_unit_test(jump_ahead_moves_to_new_ms),
		cmocka_unit_test(mark_is_never_passed),
		cmocka_unit_test(floor_forbids_ids_at_or_below_it),
		cmocka_unit_test(range_stays_in_one_ms),
		cmocka_unit_test(list_stops_at_limit_and_reports_it_next),
		cmocka_unit_test(clock_beyond_time_field_issues_nothing),
		cmocka_unit_test(adversarial_clock_never_breaks_order),
		cmocka_unit_test(sequence_counts_ids_at_any_rate),
		cmocka_unit_test(full_load_after_a_quiet_spell_gets_every_ms_whole),
		cmocka_unit_test(load_at_full_rate_is_served_from_any_start),
		cmocka_unit_test(range_goes_on_from_the_count),
		cmocka_unit_test(no_borrowing_or_zero_rule_starts_each_ms_at_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "fw_err.h"
#include "fw_gen.h"

#define NONE UINT64_MAX

FW_API void fw_gen_config_default(struct fw_gen_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_borrow_ms = FW_GEN_DEFAULT_MAX_BORROW_MS;
	cfg->max_backstep_ms = FW_GEN_DEFAULT_MAX_BACKSTEP_MS;
}

FW_API int fw_gen_init(struct fw_gen *g, const struct fw_layout *layout,
		       const struct fw_gen_config *cfg)
{
	if (g == NULL || layout == NULL || cfg == NULL)
		return -EINVAL;
	if (cfg->seq_start != FW_GEN_SEQ_CARRY && cfg->seq_start != FW_GEN_SEQ_ZERO)
		return -EINVAL;
	int rc = fw_layout_validate(layout, 0);
	if (rc != 0)
		return rc;
	if ((uint64_t)cfg->worker >= ((uint64_t)1 << layout->worker_bits) ||
	    (uint64_t)cfg->datacenter >= ((uint64_t)1 << layout->dc_bits))
		return FW_ERANGE;

	memset(g, 0, sizeof(*g));
	g->layout = *layout;
	g->cfg = *cfg;
	g->cur_ms = NONE;
	g->fast_ms = NONE;
	g->seq_limit = UINT64_C(1) << layout->seq_bits;
	/* Carrying needs a borrowed ms to wrap into, or a ms that started late
	 * could not offer all its sequence to a load: without borrowing, 0. */
	g->seq_carry =
		cfg->seq_start == FW_GEN_SEQ_CARRY && cfg->max_borrow_ms > 0 ? g->seq_limit - 1 : 0;
	g->time_shift = layout->seq_bits + layout->worker_bits + layout->dc_bits;
	g->time_max = (UINT64_C(1) << layout->time_bits) - 1;
	g->node_bits = ((uint64_t)cfg->datacenter << (layout->seq_bits + layout->worker_bits)) |
		       ((uint64_t)cfg->worker << layout->seq_bits);
	return 0;
}

FW_API uint64_t fw_gen_set_mark(struct fw_gen *g, uint64_t mark_ms)
{
	if (mark_ms > g->time_max)
		mark_ms = g->time_max;
	if (mark_ms > g->mark_ms)
		g->mark_ms = mark_ms;
	return g->mark_ms;
}

FW_API int fw_gen_set_floor(struct fw_gen *g, uint64_t floor_ms)
{
	if (g->cur_ms != NONE && g->cur_ms > floor_ms)
		return 0;
	if (g->cur_ms == floor_ms && g->next_seq >= g->seq_limit)
		return 0;
	/* As if floor_ms had been used up: the next ID is at floor_ms + 1 at the earliest. */
	g->cur_ms = floor_ms;
	g->next_seq = g->seq_limit;
	g->fast_ms = NONE;
	return 0;
}

FW_API int fw_gen_next_slow(struct fw_gen *g, uint64_t now, uint64_t *id)
{
	uint32_t flags = 0;

	g->fast_ms = NONE;
	/* A reading past the time field is no time at all: refuse it without
	 * letting it move seen_ms (which would make every later call unsafe). */
	if (now > g->time_max) {
		g->flags = 0;
		g->stats.mark_hits++;
		return FW_EMARK;
	}
	if (now < g->last_now) {
		uint64_t step = g->seen_ms - now;
		g->stats.backsteps++;
		if (step > g->stats.max_backstep_ms)
			g->stats.max_backstep_ms = step;
	}
	g->last_now = now;
	if (now > g->seen_ms)
		g->seen_ms = now;

	uint64_t behind = g->seen_ms - now;
	if (behind != 0) {
		flags |= FW_GEN_F_BACKSTEP;
		if (behind > g->cfg.max_backstep_ms) {
			g->flags = flags | FW_GEN_F_UNSAFE;
			g->stats.unsafe++;
			return FW_ECLOCK;
		}
	}

	/* Where the next ID goes: the current ms while it has sequence left and
	 * the clock has not passed it, else the ms after it (from 0: the last
	 * one was used up), else the clock's ms, from where the sequence stopped
	 * (next_seq & seq_carry: next_seq is at most seq_limit, which wraps to 0)
	 * so that the sequence counts IDs and id % N goes round (fw_gen.h). */
	uint64_t ms, seq;
	if (g->cur_ms != NONE && g->cur_ms >= now) {
		if (g->next_seq < g->seq_limit) {
			ms = g->cur_ms;
			seq = g->next_seq;
		} else {
			ms = g->cur_ms + 1;
			seq = 0;
		}
	} else {
		ms = now;
		seq = g->next_seq & g->seq_carry;
	}

	if (ms > now + g->cfg.max_borrow_ms) {
		uint64_t wait_ms = ms - g->cfg.max_borrow_ms - now;
		g->retry_after_us =
			wait_ms > UINT32_MAX / 1000 ? UINT32_MAX : (uint32_t)(wait_ms * 1000);
		g->flags = flags | FW_GEN_F_BORROWED;
		g->stats.retries++;
		return FW_ERETRY;
	}
	if (ms > g->mark_ms) {
		g->flags = flags;
		g->stats.mark_hits++;
		return FW_EMARK;
	}

	if (ms != g->cur_ms) {
		if (ms > now)
			g->stats.borrowed_ms++;
		g->cur_ms = ms;
	}
	if (ms > now)
		flags |= FW_GEN_F_BORROWED;
	g->next_seq = seq + 1;
	g->flags = flags;
	if (flags == 0)
		g->fast_ms = ms;
	g->stats.issued++;
	*id = (ms << g->time_shift) | g->node_bits | seq;
	return 0;
}

FW_API int fw_gen_list(struct fw_gen *g, uint64_t now, uint64_t *ids, uint32_t n)
{
	uint32_t i;
	for (i = 0; i < n; i++) {
		int rc = fw_gen_next(g, now, &ids[i]);
		if (rc != 0)
			return i != 0 ? (int)i : rc;
	}
	return (int)i;
}

FW_API int fw_gen_range(struct fw_gen *g, uint64_t now, uint32_t want, uint64_t *first)
{
	if (want == 0)
		return -EINVAL;
	int rc = fw_gen_next(g, now, first);
	if (rc != 0)
		return rc;
	uint64_t left = g->seq_limit - g->next_seq;
	uint64_t more = FW_MIN((uint64_t)want - 1, left);
	g->next_seq += more;
	g->stats.issued += more;
	return (int)(more + 1);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "fw_err.h"
#include "fw_serve.h"

FW_API void fw_serve_config_default(struct fw_serve_config *cfg)
{
	cfg->list_max = FW_WIRE_LIST_MAX;
	cfg->ranges_max = FW_WIRE_RANGES_MAX;
	cfg->mark_retry_us = 1000;
	cfg->range_ids_max = FW_WIRE_RANGE_IDS_MAX;
}

FW_API int fw_serve_worker_changed(struct fw_serve *s)
{
	const struct fw_gen_config *g = &s->gen.cfg;
	int rc = fw_uuid7_fmt_init(&s->uuid7, &s->gen.layout, g->datacenter, g->worker);
	if (rc != 0)
		return rc;
	/* what fw_serve_answer_fast() writes at bytes 16-23 of an OK reply */
	s->reply_who = fw_serve_be64((uint64_t)(uint16_t)g->datacenter << 48 |
				     (uint64_t)(uint16_t)g->worker << 32);
	return 0;
}

FW_API int fw_serve_init(struct fw_serve *s, const struct fw_layout *layout,
			 const struct fw_gen_config *gcfg, const struct fw_serve_config *cfg)
{
	if (s == NULL)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	if (cfg != NULL)
		s->cfg = *cfg;
	else
		fw_serve_config_default(&s->cfg);
	if (s->cfg.list_max == 0 || s->cfg.list_max > FW_WIRE_LIST_MAX || s->cfg.ranges_max == 0 ||
	    s->cfg.ranges_max > FW_WIRE_RANGES_MAX || s->cfg.range_ids_max == 0 ||
	    s->cfg.range_ids_max > FW_WIRE_RANGE_IDS_MAX)
		return -EINVAL;
	int rc = fw_gen_init(&s->gen, layout, gcfg);
	if (rc != 0)
		return rc;
	rc = fw_serve_worker_changed(s);
	if (rc != 0)
		return rc;
	return fw_rng_init(&s->rng);
}

static uint8_t wire_flags(const struct fw_serve *s)
{
	uint32_t gf = fw_gen_flags(&s->gen);
	uint8_t f = (uint8_t)s->extra_flags;
	if (gf & FW_GEN_F_BORROWED)
		f |= FW_WIRE_F_BORROWED;
	if (gf & FW_GEN_F_BACKSTEP)
		f |= FW_WIRE_F_BACKSTEP;
	if (gf & FW_GEN_F_UNSAFE)
		f |= FW_WIRE_F_UNSAFE;
	return f;
}

/* Turns a generator refusal into the reply status a client acts on. */
static void refusal(struct fw_serve *s, int rc, struct fw_wire_hdr *h)
{
	switch (rc) {
	case FW_ECLOCK:
		h->status = FW_WIRE_ST_CLOCK_UNSAFE;
		break;
	case FW_EMARK:
		if (s->no_lease) { /* fleet: the lease ended, not the mark */
			h->status = FW_WIRE_ST_NO_LEASE;
			break;
		}
		h->status = FW_WIRE_ST_RETRY_AFTER;
		h->retry_after_us = s->cfg.mark_retry_us;
		break;
	default: /* FW_ERETRY */
		h->status = FW_WIRE_ST_RETRY_AFTER;
		h->retry_after_us = fw_gen_retry_after_us(&s->gen);
		break;
	}
}

static int answer_list(struct fw_serve *s, uint64_t now, void *buf, size_t budget,
		       struct fw_wire_hdr *h)
{
	uint64_t ids[FW_WIRE_LIST_MAX];
	size_t fit = (budget - FW_WIRE_HDR_LEN) / FW_WIRE_ID_LEN;
	uint32_t want = h->op == FW_WIRE_OP_ID ? 1 : FW_MIN(h->count, s->cfg.list_max);
	uint32_t n = (uint32_t)FW_MIN((size_t)want, fit);

	if (n == 0) {
		h->status = FW_WIRE_ST_REFUSED;
		return fw_wire_write_status(buf, budget, h);
	}
	int got = fw_gen_list(&s->gen, now, ids, n);
	h->flags = wire_flags(s);
	if (got < 0) {
		refusal(s, got, h);
		return fw_wire_write_status(buf, budget, h);
	}
	if ((uint32_t)got < h->count) {
		h->flags |= FW_WIRE_F_PARTIAL;
		s->stats.partial++;
	}
	s->stats.ids += (uint64_t)got;
	return fw_wire_write_ids(buf, budget, h, ids, (uint16_t)got);
}

static int answer_range(struct fw_serve *s, uint64_t now, void *buf, size_t budget,
			struct fw_wire_hdr *h)
{
	struct fw_wire_range r[FW_WIRE_RANGES_MAX];
	size_t fit = (budget - FW_WIRE_HDR_LEN) / FW_WIRE_RANGE_LEN;
	size_t max = FW_MIN(fit, (size_t)s->cfg.ranges_max);
	uint32_t want = FW_MIN((uint32_t)h->count, s->cfg.range_ids_max);
	uint32_t left = want;
	uint16_t n = 0;
	uint32_t flags = 0;
	int rc = 0;

	if (max == 0) {
		h->status = FW_WIRE_ST_REFUSED;
		return fw_wire_write_status(buf, budget, h);
	}
	while (left > 0 && n < max) {
		rc = fw_gen_range(&s->gen, now, left, &r[n].first);
		if (rc < 0)
			break;
		flags |= wire_flags(s);
		r[n++].n = (uint32_t)rc;
		left -= (uint32_t)rc;
	}
	if (n == 0) {
		h->flags = wire_flags(s);
		refusal(s, rc, h);
		return fw_wire_write_status(buf, budget, h);
	}
	h->flags = (uint8_t)flags;
	if (want < h->count)
		s->stats.capped++;
	if (left > 0 || want < h->count) {
		h->flags |= FW_WIRE_F_PARTIAL;
		s->stats.partial++;
	}
	s->stats.ids += want - left;
	return fw_wire_write_ranges(buf, budget, h, r, n);
}

/*
 * UUID7: as LIST, then each ID's (ms, sequence) becomes a UUIDv7 with fresh
 * random bits. The IDs themselves are never sent, so no Snowflake ID shares
 * a (ms, sequence) with a UUID.
 */
static int answer_uuid7(struct fw_serve *s, uint64_t now, void *buf, size_t budget,
			struct fw_wire_hdr *h)
{
	uint64_t ids[FW_WIRE_UUID7_MAX];
	uint8_t u[FW_WIRE_UUID7_MAX][FW_WIRE_UUID_LEN];
	size_t fit = (budget - FW_WIRE_HDR_LEN) / FW_WIRE_UUID_LEN;
	uint32_t n = (uint32_t)FW_MIN((size_t)h->count, fit);
	int got;

	if (n == 0) {
		h->status = FW_WIRE_ST_REFUSED;
		return fw_wire_write_status(buf, budget, h);
	}
	got = fw_gen_list(&s->gen, now, ids, n);
	h->flags = wire_flags(s);
	if (got < 0) {
		refusal(s, got, h);
		return fw_wire_write_status(buf, budget, h);
	}
	for (int i = 0; i < got; i++) {
		/* Only past year 10889 (Unix ms beyond 48 bits): cut the reply there. */
		if (FW_UNLIKELY(fw_uuid7_from_id(&s->uuid7, ids[i], fw_rng_u64(&s->rng), u[i]) !=
				0)) {
			got = i;
			break;
		}
	}
	if (got == 0) {
		h->status = FW_WIRE_ST_BAD_REQUEST;
		return fw_wire_write_status(buf, budget, h);
	}
	if ((uint32_t)got < h->count) {
		h->flags |= FW_WIRE_F_PARTIAL;
		s->stats.partial++;
	}
	s->stats.ids += (uint64_t)got;
	s->stats.uuids += (uint64_t)got;
	return fw_wire_write_uuids(buf, budget, h, (const uint8_t(*)[FW_WIRE_UUID_LEN])u,
				   (uint16_t)got);
}

static int answer_info(struct fw_serve *s, void *buf, size_t budget, struct fw_wire_hdr *h)
{
	const struct fw_layout *l = &s->gen.layout;
	struct fw_wire_info info = {
		.epoch_ms = l->epoch_ms,
		.time_bits = l->time_bits,
		.dc_bits = l->dc_bits,
		.worker_bits = l->worker_bits,
		.seq_bits = l->seq_bits,
		.version_min = FW_WIRE_VERSION,
		.version_max = FW_WIRE_VERSION,
		.list_max = s->cfg.list_max,
		.ranges_max = s->cfg.ranges_max,
		.max_borrow_ms = (uint16_t)FW_MIN(s->gen.cfg.max_borrow_ms, UINT16_MAX),
		.features = FW_WIRE_INFO_F_UUID7,
		.clock_offset_ns = s->clock_offset_ns,
	};
	h->flags = (uint8_t)s->extra_flags;
	if (budget < FW_WIRE_HDR_LEN + FW_WIRE_INFO_LEN) {
		h->status = FW_WIRE_ST_REFUSED;
		return fw_wire_write_status(buf, budget, h);
	}
	return fw_wire_write_info(buf, budget, h, &info);
}

FW_API int fw_serve_answer(struct fw_serve *s, uint64_t now, void *buf, size_t len, size_t cap,
			   bool trusted)
{
	struct fw_wire_hdr h;
	int rc = fw_wire_parse_request(buf, len, &h);

	switch (rc) {
	case FW_EWIRE_SHORT:
		s->stats.drops[FW_SERVE_DROP_SHORT]++;
		return rc;
	case FW_EWIRE_MAGIC:
		s->stats.drops[FW_SERVE_DROP_MAGIC]++;
		return rc;
	case FW_EWIRE_BAD:
		if (h.op & FW_WIRE_OP_REPLY) {
			s->stats.drops[FW_SERVE_DROP_REPLY]++;
			return rc;
		}
		break;
	default:
		break;
	}

	size_t budget = FW_MIN(cap, (size_t)FW_WIRE_MTU_PAYLOAD);
	if (!trusted)
		budget = FW_MIN(budget, len);

	/* The reply reuses the request's header fields; only these change. */
	h.status = FW_WIRE_ST_OK;
	h.flags = 0;
	h.retry_after_us = 0;
	h.datacenter = (uint16_t)s->gen.cfg.datacenter;
	h.worker = (uint16_t)s->gen.cfg.worker;

	int out;
	if (rc == FW_EWIRE_VERSION) {
		h.status = FW_WIRE_ST_BAD_VERSION;
		h.version = FW_WIRE_VERSION;
		out = fw_wire_write_status(buf, budget, &h);
	} else if (rc == FW_EWIRE_BAD) {
		h.status = FW_WIRE_ST_BAD_REQUEST;
		out = fw_wire_write_status(buf, budget, &h);
	} else {
		switch (h.op) {
		case FW_WIRE_OP_ID:
		case FW_WIRE_OP_LIST:
			out = answer_list(s, now, buf, budget, &h);
			break;
		case FW_WIRE_OP_RANGE:
			out = answer_range(s, now, buf, budget, &h);
			break;
		case FW_WIRE_OP_UUID7:
			out = answer_uuid7(s, now, buf, budget, &h);
			break;
		default:
			out = answer_info(s, buf, budget, &h);
			break;
		}
	}
	if (out < 0) {
		/* Cannot happen with budget >= 24 (a parsed request is >= 24 bytes). */
		s->stats.drops[FW_SERVE_DROP_SHORT]++;
		return out;
	}
	s->stats.requests++;
	s->stats.ops[h.op < FW_ARRAY_SIZE(s->stats.ops) && rc == 0 ? h.op : 0]++;
	s->stats.status[h.status < FW_WIRE_ST_COUNT ? h.status : 0]++;
	return out;
}

FW_API void fw_serve_stats_add(struct fw_serve_stats *to, const struct fw_serve_stats *from)
{
	const uint64_t *f = (const uint64_t *)from;
	uint64_t *t = (uint64_t *)to;
	for (size_t i = 0; i < sizeof(*from) / sizeof(uint64_t); i++)
		t[i] += f[i];
}

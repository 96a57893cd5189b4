/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "fw_err.h"
#include "fw_wire.h"

static bool cur_fits(struct fw_wire_cur *c, size_t n, int err)
{
	if (FW_UNLIKELY(c->error != 0))
		return false;
	if (FW_UNLIKELY((size_t)(c->end - c->pos) < n)) {
		c->error = err;
		return false;
	}
	return true;
}

void fw_wire_cur_init(struct fw_wire_cur *c, void *buf, size_t len)
{
	c->pos = buf;
	/* NULL + 0 is undefined, and a zero-length cursor over NULL is legitimate. */
	c->end = len != 0 ? c->pos + len : c->pos;
	c->error = 0;
}

uint8_t fw_wire_get_u8(struct fw_wire_cur *c)
{
	if (!cur_fits(c, 1, FW_EWIRE_SHORT))
		return 0;
	return *c->pos++;
}

uint16_t fw_wire_get_u16(struct fw_wire_cur *c)
{
	uint16_t v;

	if (!cur_fits(c, 2, FW_EWIRE_SHORT))
		return 0;
	v = (uint16_t)((uint16_t)c->pos[0] << 8 | c->pos[1]);
	c->pos += 2;
	return v;
}

uint32_t fw_wire_get_u32(struct fw_wire_cur *c)
{
	uint32_t v;

	if (!cur_fits(c, 4, FW_EWIRE_SHORT))
		return 0;
	v = (uint32_t)c->pos[0] << 24 | (uint32_t)c->pos[1] << 16 | (uint32_t)c->pos[2] << 8 |
	    c->pos[3];
	c->pos += 4;
	return v;
}

uint64_t fw_wire_get_u64(struct fw_wire_cur *c)
{
	uint64_t hi, lo;

	if (!cur_fits(c, 8, FW_EWIRE_SHORT))
		return 0;
	hi = fw_wire_get_u32(c);
	lo = fw_wire_get_u32(c);
	return hi << 32 | lo;
}

void fw_wire_put_u8(struct fw_wire_cur *c, uint8_t v)
{
	if (!cur_fits(c, 1, FW_EWIRE_SPACE))
		return;
	*c->pos++ = v;
}

void fw_wire_put_u16(struct fw_wire_cur *c, uint16_t v)
{
	if (!cur_fits(c, 2, FW_EWIRE_SPACE))
		return;
	c->pos[0] = (uint8_t)(v >> 8);
	c->pos[1] = (uint8_t)v;
	c->pos += 2;
}

void fw_wire_put_u32(struct fw_wire_cur *c, uint32_t v)
{
	if (!cur_fits(c, 4, FW_EWIRE_SPACE))
		return;
	c->pos[0] = (uint8_t)(v >> 24);
	c->pos[1] = (uint8_t)(v >> 16);
	c->pos[2] = (uint8_t)(v >> 8);
	c->pos[3] = (uint8_t)v;
	c->pos += 4;
}

void fw_wire_put_u64(struct fw_wire_cur *c, uint64_t v)
{
	if (!cur_fits(c, 8, FW_EWIRE_SPACE))
		return;
	fw_wire_put_u32(c, (uint32_t)(v >> 32));
	fw_wire_put_u32(c, (uint32_t)v);
}

size_t fw_wire_cur_used(const struct fw_wire_cur *c, const void *start)
{
	return (size_t)(c->pos - (const uint8_t *)start);
}

size_t fw_wire_reply_size(uint8_t op, uint16_t count)
{
	switch (op) {
	case FW_WIRE_OP_ID:
	case FW_WIRE_OP_LIST:
		return FW_WIRE_HDR_LEN + (size_t)count * FW_WIRE_ID_LEN;
	case FW_WIRE_OP_RANGE:
		return FW_WIRE_HDR_LEN + (size_t)count * FW_WIRE_RANGE_LEN;
	case FW_WIRE_OP_INFO:
		return FW_WIRE_HDR_LEN + FW_WIRE_INFO_LEN;
	case FW_WIRE_OP_UUID7:
		return FW_WIRE_HDR_LEN + (size_t)count * FW_WIRE_UUID_LEN;
	default:
		return 0;
	}
}

size_t fw_wire_request_size(uint8_t op, uint16_t count)
{
	return fw_wire_request_size_seq(op, count, 12);
}

size_t fw_wire_request_size_seq(uint8_t op, uint16_t count, unsigned seq_bits)
{
	size_t per_range;
	size_t n;

	if (seq_bits < 1 || seq_bits > 22)
		seq_bits = 12;
	per_range = (size_t)1 << seq_bits;

	switch (op) {
	case FW_WIRE_OP_ID:
		/* The count of an ID request is always 1; a bad one gets a 24-byte status. */
		n = fw_wire_reply_size(op, 1);
		break;
	case FW_WIRE_OP_LIST:
	case FW_WIRE_OP_INFO:
	case FW_WIRE_OP_UUID7:
		n = fw_wire_reply_size(op, count);
		break;
	case FW_WIRE_OP_RANGE:
		/*
		 * A run of IDs breaks into a new range at each millisecond and
		 * at each borrowed millisecond, so one range per 4096 IDs plus
		 * one for a run that starts mid-millisecond covers the usual
		 * answer without padding every RANGE request to 16 ranges.
		 */
		n = ((size_t)count + per_range - 1) / per_range + 1;
		n = fw_wire_reply_size(op, (uint16_t)FW_MIN(n, (size_t)FW_WIRE_RANGES_MAX));
		break;
	default:
		return 0;
	}
	return FW_MAX(n, (size_t)FW_WIRE_HDR_LEN);
}

static void put_hdr(struct fw_wire_cur *c, const struct fw_wire_hdr *h, uint8_t op, uint8_t status,
		    uint16_t count)
{
	fw_wire_put_u16(c, FW_WIRE_MAGIC);
	fw_wire_put_u8(c, FW_WIRE_VERSION);
	fw_wire_put_u8(c, op);
	fw_wire_put_u8(c, status);
	fw_wire_put_u8(c, h->flags);
	fw_wire_put_u16(c, count);
	fw_wire_put_u64(c, h->tag);
	fw_wire_put_u16(c, h->datacenter);
	fw_wire_put_u16(c, h->worker);
	fw_wire_put_u32(c, h->retry_after_us);
}

/* Reads the header after the magic; fields past a short buffer read 0. */
static void get_hdr(struct fw_wire_cur *c, struct fw_wire_hdr *h)
{
	h->version = fw_wire_get_u8(c);
	h->op = fw_wire_get_u8(c);
	h->status = fw_wire_get_u8(c);
	h->flags = fw_wire_get_u8(c);
	h->count = fw_wire_get_u16(c);
	h->tag = fw_wire_get_u64(c);
	h->datacenter = fw_wire_get_u16(c);
	h->worker = fw_wire_get_u16(c);
	h->retry_after_us = fw_wire_get_u32(c);
}

int fw_wire_write_request(void *buf, size_t cap, uint8_t op, uint16_t count, uint64_t tag, bool pad)
{
	struct fw_wire_hdr h = {.tag = tag};
	struct fw_wire_cur c;
	size_t len = FW_WIRE_HDR_LEN;

	if (pad)
		len = FW_MAX(len, fw_wire_request_size(op, count));
	if (cap < len)
		return FW_EWIRE_SPACE;
	fw_wire_cur_init(&c, buf, cap);
	put_hdr(&c, &h, op, 0, count);
	memset(c.pos, 0, len - FW_WIRE_HDR_LEN);
	return (int)len;
}

int fw_wire_write_request_len(void *buf, size_t cap, uint8_t op, uint16_t count, uint64_t tag,
			      size_t len)
{
	struct fw_wire_hdr h = {.tag = tag};
	struct fw_wire_cur c;

	len = FW_MAX(len, (size_t)FW_WIRE_HDR_LEN);
	if (cap < len)
		return FW_EWIRE_SPACE;
	fw_wire_cur_init(&c, buf, cap);
	put_hdr(&c, &h, op, 0, count);
	memset(c.pos, 0, len - FW_WIRE_HDR_LEN);
	return (int)len;
}

static bool count_valid(uint8_t op, uint16_t count)
{
	switch (op) {
	case FW_WIRE_OP_ID:
		return count == 1;
	case FW_WIRE_OP_LIST:
		return count >= 1 && count <= FW_WIRE_LIST_MAX;
	case FW_WIRE_OP_RANGE:
		return count >= 1;
	case FW_WIRE_OP_INFO:
		return count <= 1;
	case FW_WIRE_OP_UUID7:
		return count >= 1 && count <= FW_WIRE_UUID7_MAX;
	default:
		return false;
	}
}

int fw_wire_parse_request(const void *buf, size_t len, struct fw_wire_hdr *h)
{
	struct fw_wire_cur c;

	if (len < FW_WIRE_HDR_LEN)
		return FW_EWIRE_SHORT;
	/* The cursor only reads; it takes a non-const pointer so one type serves both ways. */
	fw_wire_cur_init(&c, (void *)(uintptr_t)buf, len);
	if (fw_wire_get_u16(&c) != FW_WIRE_MAGIC)
		return FW_EWIRE_MAGIC;
	get_hdr(&c, h);
	/*
	 * The reply bit is tested before the version so that no reply, of
	 * any version, is ever answered: two responders answering each
	 * other's replies would loop forever.
	 */
	if (h->op & FW_WIRE_OP_REPLY)
		return FW_EWIRE_BAD;
	if (h->version != FW_WIRE_VERSION)
		return FW_EWIRE_VERSION;
	if (!count_valid(h->op, h->count))
		return FW_EWIRE_BAD;
	return 0;
}

static int write_reply(void *buf, size_t cap, const struct fw_wire_hdr *h, uint8_t status,
		       uint16_t n, size_t len, struct fw_wire_cur *c)
{
	if (cap < len)
		return FW_EWIRE_SPACE;
	fw_wire_cur_init(c, buf, cap);
	put_hdr(c, h, h->op | FW_WIRE_OP_REPLY, status, n);
	return 0;
}

int fw_wire_write_ids(void *buf, size_t cap, const struct fw_wire_hdr *h, const uint64_t *ids,
		      uint16_t n)
{
	size_t len = FW_WIRE_HDR_LEN + (size_t)n * FW_WIRE_ID_LEN;
	struct fw_wire_cur c;
	int ret;

	ret = write_reply(buf, cap, h, h->status, n, len, &c);
	if (ret < 0)
		return ret;
	for (uint16_t i = 0; i < n; i++)
		fw_wire_put_u64(&c, ids[i]);
	return (int)len;
}

int fw_wire_write_ranges(void *buf, size_t cap, const struct fw_wire_hdr *h,
			 const struct fw_wire_range *r, uint16_t n)
{
	size_t len = FW_WIRE_HDR_LEN + (size_t)n * FW_WIRE_RANGE_LEN;
	struct fw_wire_cur c;
	int ret;

	ret = write_reply(buf, cap, h, h->status, n, len, &c);
	if (ret < 0)
		return ret;
	for (uint16_t i = 0; i < n; i++) {
		fw_wire_put_u64(&c, r[i].first);
		fw_wire_put_u32(&c, r[i].n);
	}
	return (int)len;
}

int fw_wire_write_uuids(void *buf, size_t cap, const struct fw_wire_hdr *h,
			const uint8_t (*uuids)[FW_WIRE_UUID_LEN], uint16_t n)
{
	size_t len = FW_WIRE_HDR_LEN + (size_t)n * FW_WIRE_UUID_LEN;
	struct fw_wire_cur c;
	int ret;

	ret = write_reply(buf, cap, h, h->status, n, len, &c);
	if (ret < 0)
		return ret;
	memcpy(c.pos, uuids, (size_t)n * FW_WIRE_UUID_LEN);
	return (int)len;
}

int fw_wire_write_info(void *buf, size_t cap, const struct fw_wire_hdr *h,
		       const struct fw_wire_info *info)
{
	size_t len = FW_WIRE_HDR_LEN + FW_WIRE_INFO_LEN;
	struct fw_wire_cur c;
	int ret;

	/* Count 1, one info record: an OK reply with count 0 is malformed. */
	ret = write_reply(buf, cap, h, h->status, 1, len, &c);
	if (ret < 0)
		return ret;
	fw_wire_put_u64(&c, info->epoch_ms);
	fw_wire_put_u8(&c, info->time_bits);
	fw_wire_put_u8(&c, info->dc_bits);
	fw_wire_put_u8(&c, info->worker_bits);
	fw_wire_put_u8(&c, info->seq_bits);
	fw_wire_put_u8(&c, info->version_min);
	fw_wire_put_u8(&c, info->version_max);
	fw_wire_put_u16(&c, info->list_max);
	fw_wire_put_u16(&c, info->ranges_max);
	fw_wire_put_u16(&c, info->max_borrow_ms);
	fw_wire_put_u32(&c, info->features);
	fw_wire_put_u64(&c, (uint64_t)info->clock_offset_ns);
	return (int)len;
}

int fw_wire_write_status(void *buf, size_t cap, const struct fw_wire_hdr *h)
{
	struct fw_wire_cur c;
	int ret;

	ret = write_reply(buf, cap, h, h->status, 0, FW_WIRE_HDR_LEN, &c);
	if (ret < 0)
		return ret;
	return FW_WIRE_HDR_LEN;
}

static uint16_t reply_count_max(uint8_t op)
{
	switch (op) {
	case FW_WIRE_OP_ID:
	case FW_WIRE_OP_INFO:
		return 1;
	case FW_WIRE_OP_LIST:
		return FW_WIRE_LIST_MAX;
	case FW_WIRE_OP_RANGE:
		return FW_WIRE_RANGES_MAX;
	case FW_WIRE_OP_UUID7:
		return FW_WIRE_UUID7_MAX;
	default:
		return 0;
	}
}

static void get_info(struct fw_wire_cur *c, struct fw_wire_info *info)
{
	info->epoch_ms = fw_wire_get_u64(c);
	info->time_bits = fw_wire_get_u8(c);
	info->dc_bits = fw_wire_get_u8(c);
	info->worker_bits = fw_wire_get_u8(c);
	info->seq_bits = fw_wire_get_u8(c);
	info->version_min = fw_wire_get_u8(c);
	info->version_max = fw_wire_get_u8(c);
	info->list_max = fw_wire_get_u16(c);
	info->ranges_max = fw_wire_get_u16(c);
	info->max_borrow_ms = fw_wire_get_u16(c);
	info->features = fw_wire_get_u32(c);
	info->clock_offset_ns = (int64_t)fw_wire_get_u64(c);
}

int fw_wire_parse_reply(const void *buf, size_t len, struct fw_wire_reply *r)
{
	struct fw_wire_hdr *h = &r->hdr;
	struct fw_wire_cur c;
	uint8_t op;
	size_t need;

	if (len < FW_WIRE_HDR_LEN)
		return FW_EWIRE_SHORT;
	fw_wire_cur_init(&c, (void *)(uintptr_t)buf, len);
	if (fw_wire_get_u16(&c) != FW_WIRE_MAGIC)
		return FW_EWIRE_MAGIC;
	get_hdr(&c, h);
	if (h->version != FW_WIRE_VERSION)
		return FW_EWIRE_VERSION;
	if (!(h->op & FW_WIRE_OP_REPLY) || h->status >= FW_WIRE_ST_COUNT)
		return FW_EWIRE_BAD;
	op = h->op & (uint8_t)~FW_WIRE_OP_REPLY;
	if (reply_count_max(op) == 0)
		return FW_EWIRE_BAD;
	/* Error statuses carry no body, so a count there could only mislead. */
	if (h->status != FW_WIRE_ST_OK)
		need = h->count == 0 ? FW_WIRE_HDR_LEN : 0;
	else if (h->count == 0 || h->count > reply_count_max(op))
		need = 0;
	else
		need = fw_wire_reply_size(op, h->count);
	if (need == 0)
		return FW_EWIRE_BAD;
	/* Validating the header first makes any truncation of a valid reply SHORT. */
	if (len < need)
		return FW_EWIRE_SHORT;
	if (len > need)
		return FW_EWIRE_BAD;
	if (h->status != FW_WIRE_ST_OK)
		return 0;

	switch (op) {
	case FW_WIRE_OP_ID:
	case FW_WIRE_OP_LIST:
		for (uint16_t i = 0; i < h->count; i++)
			r->body.ids[i] = fw_wire_get_u64(&c);
		break;
	case FW_WIRE_OP_RANGE:
		for (uint16_t i = 0; i < h->count; i++) {
			r->body.ranges[i].first = fw_wire_get_u64(&c);
			r->body.ranges[i].n = fw_wire_get_u32(&c);
			if (r->body.ranges[i].n == 0)
				return FW_EWIRE_BAD;
		}
		break;
	case FW_WIRE_OP_INFO:
		get_info(&c, &r->body.info);
		break;
	case FW_WIRE_OP_UUID7:
		for (uint16_t i = 0; i < h->count; i++)
			for (unsigned k = 0; k < FW_WIRE_UUID_LEN; k++)
				r->body.uuids[i][k] = fw_wire_get_u8(&c);
		break;
	}
	/* Lengths were checked above; this guards the cursor arithmetic itself. */
	return c.error;
}

const char *fw_wire_op_name(uint8_t op)
{
	static const char *const names[] = {
		[FW_WIRE_OP_ID] = "id",       [FW_WIRE_OP_LIST] = "list",
		[FW_WIRE_OP_RANGE] = "range", [FW_WIRE_OP_INFO] = "info",
		[FW_WIRE_OP_UUID7] = "uuid7",
	};
	/* Logs name a reply by its request's op. */
	uint8_t i = op & (uint8_t)~FW_WIRE_OP_REPLY;

	if (i >= FW_ARRAY_SIZE(names) || names[i] == NULL)
		return "unknown";
	return names[i];
}

const char *fw_wire_status_name(uint8_t status)
{
	static const char *const names[FW_WIRE_ST_COUNT] = {
		[FW_WIRE_ST_OK] = "ok",
		[FW_WIRE_ST_BAD_REQUEST] = "bad-request",
		[FW_WIRE_ST_BAD_VERSION] = "bad-version",
		[FW_WIRE_ST_RETRY_AFTER] = "retry-after",
		[FW_WIRE_ST_REFUSED] = "refused",
		[FW_WIRE_ST_CLOCK_UNSAFE] = "clock-unsafe",
		[FW_WIRE_ST_NO_LEASE] = "no-lease",
	};

	if (status >= FW_WIRE_ST_COUNT)
		return "unknown";
	return names[status];
}

const char *fw_wire_result_name(int rc)
{
	switch (rc) {
	case 0:
		return "ok";
	case FW_EWIRE_SHORT:
		return "short";
	case FW_EWIRE_MAGIC:
		return "magic";
	case FW_EWIRE_VERSION:
		return "version";
	case FW_EWIRE_BAD:
		return "bad";
	default:
		return "?";
	}
}

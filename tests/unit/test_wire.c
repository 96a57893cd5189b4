/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_wire.h"

#define TAG 0x0123456789ABCDEFull

static const uint8_t all_ops[] = {FW_WIRE_OP_ID, FW_WIRE_OP_LIST, FW_WIRE_OP_RANGE,
				  FW_WIRE_OP_INFO};

static struct fw_wire_hdr reply_hdr(uint8_t op, uint8_t status)
{
	struct fw_wire_hdr h = {
		.version = FW_WIRE_VERSION,
		.op = op,
		.status = status,
		.flags = FW_WIRE_F_BORROWED | FW_WIRE_F_SLEWING,
		.tag = TAG,
		.datacenter = 0x0102,
		.worker = 0x0304,
		.retry_after_us = status == FW_WIRE_ST_RETRY_AFTER ? 0x05060708u : 0,
	};
	return h;
}

static void assert_hdr_equal(const struct fw_wire_hdr *want, const struct fw_wire_hdr *got)
{
	assert_int_equal(got->version, want->version);
	assert_int_equal(got->op, want->op);
	assert_int_equal(got->status, want->status);
	assert_int_equal(got->flags, want->flags);
	assert_int_equal(got->count, want->count);
	assert_true(got->tag == want->tag);
	assert_int_equal(got->datacenter, want->datacenter);
	assert_int_equal(got->worker, want->worker);
	assert_int_equal(got->retry_after_us, want->retry_after_us);
}

/*
 * A message copied so that its last byte is the last readable byte before
 * a PROT_NONE page: a parser that reads one byte too far faults, even in a
 * build without a sanitizer.
 */
struct guarded {
	uint8_t *map;
	size_t page;
};

static void guarded_init(struct guarded *g)
{
	g->page = (size_t)sysconf(_SC_PAGESIZE);
	g->map =
		mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect(g->map + g->page, g->page, PROT_NONE), 0);
}

static const uint8_t *guarded_copy(struct guarded *g, const uint8_t *msg, size_t len)
{
	uint8_t *p = g->map + g->page - len;

	assert_true(len <= g->page);
	memcpy(p, msg, len);
	return p;
}

static void guarded_free(struct guarded *g)
{
	munmap(g->map, 2 * g->page);
}

/* Golden bytes, the worked example of PROTOCOL.md. */
static void test_golden_id(void **state)
{
	static const uint8_t req[] = {
		0x46, 0x4B, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x23, 0x45,
		0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t rep[] = {
		0x46, 0x4B, 0x01, 0x81, 0x00, 0x00, 0x00, 0x01, 0x01, 0x23, 0x45,
		0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFA, 0x00, 0x70, 0x00,
	};
	struct fw_wire_hdr h;
	struct fw_wire_reply r;
	uint8_t buf[64];
	uint64_t id = 0xFA007000ull; /* 1000 ms after the epoch, worker 7, sequence 0 */
	int n;

	(void)state;
	n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, TAG, true);
	assert_int_equal(n, sizeof(req));
	assert_memory_equal(buf, req, sizeof(req));

	assert_int_equal(fw_wire_parse_request(req, sizeof(req), &h), 0);
	h.worker = 7;
	n = fw_wire_write_ids(buf, sizeof(buf), &h, &id, 1);
	assert_int_equal(n, sizeof(rep));
	assert_memory_equal(buf, rep, sizeof(rep));

	assert_int_equal(fw_wire_parse_reply(rep, sizeof(rep), &r), 0);
	assert_int_equal(r.hdr.op, FW_WIRE_OP_ID | FW_WIRE_OP_REPLY);
	assert_true(r.hdr.tag == TAG);
	assert_true(r.body.ids[0] == id);
}

static void check_request(uint8_t op, uint16_t count, bool pad)
{
	struct fw_wire_hdr h;
	uint8_t buf[2048];
	size_t want = pad ? fw_wire_request_size(op, count) : FW_WIRE_HDR_LEN;
	int n;

	memset(buf, 0xAA, sizeof(buf));
	n = fw_wire_write_request(buf, sizeof(buf), op, count, TAG + count, pad);
	assert_int_equal(n, want);
	for (size_t i = FW_WIRE_HDR_LEN; i < want; i++)
		assert_int_equal(buf[i], 0);
	/* Nothing past the returned length is touched. */
	assert_int_equal(buf[want], 0xAA);

	memset(&h, 0x55, sizeof(h));
	assert_int_equal(fw_wire_parse_request(buf, (size_t)n, &h), 0);
	assert_int_equal(h.version, FW_WIRE_VERSION);
	assert_int_equal(h.op, op);
	assert_int_equal(h.status, 0);
	assert_int_equal(h.flags, 0);
	assert_int_equal(h.count, count);
	assert_true(h.tag == TAG + count);
	assert_int_equal(h.datacenter, 0);
	assert_int_equal(h.worker, 0);
	assert_int_equal(h.retry_after_us, 0);
}

static void test_request_roundtrip(void **state)
{
	(void)state;
	for (int pad = 0; pad <= 1; pad++) {
		check_request(FW_WIRE_OP_ID, 1, pad);
		for (uint16_t c = 1; c <= FW_WIRE_LIST_MAX; c++)
			check_request(FW_WIRE_OP_LIST, c, pad);
		check_request(FW_WIRE_OP_RANGE, 1, pad);
		check_request(FW_WIRE_OP_RANGE, 4096, pad);
		check_request(FW_WIRE_OP_RANGE, 4097, pad);
		check_request(FW_WIRE_OP_RANGE, FW_WIRE_RANGE_IDS_MAX, pad);
		check_request(FW_WIRE_OP_INFO, 0, pad);
		check_request(FW_WIRE_OP_INFO, 1, pad);
	}
}

static void test_status_replies(void **state)
{
	struct fw_wire_reply r;
	uint8_t buf[64];

	(void)state;
	for (uint8_t st = FW_WIRE_ST_BAD_REQUEST; st < FW_WIRE_ST_COUNT; st++) {
		for (size_t i = 0; i < FW_ARRAY_SIZE(all_ops); i++) {
			struct fw_wire_hdr h = reply_hdr(all_ops[i], st);
			struct fw_wire_hdr want = h;

			/* A count left over from the request must not leak into the reply. */
			h.count = 5;
			assert_int_equal(fw_wire_write_status(buf, sizeof(buf), &h),
					 FW_WIRE_HDR_LEN);
			memset(&r, 0x55, sizeof(r));
			assert_int_equal(fw_wire_parse_reply(buf, FW_WIRE_HDR_LEN, &r), 0);
			want.op |= FW_WIRE_OP_REPLY;
			want.count = 0;
			assert_hdr_equal(&want, &r.hdr);
		}
	}
}

static void test_reply_ids(void **state)
{
	uint64_t ids[FW_WIRE_LIST_MAX];
	struct fw_wire_reply r;
	uint8_t buf[FW_WIRE_MTU_PAYLOAD];
	struct fw_wire_hdr h = reply_hdr(FW_WIRE_OP_ID, FW_WIRE_ST_OK);
	struct fw_wire_hdr want;
	int n;

	(void)state;
	for (size_t i = 0; i < FW_WIRE_LIST_MAX; i++)
		ids[i] = 0x7F00000000000000ull + i * 0x0101010101ull;

	n = fw_wire_write_ids(buf, sizeof(buf), &h, ids, 1);
	assert_int_equal(n, fw_wire_reply_size(FW_WIRE_OP_ID, 1));
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
	want = h;
	want.op |= FW_WIRE_OP_REPLY;
	want.count = 1;
	assert_hdr_equal(&want, &r.hdr);
	assert_true(r.body.ids[0] == ids[0]);

	h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_OK);
	h.flags |= FW_WIRE_F_PARTIAL;
	for (uint16_t c = 1; c <= FW_WIRE_LIST_MAX; c++) {
		n = fw_wire_write_ids(buf, sizeof(buf), &h, ids, c);
		assert_int_equal(n, fw_wire_reply_size(FW_WIRE_OP_LIST, c));
		memset(&r, 0, sizeof(r));
		assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
		want = h;
		want.op |= FW_WIRE_OP_REPLY;
		want.count = c;
		assert_hdr_equal(&want, &r.hdr);
		assert_memory_equal(r.body.ids, ids, c * sizeof(ids[0]));
	}
	/* A full LIST reply is exactly one MTU payload. */
	assert_int_equal(fw_wire_reply_size(FW_WIRE_OP_LIST, FW_WIRE_LIST_MAX),
			 FW_WIRE_MTU_PAYLOAD);
}

static void test_reply_ranges(void **state)
{
	struct fw_wire_range rg[FW_WIRE_RANGES_MAX];
	struct fw_wire_reply r;
	uint8_t buf[256];
	struct fw_wire_hdr h = reply_hdr(FW_WIRE_OP_RANGE, FW_WIRE_ST_OK);
	struct fw_wire_hdr want;
	int n;

	(void)state;
	for (size_t i = 0; i < FW_WIRE_RANGES_MAX; i++) {
		rg[i].first = 0x1000000000000000ull + (i << 22);
		rg[i].n = i == 0 ? 0xFFFFFFFFu : (uint32_t)(4096 - i);
	}
	for (uint16_t c = 1; c <= FW_WIRE_RANGES_MAX; c++) {
		n = fw_wire_write_ranges(buf, sizeof(buf), &h, rg, c);
		assert_int_equal(n, fw_wire_reply_size(FW_WIRE_OP_RANGE, c));
		memset(&r, 0, sizeof(r));
		assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
		want = h;
		want.op |= FW_WIRE_OP_REPLY;
		want.count = c;
		assert_hdr_equal(&want, &r.hdr);
		for (uint16_t i = 0; i < c; i++) {
			assert_true(r.body.ranges[i].first == rg[i].first);
			assert_int_equal(r.body.ranges[i].n, rg[i].n);
		}
	}
}

static const struct fw_wire_info sample_info = {
	.epoch_ms = 1767225600000ull,
	.time_bits = 41,
	.dc_bits = 5,
	.worker_bits = 5,
	.seq_bits = 12,
	.version_min = 1,
	.version_max = 1,
	.list_max = FW_WIRE_LIST_MAX,
	.ranges_max = FW_WIRE_RANGES_MAX,
	.max_borrow_ms = 0xBEEF,
	.features = FW_WIRE_INFO_F_UUID7,
	.clock_offset_ns = -1234567890123ll,
};

static void test_reply_info(void **state)
{
	struct fw_wire_reply r;
	uint8_t buf[128];
	struct fw_wire_hdr h = reply_hdr(FW_WIRE_OP_INFO, FW_WIRE_ST_OK);
	const struct fw_wire_info *in = &sample_info, *out = &r.body.info;
	int n;

	(void)state;
	n = fw_wire_write_info(buf, sizeof(buf), &h, in);
	assert_int_equal(n, FW_WIRE_HDR_LEN + FW_WIRE_INFO_LEN);
	assert_int_equal(n, fw_wire_reply_size(FW_WIRE_OP_INFO, 1));
	/* Offsets documented in fw_wire.h and PROTOCOL.md. */
	assert_int_equal(buf[FW_WIRE_HDR_LEN + 8], 41);
	assert_int_equal(buf[FW_WIRE_HDR_LEN + 14], 0);
	assert_int_equal(buf[FW_WIRE_HDR_LEN + 15], FW_WIRE_LIST_MAX);
	assert_int_equal(buf[FW_WIRE_HDR_LEN + 18], 0xBE);
	assert_int_equal(buf[FW_WIRE_HDR_LEN + 24], 0xFF);
	/* features: u32 at datagram offset 44, bit 0 = UUID7. */
	assert_memory_equal(buf + 44, "\x00\x00\x00\x01", 4);

	memset(&r, 0, sizeof(r));
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
	assert_int_equal(r.hdr.op, FW_WIRE_OP_INFO | FW_WIRE_OP_REPLY);
	assert_int_equal(r.hdr.count, 1);
	assert_true(out->epoch_ms == in->epoch_ms);
	assert_int_equal(out->time_bits, in->time_bits);
	assert_int_equal(out->dc_bits, in->dc_bits);
	assert_int_equal(out->worker_bits, in->worker_bits);
	assert_int_equal(out->seq_bits, in->seq_bits);
	assert_int_equal(out->version_min, in->version_min);
	assert_int_equal(out->version_max, in->version_max);
	assert_int_equal(out->list_max, in->list_max);
	assert_int_equal(out->ranges_max, in->ranges_max);
	assert_int_equal(out->max_borrow_ms, in->max_borrow_ms);
	assert_int_equal(out->features, in->features);
	assert_true(out->clock_offset_ns == in->clock_offset_ns);
}

static void test_uuid7(void **state)
{
	uint8_t u[FW_WIRE_UUID7_MAX][FW_WIRE_UUID_LEN];
	uint8_t buf[FW_WIRE_MTU_PAYLOAD + 8];
	struct fw_wire_hdr h = reply_hdr(FW_WIRE_OP_UUID7, FW_WIRE_ST_OK);
	struct fw_wire_hdr rq;
	struct fw_wire_reply r;
	int n;

	(void)state;
	/* Request: count 1..90, padded to the full reply. */
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_UUID7, 1), 40);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_UUID7, 2), 56);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_UUID7, FW_WIRE_UUID7_MAX), 1464);
	assert_true(fw_wire_request_size(FW_WIRE_OP_UUID7, FW_WIRE_UUID7_MAX) <=
		    FW_WIRE_MTU_PAYLOAD);
	assert_true(fw_wire_reply_size(FW_WIRE_OP_UUID7, FW_WIRE_UUID7_MAX + 1) >
		    FW_WIRE_MTU_PAYLOAD);
	n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_UUID7, 2, TAG, true);
	assert_int_equal(n, 56);
	assert_memory_equal(buf, "\x46\x4B\x01\x05\x00\x00\x00\x02", 8);
	assert_int_equal(fw_wire_parse_request(buf, (size_t)n, &rq), 0);
	assert_int_equal(rq.op, FW_WIRE_OP_UUID7);
	assert_int_equal(rq.count, 2);

	/* Reply: UUIDs copied byte for byte at 24 + 16 i. */
	for (unsigned i = 0; i < FW_WIRE_UUID7_MAX; i++)
		for (unsigned k = 0; k < FW_WIRE_UUID_LEN; k++)
			u[i][k] = (uint8_t)(i * 16 + k);
	n = fw_wire_write_uuids(buf, sizeof(buf), &h, (const uint8_t(*)[FW_WIRE_UUID_LEN])u,
				FW_WIRE_UUID7_MAX);
	assert_int_equal(n, 1464);
	assert_int_equal(buf[3], FW_WIRE_OP_UUID7 | FW_WIRE_OP_REPLY);
	assert_memory_equal(buf + 24 + 16 * 3, u[3], 16);
	memset(&r, 0, sizeof(r));
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
	assert_int_equal(r.hdr.count, FW_WIRE_UUID7_MAX);
	assert_memory_equal(r.body.uuids, u, sizeof(u));
	/* Truncated body, trailing byte, count above 90, count 0. */
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n - 1, &r), FW_EWIRE_SHORT);
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n + 1, &r), FW_EWIRE_BAD);
	buf[7] = FW_WIRE_UUID7_MAX + 1;
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n + 16, &r), FW_EWIRE_BAD);
	buf[7] = 0;
	assert_int_equal(fw_wire_parse_reply(buf, FW_WIRE_HDR_LEN, &r), FW_EWIRE_BAD);
	/* Not enough room. */
	assert_int_equal(fw_wire_write_uuids(buf, 39, &h, (const uint8_t(*)[FW_WIRE_UUID_LEN])u, 1),
			 FW_EWIRE_SPACE);
}

static void test_range_padding_seq(void **state)
{
	uint8_t buf[256];

	(void)state;
	/* 12 sequence bits: the same as fw_wire_request_size(). */
	for (unsigned n = 1; n <= 65535; n += 97)
		assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, (uint16_t)n, 12),
				 fw_wire_request_size(FW_WIRE_OP_RANGE, (uint16_t)n));
	/* 8 sequence bits (256 IDs per ms): 4096 IDs take 16 ranges, capped at 16. */
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, 256, 8), 24 + 12 * 2);
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, 257, 8), 24 + 12 * 3);
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, 4096, 8), 216);
	/* 22 sequence bits: one range plus one always covers 65535. */
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, 65535, 22), 48);
	/* Out-of-range widths fall back to 12; other ops do not depend on it. */
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, 4097, 0), 60);
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_RANGE, 4097, 23), 60);
	assert_int_equal(fw_wire_request_size_seq(FW_WIRE_OP_LIST, 10, 8), 104);
	/* Explicit length: header then zeros. */
	memset(buf, 0xAA, sizeof(buf));
	assert_int_equal(
		fw_wire_write_request_len(buf, sizeof(buf), FW_WIRE_OP_RANGE, 4096, TAG, 216), 216);
	assert_int_equal(buf[215], 0);
	assert_int_equal(buf[216], 0xAA);
	assert_int_equal(fw_wire_write_request_len(buf, sizeof(buf), FW_WIRE_OP_ID, 1, TAG, 3), 24);
	assert_int_equal(fw_wire_write_request_len(buf, 100, FW_WIRE_OP_ID, 1, TAG, 101),
			 FW_EWIRE_SPACE);
}

/* Every request and reply shape, for the truncation test. */
static size_t build_message(int which, uint8_t *buf, size_t cap, bool *is_reply)
{
	static const uint64_t ids[FW_WIRE_LIST_MAX];
	struct fw_wire_range rg[FW_WIRE_RANGES_MAX];
	struct fw_wire_hdr h;
	int n = -1;

	for (size_t i = 0; i < FW_WIRE_RANGES_MAX; i++)
		rg[i] = (struct fw_wire_range){.first = i << 22, .n = 1};
	*is_reply = which >= 8;
	switch (which) {
	case 0:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_ID, 1, TAG, true);
		break;
	case 1:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_LIST, FW_WIRE_LIST_MAX, TAG, true);
		break;
	case 2:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_RANGE, 60000, TAG, true);
		break;
	case 3:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_INFO, 1, TAG, true);
		break;
	case 4:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_LIST, 3, TAG, false);
		break;
	case 5:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_RANGE, 3, TAG, true);
		break;
	case 6:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_ID, 1, TAG, false);
		break;
	case 7:
		n = fw_wire_write_request(buf, cap, FW_WIRE_OP_INFO, 0, TAG, false);
		break;
	case 8:
		h = reply_hdr(FW_WIRE_OP_ID, FW_WIRE_ST_OK);
		n = fw_wire_write_ids(buf, cap, &h, ids, 1);
		break;
	case 9:
		h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_OK);
		n = fw_wire_write_ids(buf, cap, &h, ids, FW_WIRE_LIST_MAX);
		break;
	case 10:
		h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_OK);
		n = fw_wire_write_ids(buf, cap, &h, ids, 2);
		break;
	case 11:
		h = reply_hdr(FW_WIRE_OP_RANGE, FW_WIRE_ST_OK);
		n = fw_wire_write_ranges(buf, cap, &h, rg, FW_WIRE_RANGES_MAX);
		break;
	case 12:
		h = reply_hdr(FW_WIRE_OP_RANGE, FW_WIRE_ST_OK);
		n = fw_wire_write_ranges(buf, cap, &h, rg, 1);
		break;
	case 13:
		h = reply_hdr(FW_WIRE_OP_INFO, FW_WIRE_ST_OK);
		n = fw_wire_write_info(buf, cap, &h, &sample_info);
		break;
	case 14:
		h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_RETRY_AFTER);
		n = fw_wire_write_status(buf, cap, &h);
		break;
	case 15:
		h = reply_hdr(FW_WIRE_OP_ID, FW_WIRE_ST_REFUSED);
		n = fw_wire_write_status(buf, cap, &h);
		break;
	default:
		return 0;
	}
	assert_true(n > 0);
	return (size_t)n;
}

static void test_truncation(void **state)
{
	struct guarded g;
	uint8_t buf[FW_WIRE_MTU_PAYLOAD];
	struct fw_wire_reply r;
	struct fw_wire_hdr h;
	bool is_reply;
	size_t len;
	int tested = 0;

	(void)state;
	guarded_init(&g);
	for (int which = 0; (len = build_message(which, buf, sizeof(buf), &is_reply)) > 0;
	     which++) {
		for (size_t k = 0; k <= len; k++) {
			const uint8_t *p = guarded_copy(&g, buf, k);
			int ret;

			if (is_reply) {
				ret = fw_wire_parse_reply(p, k, &r);
				assert_int_equal(ret, k < len ? FW_EWIRE_SHORT : 0);
			} else {
				/* Padding is the client's affair: only the header is required. */
				ret = fw_wire_parse_request(p, k, &h);
				assert_int_equal(ret, k < FW_WIRE_HDR_LEN ? FW_EWIRE_SHORT : 0);
			}
		}
		tested++;
	}
	assert_int_equal(tested, 16);
	guarded_free(&g);
}

static void test_bad_magic(void **state)
{
	uint8_t buf[128];
	struct fw_wire_reply r;
	struct fw_wire_hdr h, rh = reply_hdr(FW_WIRE_OP_INFO, FW_WIRE_ST_OK);
	int req, rep;

	(void)state;
	for (int byte = 0; byte < 2; byte++) {
		req = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, TAG, true);
		buf[byte] ^= 0x20;
		assert_int_equal(fw_wire_parse_request(buf, (size_t)req, &h), FW_EWIRE_MAGIC);
		rep = fw_wire_write_info(buf, sizeof(buf), &rh, &sample_info);
		buf[byte] ^= 0x01;
		assert_int_equal(fw_wire_parse_reply(buf, (size_t)rep, &r), FW_EWIRE_MAGIC);
	}
	/* Byte-swapped magic, as a little-endian client would send it. */
	req = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_ID, 1, TAG, true);
	buf[0] = 0x4B;
	buf[1] = 0x46;
	assert_int_equal(fw_wire_parse_request(buf, (size_t)req, &h), FW_EWIRE_MAGIC);
	memset(buf, 0, FW_WIRE_HDR_LEN);
	assert_int_equal(fw_wire_parse_request(buf, FW_WIRE_HDR_LEN, &h), FW_EWIRE_MAGIC);
	assert_int_equal(fw_wire_parse_reply(buf, FW_WIRE_HDR_LEN, &r), FW_EWIRE_MAGIC);
}

static void test_bad_version(void **state)
{
	static const uint8_t versions[] = {0, 2, 0x7F, 0xFF};
	struct fw_wire_hdr h, rh = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_OK);
	struct fw_wire_reply r;
	uint64_t ids[3] = {1, 2, 3};
	uint8_t buf[128];
	int n;

	(void)state;
	for (size_t i = 0; i < FW_ARRAY_SIZE(versions); i++) {
		n = fw_wire_write_request(buf, sizeof(buf), FW_WIRE_OP_LIST, 7, TAG, true);
		buf[2] = versions[i];
		memset(&h, 0, sizeof(h));
		assert_int_equal(fw_wire_parse_request(buf, (size_t)n, &h), FW_EWIRE_VERSION);
		assert_int_equal(h.version, versions[i]);
		assert_int_equal(h.op, FW_WIRE_OP_LIST);
		assert_int_equal(h.count, 7);
		assert_true(h.tag == TAG);

		/* The answer carries our version and echoes the tag. */
		h.status = FW_WIRE_ST_BAD_VERSION;
		assert_int_equal(fw_wire_write_status(buf, sizeof(buf), &h), FW_WIRE_HDR_LEN);
		assert_int_equal(fw_wire_parse_reply(buf, FW_WIRE_HDR_LEN, &r), 0);
		assert_int_equal(r.hdr.version, FW_WIRE_VERSION);
		assert_int_equal(r.hdr.status, FW_WIRE_ST_BAD_VERSION);
		assert_true(r.hdr.tag == TAG);

		n = fw_wire_write_ids(buf, sizeof(buf), &rh, ids, 3);
		buf[2] = versions[i];
		memset(&r, 0, sizeof(r));
		assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), FW_EWIRE_VERSION);
		assert_int_equal(r.hdr.version, versions[i]);
		assert_int_equal(r.hdr.count, 3);
		assert_true(r.hdr.tag == TAG);
	}
}

static void check_bad_request(uint8_t op, uint16_t count, uint8_t version)
{
	struct fw_wire_hdr h;
	uint8_t buf[64];
	int n;

	n = fw_wire_write_request(buf, sizeof(buf), op, count, TAG ^ op, false);
	assert_int_equal(n, FW_WIRE_HDR_LEN);
	buf[2] = version;
	memset(&h, 0, sizeof(h));
	assert_int_equal(fw_wire_parse_request(buf, (size_t)n, &h), FW_EWIRE_BAD);
	assert_true(h.tag == (TAG ^ op));
	assert_int_equal(h.op, op);
	assert_int_equal(h.count, count);
}

static void test_bad_request(void **state)
{
	(void)state;
	/* Unknown ops. */
	check_bad_request(0, 1, FW_WIRE_VERSION);
	check_bad_request(6, 1, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_UUID7, 0, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_UUID7, FW_WIRE_UUID7_MAX + 1, FW_WIRE_VERSION);
	check_bad_request(0x7F, 1, FW_WIRE_VERSION);
	/* Counts out of each op's range. */
	check_bad_request(FW_WIRE_OP_ID, 0, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_ID, 2, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_LIST, 0, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_LIST, FW_WIRE_LIST_MAX + 1, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_LIST, 0xFFFF, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_RANGE, 0, FW_WIRE_VERSION);
	check_bad_request(FW_WIRE_OP_INFO, 2, FW_WIRE_VERSION);
	/* Replies are BAD (the responder drops them), whatever their version. */
	for (size_t i = 0; i < FW_ARRAY_SIZE(all_ops); i++) {
		check_bad_request(all_ops[i] | FW_WIRE_OP_REPLY, 1, FW_WIRE_VERSION);
		check_bad_request(all_ops[i] | FW_WIRE_OP_REPLY, 1, 2);
	}
	check_bad_request(0xFF, 1, FW_WIRE_VERSION);
}

/* Patches one header field of a valid reply and expects FW_EWIRE_BAD. */
static void check_bad_reply(const uint8_t *msg, size_t len, size_t off, uint8_t v)
{
	struct fw_wire_reply r;
	uint8_t buf[FW_WIRE_MTU_PAYLOAD + 8];

	memcpy(buf, msg, len);
	buf[off] = v;
	assert_int_equal(fw_wire_parse_reply(buf, len, &r), FW_EWIRE_BAD);
}

static void test_bad_reply(void **state)
{
	uint8_t buf[FW_WIRE_MTU_PAYLOAD + 8];
	struct fw_wire_range rg[2] = {{.first = 100, .n = 5}, {.first = 200, .n = 7}};
	uint64_t ids[FW_WIRE_LIST_MAX] = {0};
	struct fw_wire_hdr h;
	struct fw_wire_reply r;
	int n;

	(void)state;
	h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_OK);
	n = fw_wire_write_ids(buf, sizeof(buf), &h, ids, 2);
	check_bad_reply(buf, (size_t)n, 3, FW_WIRE_OP_LIST);    /* not a reply */
	check_bad_reply(buf, (size_t)n, 3, 0x86);               /* unknown op */
	check_bad_reply(buf, (size_t)n, 3, 0x80);               /* unknown op */
	check_bad_reply(buf, (size_t)n, 4, FW_WIRE_ST_COUNT);   /* unknown status */
	check_bad_reply(buf, (size_t)n, 4, 0xFF);               /* unknown status */
	check_bad_reply(buf, (size_t)n, 7, 0);                  /* OK with count 0 */
	check_bad_reply(buf, (size_t)n, 4, FW_WIRE_ST_REFUSED); /* error status with a body */
	/* Count above the op's maximum, with a body that would match it. */
	n = fw_wire_write_ids(buf, sizeof(buf), &h, ids, FW_WIRE_LIST_MAX);
	memset(buf + n, 0, 8);
	check_bad_reply(buf, (size_t)n + 8, 7, FW_WIRE_LIST_MAX + 1);
	h = reply_hdr(FW_WIRE_OP_ID, FW_WIRE_ST_OK);
	n = fw_wire_write_ids(buf, sizeof(buf), &h, ids, 2);
	check_bad_reply(buf, (size_t)n, 3, FW_WIRE_OP_ID | FW_WIRE_OP_REPLY);
	h = reply_hdr(FW_WIRE_OP_RANGE, FW_WIRE_ST_OK);
	n = fw_wire_write_ranges(buf, sizeof(buf), &h, rg, 1);
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), 0);
	check_bad_reply(buf, (size_t)n, 7, FW_WIRE_RANGES_MAX + 1);
	/* A range of zero IDs, first and last range. */
	check_bad_reply(buf, (size_t)n, n - 1, 0);
	rg[1].n = 0;
	n = fw_wire_write_ranges(buf, sizeof(buf), &h, rg, 2);
	assert_int_equal(fw_wire_parse_reply(buf, (size_t)n, &r), FW_EWIRE_BAD);
	h = reply_hdr(FW_WIRE_OP_INFO, FW_WIRE_ST_OK);
	n = fw_wire_write_info(buf, sizeof(buf), &h, &sample_info);
	check_bad_reply(buf, (size_t)n, 7, 2);
	/* Error status with a count. */
	h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_RETRY_AFTER);
	n = fw_wire_write_status(buf, sizeof(buf), &h);
	check_bad_reply(buf, (size_t)n, 7, 1);
}

static void test_reply_trailing(void **state)
{
	uint8_t buf[FW_WIRE_MTU_PAYLOAD + 8];
	struct fw_wire_reply r;
	bool is_reply;
	size_t len;
	int tested = 0;

	(void)state;
	for (int which = 0; (len = build_message(which, buf, sizeof(buf), &is_reply)) > 0;
	     which++) {
		if (!is_reply)
			continue;
		assert_int_equal(fw_wire_parse_reply(buf, len, &r), 0);
		for (size_t extra = 1; extra <= 8; extra++) {
			buf[len + extra - 1] = 0;
			assert_int_equal(fw_wire_parse_reply(buf, len + extra, &r), FW_EWIRE_BAD);
		}
		tested++;
	}
	assert_int_equal(tested, 8);
}

static size_t range_allowance(uint16_t count)
{
	size_t n = ((size_t)count + 4095) / 4096 + 1;

	return n < FW_WIRE_RANGES_MAX ? n : FW_WIRE_RANGES_MAX;
}

/* The anti-amplification contract: a full answer fits the padded request. */
static void test_sizes(void **state)
{
	uint8_t req[FW_WIRE_MTU_PAYLOAD], rep[FW_WIRE_MTU_PAYLOAD];
	static const uint64_t ids[FW_WIRE_LIST_MAX];
	struct fw_wire_range rg[FW_WIRE_RANGES_MAX] = {{0}};
	struct fw_wire_hdr h = reply_hdr(FW_WIRE_OP_ID, FW_WIRE_ST_OK);
	int q, a;

	(void)state;
	q = fw_wire_write_request(req, sizeof(req), FW_WIRE_OP_ID, 1, TAG, true);
	a = fw_wire_write_ids(rep, sizeof(rep), &h, ids, 1);
	assert_int_equal(q, 32);
	assert_true(q >= a);

	h.op = FW_WIRE_OP_INFO;
	q = fw_wire_write_request(req, sizeof(req), FW_WIRE_OP_INFO, 1, TAG, true);
	a = fw_wire_write_info(rep, sizeof(rep), &h, &sample_info);
	assert_int_equal(q, 56);
	assert_true(q >= a);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_INFO, 0), 56);

	h.op = FW_WIRE_OP_LIST;
	for (uint16_t c = 1; c <= FW_WIRE_LIST_MAX; c++) {
		q = fw_wire_write_request(req, sizeof(req), FW_WIRE_OP_LIST, c, TAG, true);
		a = fw_wire_write_ids(rep, sizeof(rep), &h, ids, c);
		assert_int_equal(q, 24 + 8 * c);
		assert_true(q >= a);
		/* One ID fewer would not fit an unpadded-by-8 request. */
		assert_true(fw_wire_reply_size(FW_WIRE_OP_LIST, c) > (size_t)q - 8);
	}

	h.op = FW_WIRE_OP_RANGE;
	for (uint32_t c = 1; c <= FW_WIRE_RANGE_IDS_MAX; c++) {
		size_t want = range_allowance((uint16_t)c);

		assert_int_equal(fw_wire_request_size(FW_WIRE_OP_RANGE, (uint16_t)c),
				 24 + 12 * want);
		if (c % 1021 != 1 && c != FW_WIRE_RANGE_IDS_MAX)
			continue;
		q = fw_wire_write_request(req, sizeof(req), FW_WIRE_OP_RANGE, (uint16_t)c, TAG,
					  true);
		a = fw_wire_write_ranges(rep, sizeof(rep), &h, rg, (uint16_t)want);
		assert_true(q >= a);
	}
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_RANGE, 1), 48);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_RANGE, 4096), 48);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_RANGE, 4097), 60);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_RANGE, 65535), 216);

	/* Degenerate inputs. */
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_LIST, 0), FW_WIRE_HDR_LEN);
	assert_int_equal(fw_wire_request_size(0, 1), 0);
	assert_int_equal(fw_wire_request_size(6, 1), 0);
	assert_int_equal(fw_wire_request_size_seq(6, 1, 12), 0);
	assert_int_equal(fw_wire_request_size(FW_WIRE_OP_ID | FW_WIRE_OP_REPLY, 1), 0);
	assert_int_equal(fw_wire_reply_size(0, 1), 0);
	assert_int_equal(fw_wire_reply_size(0xFF, 1), 0);
	assert_int_equal(fw_wire_reply_size(FW_WIRE_OP_RANGE, 16), 216);
	assert_int_equal(fw_wire_reply_size(FW_WIRE_OP_LIST, 0), FW_WIRE_HDR_LEN);
	/* An unknown op still writes a 24-byte request, so tests can send one. */
	assert_int_equal(fw_wire_write_request(req, sizeof(req), 9, 1, TAG, true), FW_WIRE_HDR_LEN);
}

static void test_cursor_read(void **state)
{
	uint8_t buf[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
			 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10};
	struct fw_wire_cur c;

	(void)state;
	fw_wire_cur_init(&c, buf, sizeof(buf));
	assert_int_equal(fw_wire_get_u8(&c), 0x01);
	assert_int_equal(fw_wire_get_u16(&c), 0x0203);
	assert_int_equal(fw_wire_get_u32(&c), 0x04050607);
	assert_true(fw_wire_get_u64(&c) == 0x08090A0B0C0D0E0Full);
	assert_int_equal(c.error, 0);
	assert_int_equal(fw_wire_cur_used(&c, buf), 15);

	/* One byte left: a u16 overruns, and then even the u8 that would fit reads 0. */
	assert_int_equal(fw_wire_get_u16(&c), 0);
	assert_int_equal(c.error, FW_EWIRE_SHORT);
	assert_int_equal(fw_wire_get_u8(&c), 0);
	assert_int_equal(fw_wire_get_u32(&c), 0);
	assert_true(fw_wire_get_u64(&c) == 0);
	assert_int_equal(c.error, FW_EWIRE_SHORT);
	assert_int_equal(fw_wire_cur_used(&c, buf), 15);

	/* Each width overruns on its own. */
	fw_wire_cur_init(&c, buf, 7);
	assert_true(fw_wire_get_u64(&c) == 0);
	assert_int_equal(c.error, FW_EWIRE_SHORT);
	assert_int_equal(fw_wire_get_u8(&c), 0);
	assert_int_equal(fw_wire_cur_used(&c, buf), 0);
	fw_wire_cur_init(&c, buf, 3);
	assert_int_equal(fw_wire_get_u32(&c), 0);
	assert_int_equal(c.error, FW_EWIRE_SHORT);
	fw_wire_cur_init(&c, buf, 0);
	assert_int_equal(fw_wire_get_u8(&c), 0);
	assert_int_equal(c.error, FW_EWIRE_SHORT);
}

static void test_cursor_write(void **state)
{
	static const uint8_t want[] = {0xAB, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0x01,
				       0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xEE};
	uint8_t buf[16];
	struct fw_wire_cur c;

	(void)state;
	memset(buf, 0xEE, sizeof(buf));
	fw_wire_cur_init(&c, buf, sizeof(buf));
	fw_wire_put_u8(&c, 0xAB);
	fw_wire_put_u16(&c, 0x1234);
	fw_wire_put_u32(&c, 0xDEADBEEF);
	fw_wire_put_u64(&c, 0x0102030405060708ull);
	assert_int_equal(c.error, 0);
	assert_int_equal(fw_wire_cur_used(&c, buf), 15);
	assert_memory_equal(buf, want, sizeof(want));

	/* One byte left: a u16 fails, then the u8 that would fit is a no-op too. */
	fw_wire_put_u16(&c, 0xFFFF);
	assert_int_equal(c.error, FW_EWIRE_SPACE);
	fw_wire_put_u8(&c, 0x99);
	fw_wire_put_u64(&c, 0);
	assert_int_equal(c.error, FW_EWIRE_SPACE);
	assert_int_equal(fw_wire_cur_used(&c, buf), 15);
	assert_memory_equal(buf, want, sizeof(want));

	fw_wire_cur_init(&c, buf, 7);
	fw_wire_put_u64(&c, 0);
	assert_int_equal(c.error, FW_EWIRE_SPACE);
	assert_memory_equal(buf, want, sizeof(want));
}

/* A write that does not fit leaves the buffer as it was. */
static void test_write_space(void **state)
{
	static const uint64_t ids[FW_WIRE_LIST_MAX];
	static const struct fw_wire_range rg[FW_WIRE_RANGES_MAX];
	struct fw_wire_hdr h = reply_hdr(FW_WIRE_OP_LIST, FW_WIRE_ST_OK);
	uint8_t buf[FW_WIRE_MTU_PAYLOAD];
	size_t need;

	(void)state;
	memset(buf, 0xEE, sizeof(buf));
	need = fw_wire_request_size(FW_WIRE_OP_LIST, 10);
	assert_int_equal(fw_wire_write_request(buf, need - 1, FW_WIRE_OP_LIST, 10, TAG, true),
			 FW_EWIRE_SPACE);
	assert_int_equal(
		fw_wire_write_request(buf, FW_WIRE_HDR_LEN - 1, FW_WIRE_OP_LIST, 10, TAG, false),
		FW_EWIRE_SPACE);
	assert_int_equal(fw_wire_write_request(buf, 0, FW_WIRE_OP_ID, 1, TAG, false),
			 FW_EWIRE_SPACE);
	assert_int_equal(
		fw_wire_write_ids(buf, fw_wire_reply_size(FW_WIRE_OP_LIST, 10) - 1, &h, ids, 10),
		FW_EWIRE_SPACE);
	assert_int_equal(fw_wire_write_ids(buf, 1471, &h, ids, FW_WIRE_LIST_MAX), FW_EWIRE_SPACE);
	h.op = FW_WIRE_OP_RANGE;
	assert_int_equal(fw_wire_write_ranges(buf, 215, &h, rg, 16), FW_EWIRE_SPACE);
	h.op = FW_WIRE_OP_INFO;
	assert_int_equal(fw_wire_write_info(buf, 55, &h, &sample_info), FW_EWIRE_SPACE);
	h.status = FW_WIRE_ST_REFUSED;
	assert_int_equal(fw_wire_write_status(buf, 23, &h), FW_EWIRE_SPACE);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xEE);

	/* And exactly enough is enough. */
	assert_int_equal(fw_wire_write_status(buf, 24, &h), 24);
	assert_int_equal(fw_wire_write_info(buf, 56, &h, &sample_info), 56);
	assert_int_equal(fw_wire_write_ranges(buf, 216, &h, rg, 16), 216);
	assert_int_equal(fw_wire_write_ids(buf, 1472, &h, ids, FW_WIRE_LIST_MAX), 1472);
	assert_int_equal(fw_wire_write_request(buf, need, FW_WIRE_OP_LIST, 10, TAG, true),
			 (int)need);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(fw_wire_op_name(FW_WIRE_OP_ID), "id");
	assert_string_equal(fw_wire_op_name(FW_WIRE_OP_LIST), "list");
	assert_string_equal(fw_wire_op_name(FW_WIRE_OP_RANGE), "range");
	assert_string_equal(fw_wire_op_name(FW_WIRE_OP_INFO), "info");
	assert_string_equal(fw_wire_op_name(FW_WIRE_OP_RANGE | FW_WIRE_OP_REPLY), "range");
	assert_string_equal(fw_wire_op_name(0), "unknown");
	assert_string_equal(fw_wire_op_name(FW_WIRE_OP_UUID7), "uuid7");
	assert_string_equal(fw_wire_op_name(6), "unknown");
	assert_string_equal(fw_wire_op_name(0xFF), "unknown");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_OK), "ok");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_BAD_REQUEST), "bad-request");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_BAD_VERSION), "bad-version");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_RETRY_AFTER), "retry-after");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_REFUSED), "refused");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_CLOCK_UNSAFE), "clock-unsafe");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_NO_LEASE), "no-lease");
	assert_string_equal(fw_wire_status_name(FW_WIRE_ST_COUNT), "unknown");
	assert_string_equal(fw_wire_status_name(0xFF), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_id),
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_status_replies),
		cmocka_unit_test(test_reply_ids),
		cmocka_unit_test(test_reply_ranges),
		cmocka_unit_test(test_reply_info),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_bad_request),
		cmocka_unit_test(test_bad_reply),
		cmocka_unit_test(test_reply_trailing),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_cursor_read),
		cmocka_unit_test(test_cursor_write),
		cmocka_unit_test(test_write_space),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_uuid7),
		cmocka_unit_test(test_range_padding_seq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

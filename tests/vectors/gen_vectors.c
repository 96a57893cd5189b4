/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the wire conformance vectors (tests/vectors/wire.vec) to stdout,
 * built with lib/wire and lib/id: every client, C included, must build the
 * same requests byte for byte and accept or reject each reply the same way.
 * The format is described in tests/vectors/README.md.
 *
 * Each reply case states the verdict its author intends; the generator
 * checks it against fw_wire_parse_reply() and exits 1 on a disagreement, so
 * the file can never say what lib/wire does not do.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_layout.h"
#include "fw_uuid.h"
#include "fw_wire.h"

#define VEC_OP_UUID7     FW_WIRE_OP_UUID7
#define VEC_ST_NO_LEASE  FW_WIRE_ST_NO_LEASE
#define VEC_UUID_LEN     FW_WIRE_UUID_LEN
#define VEC_INFO_F_UUID7 FW_WIRE_INFO_F_UUID7

static int failures;

static void hex(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

/* A request padded for @seq sequence bits (RANGE: 2^seq IDs per range). */
static void request(const char *name, uint8_t op, uint16_t count, uint64_t tag, bool pad,
		    unsigned seq)
{
	uint8_t buf[2048];
	int len;

	len = fw_wire_write_request_len(buf, sizeof(buf), op, count, tag,
					pad ? fw_wire_request_size_seq(op, count, seq) : 0);
	if (len < 0 || (seq == 12 && pad &&
			len != fw_wire_write_request(buf, sizeof(buf), op, count, tag, true))) {
		fprintf(stderr, "gen_vectors: request %s: %d\n", name, len);
		exit(1);
	}
	printf("req name=%s op=%u count=%u tag=%016" PRIx64 " pad=%d seq=%u bytes=", name, op,
	       count, tag, pad ? 1 : 0, seq);
	hex(buf, (size_t)len);
	printf("\n");
}

/* A reply under construction: the header fields and raw body bytes. */
struct rep {
	uint8_t b[2048];
	size_t len;
};

static void put_hdr(struct rep *r, uint8_t version, uint8_t op, uint8_t status, uint8_t flags,
		    uint16_t count, uint64_t tag, uint16_t dc, uint16_t worker, uint32_t retry)
{
	struct fw_wire_cur c;

	fw_wire_cur_init(&c, r->b, sizeof(r->b));
	fw_wire_put_u16(&c, FW_WIRE_MAGIC);
	fw_wire_put_u8(&c, version);
	fw_wire_put_u8(&c, op);
	fw_wire_put_u8(&c, status);
	fw_wire_put_u8(&c, flags);
	fw_wire_put_u16(&c, count);
	fw_wire_put_u64(&c, tag);
	fw_wire_put_u16(&c, dc);
	fw_wire_put_u16(&c, worker);
	fw_wire_put_u32(&c, retry);
	r->len = FW_WIRE_HDR_LEN;
}

static void put_u64(struct rep *r, uint64_t v)
{
	struct fw_wire_cur c;

	fw_wire_cur_init(&c, r->b + r->len, sizeof(r->b) - r->len);
	fw_wire_put_u64(&c, v);
	r->len += 8;
}

static void put_u32(struct rep *r, uint32_t v)
{
	struct fw_wire_cur c;

	fw_wire_cur_init(&c, r->b + r->len, sizeof(r->b) - r->len);
	fw_wire_put_u32(&c, v);
	r->len += 4;
}

/* The UUIDs of an accepted UUID7 reply, read back from the bytes. */
static void print_uuids(const struct rep *r, uint16_t count)
{
	printf(" uuids=");
	for (uint16_t i = 0; i < count; i++) {
		if (i)
			printf(",");
		hex(r->b + FW_WIRE_HDR_LEN + (size_t)i * VEC_UUID_LEN, VEC_UUID_LEN);
	}
}

/*
 * Emits one reply case: @want is the intended verdict ("ok", "short",
 * "magic", "version", "bad"). For "ok" the parsed header and body follow.
 */
static void reply(const char *name, const struct rep *r, const char *want)
{
	static struct fw_wire_reply p;
	uint8_t op = 0;
	int rc;

	if (r->len >= 6)
		op = r->b[3] & (uint8_t)~FW_WIRE_OP_REPLY;
	memset(&p, 0, sizeof(p));
	rc = fw_wire_parse_reply(r->b, r->len, &p);
	if (strcmp(fw_wire_result_name(rc), want) != 0) {
		fprintf(stderr, "gen_vectors: reply %s: lib/wire says %s, the vector says %s\n",
			name, fw_wire_result_name(rc), want);
		failures++;
	}
	printf("rep name=%s result=%s", name, want);
	if (!strcmp(want, "version")) {
		printf(" tag=%016" PRIx64, p.hdr.tag);
	} else if (!strcmp(want, "ok")) {
		/* Read the header back from the bytes, to check the parser's. */
		struct fw_wire_hdr h;
		struct fw_wire_cur c;

		fw_wire_cur_init(&c, (void *)(uintptr_t)r->b, r->len);
		(void)fw_wire_get_u16(&c);
		h.version = fw_wire_get_u8(&c);
		h.op = fw_wire_get_u8(&c);
		h.status = fw_wire_get_u8(&c);
		h.flags = fw_wire_get_u8(&c);
		h.count = fw_wire_get_u16(&c);
		h.tag = fw_wire_get_u64(&c);
		h.datacenter = fw_wire_get_u16(&c);
		h.worker = fw_wire_get_u16(&c);
		h.retry_after_us = fw_wire_get_u32(&c);
		if ((h.version != p.hdr.version || h.op != p.hdr.op || h.status != p.hdr.status ||
		     h.flags != p.hdr.flags || h.count != p.hdr.count || h.tag != p.hdr.tag ||
		     h.datacenter != p.hdr.datacenter || h.worker != p.hdr.worker ||
		     h.retry_after_us != p.hdr.retry_after_us)) {
			fprintf(stderr, "gen_vectors: reply %s: header read back differs\n", name);
			failures++;
		}
		printf(" op=%u status=%u flags=%u count=%u tag=%016" PRIx64
		       " dc=%u worker=%u retry_us=%" PRIu32,
		       h.op, h.status, h.flags, h.count, h.tag, h.datacenter, h.worker,
		       h.retry_after_us);
		if (h.status == FW_WIRE_ST_OK) {
			switch (op) {
			case FW_WIRE_OP_ID:
			case FW_WIRE_OP_LIST:
				printf(" ids=");
				for (uint16_t i = 0; i < h.count; i++)
					printf("%s%" PRIu64, i ? "," : "", p.body.ids[i]);
				break;
			case FW_WIRE_OP_RANGE:
				printf(" ranges=");
				for (uint16_t i = 0; i < h.count; i++)
					printf("%s%" PRIu64 ":%" PRIu32, i ? "," : "",
					       p.body.ranges[i].first, p.body.ranges[i].n);
				break;
			case FW_WIRE_OP_INFO: {
				const struct fw_wire_info *in = &p.body.info;

				printf(" info=%" PRIu64 ":%u:%u:%u:%u:%u:%u:%u:%u:%u:%" PRIu32
				       ":%" PRId64,
				       in->epoch_ms, in->time_bits, in->dc_bits, in->worker_bits,
				       in->seq_bits, in->version_min, in->version_max, in->list_max,
				       in->ranges_max, in->max_borrow_ms, in->features,
				       in->clock_offset_ns);
				break;
			}
			case VEC_OP_UUID7:
				print_uuids(r, h.count);
				if (memcmp(p.body.uuids, r->b + FW_WIRE_HDR_LEN,
					   (size_t)h.count * VEC_UUID_LEN) != 0) {
					fprintf(stderr, "gen_vectors: reply %s: UUIDs\n", name);
					failures++;
				}
				break;
			}
		}
	}
	printf(" bytes=");
	hex(r->b, r->len);
	printf("\n");
}

static const uint64_t tags[] = {0x0123456789abcdefull, 0, UINT64_MAX, 0x8000000000000001ull};

/* A default-layout ID: @ms after the epoch, worker @w, sequence @s. */
static uint64_t mk_id(uint64_t ms, uint32_t w, uint32_t s)
{
	struct fw_layout l;
	uint64_t id = 0;

	fw_layout_default(&l);
	if (fw_layout_encode(&l, ms, 0, w, s, &id) < 0)
		exit(1);
	return id;
}

/* A flakewire UUIDv7 of worker @w, default layout, at @unix_ms with counter @ctr. */
static void mk_uuid(uint8_t *u, uint64_t unix_ms, uint16_t ctr, uint16_t w, uint64_t rnd)
{
	struct fw_layout l;

	fw_layout_default(&l);
	if (fw_uuid7_encode(&l, unix_ms, 0, w, ctr, rnd, u) < 0)
		exit(1);
}

static void requests(void)
{
	static const uint16_t list_counts[] = {1, 2, 10, 180, 181};
	static const uint16_t range_counts[] = {1,    2,     4095,  4096,  4097,  8192,
						8193, 12289, 57344, 57345, 61440, 65535};
	static const uint16_t uuid_counts[] = {1, 2, 89, 90};
	char name[64];
	unsigned t = 0;

	printf("# Requests: op, count, tag and padding in; the exact datagram out.\n");
	for (int pad = 0; pad <= 1; pad++) {
		snprintf(name, sizeof(name), "id-pad%d", pad);
		request(name, FW_WIRE_OP_ID, 1, tags[t++ % 4], pad, 12);
		for (size_t i = 0; i < FW_ARRAY_SIZE(list_counts); i++) {
			snprintf(name, sizeof(name), "list-%u-pad%d", list_counts[i], pad);
			request(name, FW_WIRE_OP_LIST, list_counts[i], tags[t++ % 4], pad, 12);
		}
		for (size_t i = 0; i < FW_ARRAY_SIZE(range_counts); i++) {
			snprintf(name, sizeof(name), "range-%u-pad%d", range_counts[i], pad);
			request(name, FW_WIRE_OP_RANGE, range_counts[i], tags[t++ % 4], pad, 12);
		}
		for (uint16_t n = 0; n <= 1; n++) {
			snprintf(name, sizeof(name), "info-%u-pad%d", n, pad);
			request(name, FW_WIRE_OP_INFO, n, tags[t++ % 4], pad, 12);
		}
		for (size_t i = 0; i < FW_ARRAY_SIZE(uuid_counts); i++) {
			snprintf(name, sizeof(name), "uuid7-%u-pad%d", uuid_counts[i], pad);
			request(name, VEC_OP_UUID7, uuid_counts[i], tags[t++ % 4], pad, 12);
		}
	}
	/* RANGE padding follows the responder's sequence bits (2^seq IDs per range). */
	static const unsigned seqs[] = {1, 4, 8, 16, 22};
	static const uint16_t seq_counts[] = {1, 2, 3, 255, 256, 257, 4096, 65535};

	for (size_t k = 0; k < FW_ARRAY_SIZE(seqs); k++) {
		for (size_t i = 0; i < FW_ARRAY_SIZE(seq_counts); i++) {
			snprintf(name, sizeof(name), "range-%u-seq%u", seq_counts[i], seqs[k]);
			request(name, FW_WIRE_OP_RANGE, seq_counts[i], tags[t++ % 4], true,
				seqs[k]);
		}
	}
	/* Other ops do not depend on the sequence bits. */
	request("list-10-seq4", FW_WIRE_OP_LIST, 10, tags[0], true, 4);
	request("uuid7-3-seq4", VEC_OP_UUID7, 3, tags[1], true, 4);
}

static const uint8_t ops[] = {FW_WIRE_OP_ID, FW_WIRE_OP_LIST, FW_WIRE_OP_RANGE, FW_WIRE_OP_INFO,
			      VEC_OP_UUID7};
static const char *const op_names[] = {"", "id", "list", "range", "info", "uuid7"};

/* Header of an OK reply from worker 7 of datacenter 0. */
static void ok_hdr(struct rep *r, uint8_t op, uint8_t flags, uint16_t count, uint64_t tag)
{
	put_hdr(r, FW_WIRE_VERSION, op | FW_WIRE_OP_REPLY, FW_WIRE_ST_OK, flags, count, tag, 0, 7,
		0);
}

static void body_ids(struct rep *r, uint16_t n, uint64_t base)
{
	for (uint16_t i = 0; i < n; i++)
		put_u64(r, base + i);
}

static void body_info(struct rep *r, uint32_t features, int64_t offset_ns)
{
	put_u64(r, 1767225600000ull);
	r->b[r->len++] = 41;
	r->b[r->len++] = 0;
	r->b[r->len++] = 10;
	r->b[r->len++] = 12;
	r->b[r->len++] = 1;
	r->b[r->len++] = 1;
	r->b[r->len++] = 0;
	r->b[r->len++] = 181;
	r->b[r->len++] = 0;
	r->b[r->len++] = 16;
	r->b[r->len++] = 0;
	r->b[r->len++] = 4;
	put_u32(r, features);
	put_u64(r, (uint64_t)offset_ns);
}

static void body_uuids(struct rep *r, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		mk_uuid(r->b + r->len, 1767225601000ull, (uint16_t)i, 7,
			0xabcdef01234ull ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull));
		r->len += VEC_UUID_LEN;
	}
}

/* A full OK reply for @op with @n entries. */
static void ok_reply(struct rep *r, uint8_t op, uint8_t flags, uint16_t n, uint64_t tag)
{
	ok_hdr(r, op, flags, n, tag);
	switch (op) {
	case FW_WIRE_OP_ID:
	case FW_WIRE_OP_LIST:
		body_ids(r, n, mk_id(1000, 7, 0));
		break;
	case FW_WIRE_OP_RANGE:
		for (uint16_t i = 0; i < n; i++) {
			put_u64(r, mk_id(1000 + i, 7, i ? 0 : 100));
			put_u32(r, i ? 4096 : 3996);
		}
		break;
	case FW_WIRE_OP_INFO:
		body_info(r, 0, 0);
		break;
	case VEC_OP_UUID7:
		body_uuids(r, n);
		break;
	}
}

static void accepted(void)
{
	static const uint8_t flag_sets[] = {0x00, 0x01, 0x02, 0x08, 0x10, 0x1b, 0xe0, 0xff};
	static const struct {
		uint8_t op;
		uint16_t n;
	} counts[] = {
		{FW_WIRE_OP_ID, 1},     {FW_WIRE_OP_LIST, 1},  {FW_WIRE_OP_LIST, 2},
		{FW_WIRE_OP_LIST, 181}, {FW_WIRE_OP_RANGE, 1}, {FW_WIRE_OP_RANGE, 2},
		{FW_WIRE_OP_RANGE, 16}, {FW_WIRE_OP_INFO, 1},  {VEC_OP_UUID7, 1},
		{VEC_OP_UUID7, 90},
	};
	struct rep r;
	char name[64];

	printf("# Replies a client accepts: every op at its edge counts, every flag bit,\n"
	       "# every status (error statuses have count 0 and no body).\n");
	for (size_t i = 0; i < FW_ARRAY_SIZE(counts); i++) {
		snprintf(name, sizeof(name), "ok-%s-%u", op_names[counts[i].op], counts[i].n);
		ok_reply(&r, counts[i].op, 0, counts[i].n, tags[i % 4]);
		reply(name, &r, "ok");
	}
	for (size_t i = 0; i < FW_ARRAY_SIZE(flag_sets); i++) {
		snprintf(name, sizeof(name), "ok-id-flags-%02x", flag_sets[i]);
		ok_reply(&r, FW_WIRE_OP_ID, flag_sets[i], 1, tags[0]);
		reply(name, &r, "ok");
	}
	/* PARTIAL: fewer than asked is still a valid reply. */
	ok_reply(&r, FW_WIRE_OP_LIST, FW_WIRE_F_PARTIAL, 3, tags[1]);
	reply("ok-list-partial", &r, "ok");
	ok_reply(&r, FW_WIRE_OP_RANGE, FW_WIRE_F_PARTIAL | FW_WIRE_F_BORROWED, 16, tags[2]);
	reply("ok-range-partial-borrowed", &r, "ok");
	/* Extremes of the range fields. */
	ok_hdr(&r, FW_WIRE_OP_RANGE, 0, 2, tags[3]);
	put_u64(&r, 1);
	put_u32(&r, 1);
	put_u64(&r, (uint64_t)INT64_MAX - 0xfffffffeull);
	put_u32(&r, UINT32_MAX);
	reply("ok-range-extremes", &r, "ok");
	/* A sign bit set is a wire-valid reply; the client's ID checks refuse it. */
	ok_hdr(&r, FW_WIRE_OP_ID, 0, 1, tags[0]);
	put_u64(&r, 0x8000000000000000ull | mk_id(1000, 7, 0));
	reply("ok-id-sign-bit", &r, "ok");
	/* INFO: features (UUID7), a negative clock offset, another layout. */
	ok_hdr(&r, FW_WIRE_OP_INFO, 0, 1, tags[1]);
	body_info(&r, VEC_INFO_F_UUID7, -1234567890123ll);
	reply("ok-info-uuid7-negative-offset", &r, "ok");
	ok_hdr(&r, FW_WIRE_OP_INFO, FW_WIRE_F_SLEWING, 1, tags[2]);
	body_info(&r, 0xfffffffeu, INT64_MIN);
	r.b[32] = 40; /* 40/5/5/13 */
	r.b[33] = 5;
	r.b[34] = 5;
	r.b[35] = 13;
	reply("ok-info-dc-layout", &r, "ok");
	/* Non-default datacenter, worker and retry_after_us are echoed as sent. */
	put_hdr(&r, FW_WIRE_VERSION, FW_WIRE_OP_LIST | FW_WIRE_OP_REPLY, FW_WIRE_ST_OK, 0, 1,
		tags[3], 0xffff, 0xfffe, 0);
	put_u64(&r, 42);
	reply("ok-list-dc-worker-max", &r, "ok");

	for (uint8_t st = FW_WIRE_ST_BAD_REQUEST; st <= VEC_ST_NO_LEASE; st++) {
		for (size_t o = 0; o < FW_ARRAY_SIZE(ops); o++) {
			uint8_t flags = st == FW_WIRE_ST_CLOCK_UNSAFE ? FW_WIRE_F_UNSAFE : 0;
			uint32_t retry = st == FW_WIRE_ST_RETRY_AFTER ? 1500 : 0;

			snprintf(name, sizeof(name), "status-%u-%s", st, op_names[ops[o]]);
			put_hdr(&r, FW_WIRE_VERSION, ops[o] | FW_WIRE_OP_REPLY, st, flags, 0,
				tags[o % 4], 0, 3, retry);
			reply(name, &r, "ok");
		}
	}
	put_hdr(&r, FW_WIRE_VERSION, FW_WIRE_OP_RANGE | FW_WIRE_OP_REPLY, FW_WIRE_ST_RETRY_AFTER, 0,
		0, tags[0], 0, 1, UINT32_MAX);
	reply("status-retry-after-max", &r, "ok");
}

static void rejected(void)
{
	struct rep r;
	char name[64];

	printf("# Replies a client rejects (and keeps waiting): the reason is the C\n"
	       "# parser's (short, magic, version, bad).\n");
	/* Too short for a header, at every length below 24. */
	ok_reply(&r, FW_WIRE_OP_ID, 0, 1, tags[0]);
	for (size_t len = 0; len < FW_WIRE_HDR_LEN; len += (len < 4 ? 1 : 5)) {
		struct rep t = r;

		t.len = len;
		snprintf(name, sizeof(name), "short-hdr-%zu", len);
		reply(name, &t, "short");
	}
	r.len = 23;
	reply("short-hdr-23", &r, "short");
	/* A valid header whose body is cut. */
	for (size_t o = 0; o < FW_ARRAY_SIZE(ops); o++) {
		uint16_t n = ops[o] == FW_WIRE_OP_ID || ops[o] == FW_WIRE_OP_INFO ? 1 : 2;

		ok_reply(&r, ops[o], 0, n, tags[1]);
		r.len -= 1;
		snprintf(name, sizeof(name), "short-body-%s", op_names[ops[o]]);
		reply(name, &r, "short");
		r.len = FW_WIRE_HDR_LEN;
		snprintf(name, sizeof(name), "short-body-%s-hdr-only", op_names[ops[o]]);
		reply(name, &r, "short");
	}
	/* Trailing bytes after a complete body. */
	for (size_t o = 0; o < FW_ARRAY_SIZE(ops); o++) {
		ok_reply(&r, ops[o], 0, 1, tags[2]);
		r.b[r.len++] = 0;
		snprintf(name, sizeof(name), "trailing-%s", op_names[ops[o]]);
		reply(name, &r, "bad");
	}
	put_hdr(&r, FW_WIRE_VERSION, FW_WIRE_OP_ID | FW_WIRE_OP_REPLY, FW_WIRE_ST_REFUSED, 0, 0,
		tags[2], 0, 7, 0);
	r.b[r.len++] = 0;
	reply("trailing-status", &r, "bad");
	/* Magic. */
	ok_reply(&r, FW_WIRE_OP_ID, 0, 1, tags[3]);
	r.b[0] = 0x4B;
	r.b[1] = 0x46;
	reply("magic-swapped", &r, "magic");
	r.b[0] = 0x46;
	r.b[1] = 0x4C;
	reply("magic-low-byte", &r, "magic");
	/* Version. */
	for (unsigned v = 0; v <= 255; v += 255) {
		ok_reply(&r, FW_WIRE_OP_ID, 0, 1, tags[0]);
		r.b[2] = (uint8_t)v;
		snprintf(name, sizeof(name), "version-%u", v);
		reply(name, &r, "version");
	}
	ok_reply(&r, FW_WIRE_OP_ID, 0, 1, tags[1]);
	r.b[2] = 2;
	reply("version-2", &r, "version");
	/* Version is checked before the reply bit. */
	r.b[3] = FW_WIRE_OP_ID;
	reply("version-2-no-reply-bit", &r, "version");
	/* Not a reply: the reply bit is clear (a request, or a reflection of one). */
	for (size_t o = 0; o < FW_ARRAY_SIZE(ops); o++) {
		ok_reply(&r, ops[o], 0, 1, tags[3]);
		r.b[3] = ops[o];
		snprintf(name, sizeof(name), "no-reply-bit-%s", op_names[ops[o]]);
		reply(name, &r, "bad");
	}
	/* Unknown ops. */
	static const uint8_t bad_ops[] = {0x80, 0x86, 0xff};

	for (size_t i = 0; i < FW_ARRAY_SIZE(bad_ops); i++) {
		ok_reply(&r, FW_WIRE_OP_ID, 0, 1, tags[0]);
		r.b[3] = bad_ops[i];
		snprintf(name, sizeof(name), "unknown-op-%02x", bad_ops[i]);
		reply(name, &r, "bad");
	}
	/* Unknown statuses. */
	static const uint8_t bad_st[] = {7, 0x80, 0xff};

	for (size_t i = 0; i < FW_ARRAY_SIZE(bad_st); i++) {
		put_hdr(&r, FW_WIRE_VERSION, FW_WIRE_OP_ID | FW_WIRE_OP_REPLY, bad_st[i], 0, 0,
			tags[1], 0, 7, 0);
		snprintf(name, sizeof(name), "unknown-status-%u", bad_st[i]);
		reply(name, &r, "bad");
	}
	/* OK with count 0 or above the op's maximum (the body is there in full). */
	static const struct {
		uint8_t op;
		uint16_t n;
	} bad_counts[] = {
		{FW_WIRE_OP_ID, 0},     {FW_WIRE_OP_ID, 2},       {FW_WIRE_OP_LIST, 0},
		{FW_WIRE_OP_LIST, 182}, {FW_WIRE_OP_RANGE, 0},    {FW_WIRE_OP_RANGE, 17},
		{FW_WIRE_OP_INFO, 0},   {FW_WIRE_OP_INFO, 2},     {VEC_OP_UUID7, 0},
		{VEC_OP_UUID7, 91},     {FW_WIRE_OP_LIST, 65535},
	};

	for (size_t i = 0; i < FW_ARRAY_SIZE(bad_counts); i++) {
		uint8_t op = bad_counts[i].op;
		uint16_t n = bad_counts[i].n;

		ok_reply(&r, op, 0, op == FW_WIRE_OP_INFO ? 1 : (uint16_t)FW_MIN(n, 100), tags[2]);
		if (op == FW_WIRE_OP_INFO && n == 2)
			body_info(&r, 0, 0);
		r.b[6] = (uint8_t)(n >> 8);
		r.b[7] = (uint8_t)n;
		snprintf(name, sizeof(name), "count-%s-%u", op_names[op], n);
		reply(name, &r, "bad");
	}
	/* An error status with a count (and the body it would mean). */
	for (uint8_t st = FW_WIRE_ST_BAD_REQUEST; st <= VEC_ST_NO_LEASE; st += 2) {
		put_hdr(&r, FW_WIRE_VERSION, FW_WIRE_OP_ID | FW_WIRE_OP_REPLY, st, 0, 1, tags[3], 0,
			7, 0);
		snprintf(name, sizeof(name), "status-%u-count-1", st);
		reply(name, &r, "bad");
		put_u64(&r, mk_id(1000, 7, 0));
		snprintf(name, sizeof(name), "status-%u-count-1-body", st);
		reply(name, &r, "bad");
	}
	/* A range with n 0, first and last of a reply. */
	ok_reply(&r, FW_WIRE_OP_RANGE, 0, 1, tags[0]);
	memset(r.b + 32, 0, 4);
	reply("range-n0", &r, "bad");
	ok_reply(&r, FW_WIRE_OP_RANGE, 0, 16, tags[1]);
	memset(r.b + 24 + 15 * 12 + 8, 0, 4);
	reply("range-n0-last-of-16", &r, "bad");
}

static void decodes(void)
{
	static const struct {
		uint64_t epoch;
		uint8_t t, d, w, s;
		uint64_t id;
	} cases[] = {
		{1767225600000ull, 41, 0, 10, 12, 0x00000000FA007000ull},
		{1767225600000ull, 41, 0, 10, 12, 0},
		{1767225600000ull, 41, 0, 10, 12, INT64_MAX},
		{1767225600000ull, 41, 0, 10, 12, 0x1234567890abcdefull},
		{1288834974657ull, 41, 5, 5, 12, 1541815603606036480ull}, /* Twitter */
		{1420070400000ull, 42, 0, 10, 11, 175928847299117063ull}, /* Discord-like */
		{0, 32, 10, 16, 5, 0x7edcba9876543210ull},
		{1767225600000ull, 40, 5, 5, 13, 0x0000123456789abcull},
		{1767225600000ull, 62, 0, 0, 1, 0x3fffffffffffffffull},
	};

	printf("# decode: an ID taken apart under a layout (epoch_ms, bits time:dc:worker:seq)\n"
	       "# into ms since the epoch, unix ms, datacenter, worker, sequence.\n");
	for (size_t i = 0; i < FW_ARRAY_SIZE(cases); i++) {
		struct fw_layout l = {cases[i].epoch, cases[i].t, cases[i].d, cases[i].w,
				      cases[i].s};
		struct fw_id_parts p;

		if (fw_layout_validate(&l, 0) < 0 || fw_layout_decode(&l, cases[i].id, &p) < 0) {
			fprintf(stderr, "gen_vectors: decode case %zu invalid\n", i);
			failures++;
			continue;
		}
		printf("dec epoch=%" PRIu64 " bits=%u:%u:%u:%u id=%" PRIu64 " ms=%" PRIu64
		       " unix_ms=%" PRIu64 " dc=%u worker=%u seq=%u\n",
		       cases[i].epoch, cases[i].t, cases[i].d, cases[i].w, cases[i].s, cases[i].id,
		       p.ms, p.unix_ms, p.datacenter, p.worker, p.sequence);
	}
}

static void uuids(void)
{
	static const struct {
		const char *text;
		uint64_t epoch;
		uint8_t t, d, w, s;
	} cases[] = {
		/* PROTOCOL.md's worked example and its successor. */
		{"019b76da-abe8-7005-807f-7abcdef01234", 1767225600000ull, 41, 0, 10, 12},
		{"019b76da-abe8-7006-807f-7abcdef01234", 1767225600000ull, 41, 0, 10, 12},
		/* RFC 9562 appendix A.6: a UUIDv7 made elsewhere (no flakewire tag). */
		{"017f22e2-79b0-7cc3-98c4-dc0c0c07398f", 1767225600000ull, 41, 0, 10, 12},
		/* Not version 7: a UUIDv4, and a version 7 with the wrong variant. */
		{"919108f7-52d1-4320-9bac-f847db4148a8", 1767225600000ull, 41, 0, 10, 12},
		{"019b76da-abe8-7005-c07f-7abcdef01234", 1767225600000ull, 41, 0, 10, 12},
		{"00000000-0000-0000-0000-000000000000", 1767225600000ull, 41, 0, 10, 12},
	};
	static const struct {
		uint64_t epoch;
		uint8_t t, d, w, s;
		uint64_t unix_ms;
		uint32_t dc, worker, counter;
		uint64_t rnd;
	} made[] = {
		{1767225600000ull, 40, 5, 5, 13, 1767225612345ull, 31, 17, 8191, 0x7ffffffull},
		{1767225600000ull, 32, 10, 16, 5, 1767225600000ull, 1023, 65535, 0, 0},
		{1767225600000ull, 62, 0, 0, 1, 1767225600001ull, 0, 0, 1, 0x1ffffffffffffffull},
		{1288834974657ull, 41, 5, 5, 12, 1767225600123ull, 3, 9, 4095, 42},
	};
	uint8_t u[FW_UUID_LEN];
	char text[FW_UUID_TEXT_LEN];

	printf("# uuid: a UUID in canonical text read under a layout: ver, var (RFC 9562\n"
	       "# variant code), v7, unix_ms, flakewire (the tag 0xF7 where the layout puts\n"
	       "# it), and then counter, dc, worker.\n");
	for (size_t i = 0; i < FW_ARRAY_SIZE(cases) + FW_ARRAY_SIZE(made); i++) {
		struct fw_layout l;
		struct fw_uuid7_parts p;

		if (i < FW_ARRAY_SIZE(cases)) {
			l = (struct fw_layout){cases[i].epoch, cases[i].t, cases[i].d, cases[i].w,
					       cases[i].s};
			if (fw_uuid_parse(cases[i].text, u, NULL, NULL) != 0)
				exit(1);
		} else {
			size_t k = i - FW_ARRAY_SIZE(cases);

			l = (struct fw_layout){made[k].epoch, made[k].t, made[k].d, made[k].w,
					       made[k].s};
			if (fw_uuid7_encode(&l, made[k].unix_ms, made[k].dc, made[k].worker,
					    made[k].counter, made[k].rnd, u) < 0) {
				fprintf(stderr, "gen_vectors: uuid case %zu\n", k);
				exit(1);
			}
		}
		if (fw_layout_validate(&l, 0) < 0 || fw_uuid7_decode(&l, u, &p) < 0)
			exit(1);
		printf("uuid epoch=%" PRIu64
		       " bits=%u:%u:%u:%u text=%s ver=%u var=%u v7=%d unix_ms=%" PRIu64
		       " flakewire=%d counter=%u dc=%u worker=%u\n",
		       l.epoch_ms, l.time_bits, l.dc_bits, l.worker_bits, l.seq_bits,
		       fw_uuid_format(u, text), p.version, p.variant, p.is_v7 ? 1 : 0,
		       p.is_v7 ? p.unix_ms : 0, p.flakewire ? 1 : 0, p.flakewire ? p.counter : 0,
		       p.flakewire ? p.datacenter : 0, p.flakewire ? p.worker : 0);
	}
}

int main(void)
{
	printf("# flakewire wire conformance vectors, protocol version 1.\n"
	       "# Generated by tests/vectors/gen_vectors.c from lib/wire: do not edit.\n"
	       "# Format: tests/vectors/README.md.\n");
	requests();
	accepted();
	rejected();
	decodes();
	uuids();
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("gen_vectors: stdout");
		return 1;
	}
	return failures ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C client's conformance test: reads tests/vectors/wire.vec and checks
 * that lib/wire builds every request byte for byte, accepts or rejects every
 * reply for the stated reason with the stated fields, and lib/id decodes
 * every ID and UUID the same way.
 * usage: test_vectors FILE; exits 1 on any mismatch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_layout.h"
#include "fw_uuid.h"
#include "fw_wire.h"

#define MAX_TOK 24

struct kv {
	char *k[MAX_TOK];
	char *v[MAX_TOK];
	int n;
};

static int failures, passed;

static const char *get(const struct kv *t, const char *k)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->k[i], k))
			return t->v[i];
	return NULL;
}

static uint64_t num(const struct kv *t, const char *k)
{
	const char *v = get(t, k);

	if (!v) {
		fprintf(stderr, "test_vectors: missing %s\n", k);
		exit(1);
	}
	return strtoull(v, NULL, 0);
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = strlen(s) / 2;

	if (n > cap)
		exit(1);
	for (size_t i = 0; i < n; i++) {
		unsigned b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			exit(1);
		out[i] = (uint8_t)b;
	}
	return n;
}

/* Reads exactly @n bytes of hex at @s (followed by ',' or the end). */
static int unhex_n(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		out[i] = (uint8_t)b;
	}
	return s[2 * n] == ',' || s[2 * n] == '\0' ? 0 : -1;
}

static void fail(const char *name, const char *what)
{
	printf("FAIL %s: %s\n", name, what);
	failures++;
}

static void check_req(const struct kv *t)
{
	const char *name = get(t, "name");
	uint8_t want[2048], got[2048];
	size_t wlen = unhex(get(t, "bytes"), want, sizeof(want));
	uint8_t op = (uint8_t)num(t, "op");
	int len;

	uint16_t count = (uint16_t)num(t, "count");
	unsigned seq = (unsigned)num(t, "seq");

	/* The default layout's padding is fw_wire_write_request()'s own. */
	if (seq == 12)
		len = fw_wire_write_request(got, sizeof(got), op, count,
					    strtoull(get(t, "tag"), NULL, 16), num(t, "pad") != 0);
	else
		len = fw_wire_write_request_len(
			got, sizeof(got), op, count, strtoull(get(t, "tag"), NULL, 16),
			num(t, "pad") ? fw_wire_request_size_seq(op, count, seq) : 0);
	if (len < 0 || (size_t)len != wlen || memcmp(got, want, wlen) != 0)
		fail(name, "request bytes differ");
	else
		passed++;
}

static void check_rep(const struct kv *t)
{
	static struct fw_wire_reply p;
	const char *name = get(t, "name"), *want = get(t, "result");
	uint8_t b[2048];
	size_t len = unhex(get(t, "bytes"), b, sizeof(b));
	char buf[64];
	int rc;

	rc = fw_wire_parse_reply(b, len, &p);
	if (strcmp(fw_wire_result_name(rc), want) != 0) {
		snprintf(buf, sizeof(buf), "parse says %s, want %s", fw_wire_result_name(rc), want);
		fail(name, buf);
		return;
	}
	if (!strcmp(want, "version") && p.hdr.tag != strtoull(get(t, "tag"), NULL, 16)) {
		fail(name, "tag of a BAD_VERSION reply");
		return;
	}
	if (strcmp(want, "ok") != 0) {
		passed++;
		return;
	}
	if (p.hdr.op != num(t, "op") || p.hdr.status != num(t, "status") ||
	    p.hdr.flags != num(t, "flags") || p.hdr.count != num(t, "count") ||
	    p.hdr.tag != strtoull(get(t, "tag"), NULL, 16) || p.hdr.datacenter != num(t, "dc") ||
	    p.hdr.worker != num(t, "worker") || p.hdr.retry_after_us != num(t, "retry_us")) {
		fail(name, "header fields differ");
		return;
	}
	if (get(t, "ids")) {
		const char *s = get(t, "ids");

		for (uint16_t i = 0; i < p.hdr.count; i++) {
			char *end;

			if (strtoull(s, &end, 10) != p.body.ids[i]) {
				fail(name, "ids differ");
				return;
			}
			s = *end ? end + 1 : end;
		}
	} else if (get(t, "ranges")) {
		const char *s = get(t, "ranges");

		for (uint16_t i = 0; i < p.hdr.count; i++) {
			char *end;
			uint64_t first = strtoull(s, &end, 10);
			uint64_t n = strtoull(end + 1, &end, 10);

			if (first != p.body.ranges[i].first || n != p.body.ranges[i].n) {
				fail(name, "ranges differ");
				return;
			}
			s = *end ? end + 1 : end;
		}
	} else if (get(t, "info")) {
		const struct fw_wire_info *in = &p.body.info;
		char s[256];

		snprintf(s, sizeof(s),
			 "%" PRIu64 ":%u:%u:%u:%u:%u:%u:%u:%u:%u:%" PRIu32 ":%" PRId64,
			 in->epoch_ms, in->time_bits, in->dc_bits, in->worker_bits, in->seq_bits,
			 in->version_min, in->version_max, in->list_max, in->ranges_max,
			 in->max_borrow_ms, in->features, in->clock_offset_ns);
		if (strcmp(s, get(t, "info")) != 0) {
			fail(name, "info differs");
			return;
		}
	} else if (get(t, "uuids")) {
		const char *s = get(t, "uuids");

		for (uint16_t i = 0; i < p.hdr.count; i++) {
			uint8_t u[FW_WIRE_UUID_LEN];

			if (unhex_n(s, u, sizeof(u)) != 0 ||
			    memcmp(u, p.body.uuids[i], sizeof(u))) {
				fail(name, "uuids differ");
				return;
			}
			s += 2 * FW_WIRE_UUID_LEN + 1;
		}
	}
	passed++;
}

static void check_dec(const struct kv *t)
{
	struct fw_layout l = {.epoch_ms = num(t, "epoch")};
	struct fw_id_parts p;
	unsigned a, b, c, d;

	if (sscanf(get(t, "bits"), "%u:%u:%u:%u", &a, &b, &c, &d) != 4)
		exit(1);
	l.time_bits = (uint8_t)a;
	l.dc_bits = (uint8_t)b;
	l.worker_bits = (uint8_t)c;
	l.seq_bits = (uint8_t)d;
	if (fw_layout_validate(&l, 0) < 0 || fw_layout_decode(&l, num(t, "id"), &p) < 0 ||
	    p.ms != num(t, "ms") || p.unix_ms != num(t, "unix_ms") ||
	    p.datacenter != num(t, "dc") || p.worker != num(t, "worker") ||
	    p.sequence != num(t, "seq"))
		fail(get(t, "id"), "decode differs");
	else
		passed++;
}

static void check_uuid(const struct kv *t)
{
	struct fw_layout l = {.epoch_ms = num(t, "epoch")};
	struct fw_uuid7_parts p;
	uint8_t u[FW_UUID_LEN];
	char text[FW_UUID_TEXT_LEN];
	unsigned a, b, c, d;

	if (sscanf(get(t, "bits"), "%u:%u:%u:%u", &a, &b, &c, &d) != 4)
		exit(1);
	l.time_bits = (uint8_t)a;
	l.dc_bits = (uint8_t)b;
	l.worker_bits = (uint8_t)c;
	l.seq_bits = (uint8_t)d;
	if (fw_uuid_parse(get(t, "text"), u, NULL, NULL) != 0 || fw_uuid7_decode(&l, u, &p) != 0 ||
	    strcmp(fw_uuid_format(u, text), get(t, "text")) != 0 || p.version != num(t, "ver") ||
	    p.variant != num(t, "var") || p.is_v7 != (num(t, "v7") != 0) ||
	    (p.is_v7 && p.unix_ms != num(t, "unix_ms")) ||
	    p.flakewire != (num(t, "flakewire") != 0) ||
	    (p.flakewire && (p.counter != num(t, "counter") || p.datacenter != num(t, "dc") ||
			     p.worker != num(t, "worker"))))
		fail(get(t, "text"), "uuid decode differs");
	else
		passed++;
}

int main(int argc, char **argv)
{
	static char line[8192];
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: test_vectors FILE\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct kv t = {0};
		char *kind, *tok, *save = NULL;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		kind = strtok_r(line, " ", &save);
		while ((tok = strtok_r(NULL, " ", &save)) && t.n < MAX_TOK) {
			char *eq = strchr(tok, '=');

			if (!eq)
				exit(1);
			*eq = '\0';
			t.k[t.n] = tok;
			t.v[t.n++] = eq + 1;
		}
		if (!strcmp(kind, "req"))
			check_req(&t);
		else if (!strcmp(kind, "rep"))
			check_rep(&t);
		else if (!strcmp(kind, "dec"))
			check_dec(&t);
		else if (!strcmp(kind, "uuid"))
			check_uuid(&t);
		else
			fail(kind, "unknown line kind");
	}
	fclose(f);
	printf("%d passed, %d failed\n", passed, failures);
	return failures || passed < 200 ? 1 : 0;
}

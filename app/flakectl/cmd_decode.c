/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_layout.h"
#include "fw_uuid.h"
#include "flakectl.h"
#include "layout_args.h"

static void decode_help(FILE *f)
{
	fprintf(f, "usage: flakectl decode [LAYOUT OPTIONS] [--json] [ID | UUID]...\n"
		   "\n"
		   "Takes IDs apart: time (UTC, ISO 8601), unix ms, datacenter, worker,\n"
		   "sequence. IDs are decimal, 0 to 2^63-1; without arguments they are read\n"
		   "from stdin, one per line.\n"
		   "\n"
		   "A UUID in canonical text (8-4-4-4-12 hex digits, e.g.\n"
		   "017f22e2-79b0-7cc3-98c4-dc0c0c07398f) shows its version and variant; a\n"
		   "UUIDv7 its time and unix ms; and one made by flakewire (its tag byte where\n"
		   "the layout puts it) its datacenter, worker, counter and random bits. The\n"
		   "layout options say which layout the responder had (default 41/0/10/12).\n"
		   "\n"
		   "  --json                one JSON object per line: id (a string, as 64-bit\n"
		   "                        integers lose precision in JavaScript and jq), time,\n"
		   "                        unix_ms, datacenter, worker, sequence; for a UUID:\n"
		   "                        uuid, version, variant, time, unix_ms, flakewire,\n"
		   "                        datacenter, worker, counter, random_bits or note\n");
	layout_args_help(f);
}

/* Returns NULL when @s is an ID, else why it is not. */
static const char *parse_id(const char *s, uint64_t *id)
{
	switch (fc_parse_u64(s, id)) {
	case FC_NUM_OK:
		break;
	case FC_NUM_EMPTY:
		return "empty, expected a decimal ID";
	case FC_NUM_NOT_DECIMAL:
		return "not a decimal ID";
	case FC_NUM_NEGATIVE:
		return "negative; IDs are 0 to 2^63-1";
	case FC_NUM_TOO_BIG:
		return "above 2^64-1; IDs are 0 to 2^63-1";
	}
	if (*id >> 63)
		return "sign bit set; IDs are 0 to 2^63-1";
	return NULL;
}

static int print_id(const char *cmd, const struct fw_layout *l, uint64_t id, bool json)
{
	struct fw_id_parts p;
	char iso[FW_ISO8601_LEN];
	int rc = fw_layout_decode(l, id, &p);

	if (rc < 0) {
		fc_err(cmd, "%" PRIu64 ": %s", id, fw_strerror(rc));
		return FC_EXIT_USAGE;
	}
	fw_format_iso8601(p.unix_ms, iso);
	if (json)
		printf("{\"id\":\"%" PRIu64 "\",\"time\":\"%s\",\"unix_ms\":%" PRIu64
		       ",\"datacenter\":%" PRIu32 ",\"worker\":%" PRIu32 ",\"sequence\":%" PRIu32
		       "}\n",
		       id, iso, p.unix_ms, p.datacenter, p.worker, p.sequence);
	else
		/* Widths fit the largest values the layout limits allow. */
		printf("%-19" PRIu64 "  %s  unix_ms %-13" PRIu64 "  datacenter %-4" PRIu32
		       "  worker %-5" PRIu32 "  sequence %" PRIu32 "\n",
		       id, iso, p.unix_ms, p.datacenter, p.worker, p.sequence);
	return FC_EXIT_OK;
}

/* A UUID, not a (mistyped) decimal ID: a '-' past the first character, or 32+ characters. */
static bool looks_like_uuid(const char *s)
{
	return strchr(s + (*s != '\0'), '-') != NULL || strlen(s) >= 32;
}

/* Returns NULL when @s is a UUID, else why not (in @buf). */
static const char *parse_uuid(const char *s, uint8_t *u, char *buf, size_t cap)
{
	enum fw_uuid_text_error why;
	size_t pos;

	if (fw_uuid_parse(s, u, &why, &pos) == 0)
		return NULL;
	switch (why) {
	case FW_UUID_TEXT_LENGTH:
		snprintf(
			buf, cap,
			"a UUID is 36 characters (8-4-4-4-12 hex digits with hyphens), this is %zu",
			pos);
		break;
	case FW_UUID_TEXT_HYPHEN:
		snprintf(buf, cap, "character %zu is '%c', expected '-' (8-4-4-4-12 hex digits)",
			 pos + 1, s[pos]);
		break;
	default:
		snprintf(buf, cap, "character %zu is '%c', not a hex digit", pos + 1, s[pos]);
		break;
	}
	return buf;
}

static const char *variant_name(unsigned v)
{
	switch (v) {
	case 0:
		return "ncs";
	case 2:
		return "rfc9562";
	case 6:
		return "microsoft";
	default:
		return "reserved";
	}
}

static void print_uuid(const struct fw_layout *l, const uint8_t *u, bool json)
{
	char text[FW_UUID_TEXT_LEN], iso[FW_ISO8601_LEN], note[160];
	struct fw_uuid7_parts p;

	fw_uuid_format(u, text);
	fw_uuid7_decode(l, u, &p);
	if (!p.is_v7)
		snprintf(note, sizeof(note), "not a UUIDv7 (version %u, variant %s): no time in it",
			 p.version, variant_name(p.variant));
	else if (!p.flakewire)
		snprintf(note, sizeof(note),
			 "not made by flakewire in layout %u/%u/%u/%u (no tag 0x%02X after the "
			 "worker bits); give the responder's layout options if it had another",
			 l->time_bits, l->dc_bits, l->worker_bits, l->seq_bits, FW_UUID7_TAG);
	if (p.is_v7)
		fw_format_iso8601(p.unix_ms, iso);
	if (json) {
		printf("{\"uuid\":\"%s\",\"version\":%u,\"variant\":\"%s\"", text, p.version,
		       variant_name(p.variant));
		if (p.is_v7)
			printf(",\"time\":\"%s\",\"unix_ms\":%" PRIu64, iso, p.unix_ms);
		printf(",\"flakewire\":%s", p.flakewire ? "true" : "false");
		if (p.flakewire)
			printf(",\"datacenter\":%" PRIu32 ",\"worker\":%" PRIu32
			       ",\"counter\":%" PRIu32 ",\"random_bits\":%u}\n",
			       p.datacenter, p.worker, p.counter, p.rand_bits);
		else
			printf(",\"note\":\"%s\"}\n", note);
		return;
	}
	printf("%s  version %u  variant %s", text, p.version, variant_name(p.variant));
	if (p.is_v7)
		printf("  %s  unix_ms %" PRIu64, iso, p.unix_ms);
	if (p.flakewire)
		printf("  datacenter %" PRIu32 "  worker %" PRIu32 "  counter %" PRIu32
		       "  random_bits %u\n",
		       p.datacenter, p.worker, p.counter, p.rand_bits);
	else
		printf("  note: %s\n", note);
}

/* One argument or line: an ID or a UUID. Returns an exit status. */
static int decode_one(const char *cmd, const char *where, const struct fw_layout *l, const char *s,
		      bool json, bool print)
{
	char why_buf[128];
	const char *why;
	uint8_t u[FW_UUID_LEN];
	uint64_t id;

	if (looks_like_uuid(s)) {
		why = parse_uuid(s, u, why_buf, sizeof(why_buf));
		if (why) {
			fc_err(cmd, "%s '%s': %s", where, s, why);
			return FC_EXIT_USAGE;
		}
		if (print)
			print_uuid(l, u, json);
		return FC_EXIT_OK;
	}
	why = parse_id(s, &id);
	if (why) {
		fc_err(cmd, "%s '%s': %s", where, s, why);
		return FC_EXIT_USAGE;
	}
	return print ? print_id(cmd, l, id, json) : FC_EXIT_OK;
}

static char *trim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && strchr(" \t\r\n", s[n - 1]))
		s[--n] = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Streams stdin so a long pipe needs no memory; stops at the first bad line. */
static int decode_stdin(const char *cmd, const struct fw_layout *l, bool json)
{
	char *line = NULL;
	size_t cap = 0;
	uint64_t lineno = 0;
	int rc = FC_EXIT_OK;

	while (rc == FC_EXIT_OK && getline(&line, &cap, stdin) >= 0) {
		char *s = trim(line);
		char where[48];

		lineno++;
		snprintf(where, sizeof(where), "stdin line %" PRIu64, lineno);
		rc = decode_one(cmd, where, l, s, json, true);
	}
	free(line);
	if (rc == FC_EXIT_OK && ferror(stdin)) {
		fc_err(cmd, "stdin: read error");
		rc = FC_EXIT_FAIL;
	}
	if (rc == FC_EXIT_OK && lineno == 0) {
		fc_err(cmd, "no IDs given (as arguments or on stdin)");
		rc = FC_EXIT_USAGE;
	}
	return rc;
}

int cmd_decode(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct layout_args la;
	struct fw_layout l;
	bool json = false, opts = true;
	int nids = 0;

	layout_args_init(&la);
	/* IDs are gathered into argv[1..nids] so options may follow them. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = opts ? layout_args_parse(&la, argc, argv, &i) : 0;

		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (opts && fc_is_help(a)) {
			decode_help(stdout);
			return FC_EXIT_OK;
		} else if (opts && !strcmp(a, "--json")) {
			json = true;
		} else if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if (opts && a[0] == '-' && a[1] == '-') {
			return fc_unknown_arg(cmd, a);
		} else {
			argv[1 + nids++] = argv[i];
		}
	}
	if (layout_args_finish(&la, cmd, &l) < 0)
		return FC_EXIT_USAGE;
	if (nids == 0)
		return decode_stdin(cmd, &l, json);

	/* All or nothing: a typo in the last ID must not follow half the output. */
	int rc = FC_EXIT_OK;

	for (int k = 0; k < nids && rc == FC_EXIT_OK; k++)
		rc = decode_one(cmd, "argument", &l, argv[1 + k], json, false);
	for (int k = 0; k < nids && rc == FC_EXIT_OK; k++)
		rc = decode_one(cmd, "argument", &l, argv[1 + k], json, true);
	return rc;
}

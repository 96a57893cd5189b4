/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_layout.h"
#include "flakectl.h"
#include "layout_args.h"

static void decode_help(FILE *f)
{
	fprintf(f, "usage: flakectl decode [LAYOUT OPTIONS] [--json] [ID...]\n"
		   "\n"
		   "Takes IDs apart: time (UTC, ISO 8601), unix ms, datacenter, worker,\n"
		   "sequence. IDs are decimal, 0 to 2^63-1; without arguments they are read\n"
		   "from stdin, one per line.\n"
		   "\n"
		   "  --json                one JSON object per line: id (a string, as 64-bit\n"
		   "                        integers lose precision in JavaScript and jq), time,\n"
		   "                        unix_ms, datacenter, worker, sequence\n");
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
		const char *why;
		uint64_t id;

		lineno++;
		why = parse_id(s, &id);
		if (why) {
			fc_err(cmd, "stdin line %" PRIu64 " '%s': %s", lineno, s, why);
			rc = FC_EXIT_USAGE;
		} else {
			rc = print_id(cmd, l, id, json);
		}
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
	uint64_t *ids = calloc((size_t)nids, sizeof(*ids));
	int rc = FC_EXIT_OK;

	if (!ids) {
		fc_err(cmd, "out of memory");
		return FC_EXIT_FAIL;
	}
	for (int k = 0; k < nids && rc == FC_EXIT_OK; k++) {
		const char *why = parse_id(argv[1 + k], &ids[k]);

		if (why) {
			fc_err(cmd, "argument '%s': %s", argv[1 + k], why);
			rc = FC_EXIT_USAGE;
		}
	}
	for (int k = 0; k < nids && rc == FC_EXIT_OK; k++)
		rc = print_id(cmd, &l, ids[k], json);
	free(ids);
	return rc;
}

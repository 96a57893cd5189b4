/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client_args.h"
#include "flakectl.h"
#include "fw_err.h"
#include "fw_uuid.h"

/* 80 MB of IDs for LIST; the same bound keeps a --range run's output sane. */
#define GET_N_MAX 10000000u

struct get_opts {
	struct client_args ca;
	uint64_t n;
	bool n_given;
	bool range;
	bool uuid7;
	bool json;
	bool csv;
	struct fw_layout layout; /* for --json and --csv */
};

static void get_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl get [-n N] [--range | --uuid7] [--server HOST:PORT]...\n"
		"                    [--json | --csv] [--timeout MS] [--trusted]\n"
		"\n"
		"Asks a responder for IDs and prints them, one per line. Without -n, one ID\n"
		"(an ID request); -n N asks with LIST requests of up to 181 IDs each.\n"
		"\n"
		"  -n N                  how many IDs, 1-%u\n"
		"  --range               ask with RANGE requests (up to 65535 IDs each) and\n"
		"                        print every ID of the ranges\n"
		"  --uuid7               ask for RFC 9562 UUIDv7 instead (UUID7 requests of up\n"
		"                        to 90 each) and print them as canonical text\n"
		"  --json                one JSON object per line: id (a string), worker,\n"
		"                        datacenter, time; with --range one per range: first,\n"
		"                        last (strings), n, worker, datacenter, time; with\n"
		"                        --uuid7: uuid, worker, datacenter, counter, time\n"
		"  --csv                 one line per ID, no header: id,unix_ms,datacenter,\n"
		"                        worker,sequence; with --range one per range:\n"
		"                        first,n,unix_ms,datacenter,worker (IDs first to\n"
		"                        first+n-1, all issued in millisecond unix_ms);\n"
		"                        with --uuid7: uuid,unix_ms,datacenter,worker,counter\n",
		GET_N_MAX);
	client_args_help(f, CLIENT_ARGS_REQUEST);
}

static void print_id(const struct get_opts *o, uint64_t id)
{
	struct fw_id_parts p;
	char iso[FW_ISO8601_LEN];

	if (!o->json && !o->csv) {
		printf("%" PRIu64 "\n", id);
		return;
	}
	/* The client checked the sign bit: decoding cannot fail. */
	fw_layout_decode(&o->layout, id, &p);
	if (o->csv) {
		printf("%" PRIu64 ",%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 "\n", id,
		       p.unix_ms, p.datacenter, p.worker, p.sequence);
		return;
	}
	fw_format_iso8601(p.unix_ms, iso);
	printf("{\"id\":\"%" PRIu64 "\",\"worker\":%" PRIu32 ",\"datacenter\":%" PRIu32
	       ",\"time\":\"%s\"}\n",
	       id, p.worker, p.datacenter, iso);
}

static void print_range(const struct get_opts *o, const struct fw_wire_range *r)
{
	struct fw_id_parts p;
	char iso[FW_ISO8601_LEN];

	if (!o->json && !o->csv) {
		for (uint32_t k = 0; k < r->n; k++)
			printf("%" PRIu64 "\n", r->first + k);
		return;
	}
	fw_layout_decode(&o->layout, r->first, &p);
	if (o->csv) {
		printf("%" PRIu64 ",%" PRIu32 ",%" PRIu64 ",%" PRIu32 ",%" PRIu32 "\n", r->first,
		       r->n, p.unix_ms, p.datacenter, p.worker);
		return;
	}
	fw_format_iso8601(p.unix_ms, iso);
	printf("{\"first\":\"%" PRIu64 "\",\"last\":\"%" PRIu64 "\",\"n\":%" PRIu32
	       ",\"worker\":%" PRIu32 ",\"datacenter\":%" PRIu32 ",\"time\":\"%s\"}\n",
	       r->first, r->first + r->n - 1, r->n, p.worker, p.datacenter, iso);
}

static int get_list(const struct get_opts *o, const char *cmd, struct fw_client *c)
{
	uint64_t *ids = calloc(o->n, sizeof(*ids));
	size_t got = 0;
	int rc;

	if (!ids) {
		fc_err(cmd, "out of memory for %" PRIu64 " IDs", o->n);
		return FC_EXIT_FAIL;
	}
	rc = fw_client_get_n(c, ids, o->n, &got);
	/* IDs received before a failure are valid and already spent: print them. */
	for (size_t k = 0; k < got; k++)
		print_id(o, ids[k]);
	free(ids);
	if (rc < 0) {
		if (got)
			fc_err(cmd, "got %zu of %" PRIu64 " IDs, then:", got, o->n);
		client_args_report(&o->ca, cmd, c, rc);
		return FC_EXIT_FAIL;
	}
	return FC_EXIT_OK;
}

static int get_range(const struct get_opts *o, const char *cmd, struct fw_client *c)
{
	struct fw_wire_range r[FW_WIRE_RANGES_MAX];
	uint64_t got = 0;

	while (got < o->n) {
		uint32_t want = (uint32_t)FW_MIN(o->n - got, FW_WIRE_RANGE_IDS_MAX);
		size_t nr = 0;
		int rc = fw_client_get_range(c, want, r, FW_WIRE_RANGES_MAX, &nr);

		if (rc < 0) {
			if (got)
				fc_err(cmd, "got %" PRIu64 " of %" PRIu64 " IDs, then:", got, o->n);
			client_args_report(&o->ca, cmd, c, rc);
			return FC_EXIT_FAIL;
		}
		for (size_t k = 0; k < nr; k++) {
			print_range(o, &r[k]);
			got += r[k].n;
		}
		if (nr == 0) {
			fc_err(cmd, "responder answered a RANGE request with no IDs");
			return FC_EXIT_FAIL;
		}
	}
	return FC_EXIT_OK;
}

static void print_uuid(const struct get_opts *o, const uint8_t *u)
{
	char text[FW_UUID_TEXT_LEN], iso[FW_ISO8601_LEN];
	struct fw_uuid7_parts p;

	fw_uuid_format(u, text);
	if (!o->json && !o->csv) {
		printf("%s\n", text);
		return;
	}
	/* The client checked version, variant, tag and worker against this layout. */
	fw_uuid7_decode(&o->layout, u, &p);
	if (o->csv) {
		printf("%s,%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 "\n", text, p.unix_ms,
		       p.datacenter, p.worker, p.counter);
		return;
	}
	fw_format_iso8601(p.unix_ms, iso);
	printf("{\"uuid\":\"%s\",\"worker\":%" PRIu32 ",\"datacenter\":%" PRIu32
	       ",\"counter\":%" PRIu32 ",\"time\":\"%s\"}\n",
	       text, p.worker, p.datacenter, p.counter, iso);
}

/* UUIDs in batches, so -n 10000000 needs no 160 MB buffer. */
static int get_uuid7(const struct get_opts *o, const char *cmd, struct fw_client *c)
{
	enum { BATCH = 100 * FW_WIRE_UUID7_MAX };
	static uint8_t u[BATCH][FW_UUID_LEN];
	uint64_t done = 0;

	while (done < o->n) {
		size_t want = (size_t)FW_MIN(o->n - done, (uint64_t)BATCH), got = 0;
		int rc = fw_client_get_uuid7(c, u, want, &got);

		for (size_t k = 0; k < got; k++)
			print_uuid(o, u[k]);
		done += got;
		if (rc < 0) {
			if (done)
				fc_err(cmd, "got %" PRIu64 " of %" PRIu64 " UUIDs, then:", done,
				       o->n);
			if (rc == -EOPNOTSUPP)
				fc_err(cmd,
				       "the responder does not offer UUID7 (INFO features bit 0 "
				       "is clear): upgrade it");
			else
				client_args_report(&o->ca, cmd, c, rc);
			return FC_EXIT_FAIL;
		}
	}
	return FC_EXIT_OK;
}

/* Returns FC_EXIT_OK to go on, -1 after --help, or FC_EXIT_USAGE. */
static int get_parse(struct get_opts *o, int argc, char **argv)
{
	client_args_init(&o->ca);
	o->n = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = client_args_parse(&o->ca, argc, argv, &i);

		if (r == 0) {
			r = fc_opt_u64(argc, argv, &i, "-n", 1, GET_N_MAX, &o->n);
			if (r > 0)
				o->n_given = true;
		}
		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (fc_is_help(a)) {
			get_help(stdout);
			return -1;
		} else if (!strcmp(a, "--range")) {
			o->range = true;
		} else if (!strcmp(a, "--uuid7")) {
			o->uuid7 = true;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--csv")) {
			o->csv = true;
		} else {
			return fc_unknown_arg(argv[0], a);
		}
	}
	if (o->range && o->uuid7) {
		fc_err(argv[0], "--range and --uuid7 exclude each other (UUIDs come as a list)");
		return FC_EXIT_USAGE;
	}
	if (o->json && o->csv) {
		fc_err(argv[0], "--json and --csv: choose one output format");
		return FC_EXIT_USAGE;
	}
	client_args_finish(&o->ca);
	return FC_EXIT_OK;
}

int cmd_get(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct get_opts o = {0};
	struct fw_client *c = NULL;
	int rc = get_parse(&o, argc, argv);

	if (rc != FC_EXIT_OK)
		return rc < 0 ? FC_EXIT_OK : rc;
	rc = client_args_open(&o.ca, 0, o.ca.n, cmd, &c);
	if (rc != FC_EXIT_OK)
		return rc;
	if (o.json || o.csv) {
		struct fw_wire_info info;
		int e = fw_client_info(c, &info, NULL);

		if (e < 0) {
			client_args_report(&o.ca, cmd, c, e);
			rc = FC_EXIT_FAIL;
		} else if ((e = client_args_layout(&info, &o.layout)) < 0) {
			fc_err(cmd, "responder reports an unusable layout: %s", fw_strerror(e));
			rc = FC_EXIT_FAIL;
		}
	}
	if (rc == FC_EXIT_OK) {
		if (o.uuid7) {
			rc = get_uuid7(&o, cmd, c);
		} else if (o.range) {
			rc = get_range(&o, cmd, c);
		} else if (o.n_given) {
			rc = get_list(&o, cmd, c);
		} else {
			uint64_t id;
			int e = fw_client_get(c, &id);

			if (e < 0) {
				client_args_report(&o.ca, cmd, c, e);
				rc = FC_EXIT_FAIL;
			} else {
				print_id(&o, id);
			}
		}
	}
	fw_client_close(c);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <string.h>

#include "client_args.h"
#include "flakectl.h"
#include "fw_err.h"

static void info_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl info [--server HOST:PORT]... [--json] [--timeout MS] [--trusted]\n"
		"\n"
		"Asks each responder for its INFO and prints what it reports: protocol\n"
		"versions, ID layout and epoch, the datacenter and worker that answered,\n"
		"list_max, ranges_max, max_borrow_ms, its clock offset (system clock minus\n"
		"responder clock) and clock state (borrowed, backstep, unsafe, slewing).\n"
		"Exits 1 if any responder did not answer.\n"
		"\n"
		"  --json                one JSON object per responder, one per line\n");
	client_args_help(f, CLIENT_ARGS_REQUEST);
}

static void print_text(const char *server, const struct fw_wire_info *in,
		       const struct fw_wire_hdr *h, bool first)
{
	char iso[FW_ISO8601_LEN], flags[128];

	fw_format_iso8601(in->epoch_ms, iso);
	client_args_flag_words(h->flags, flags, sizeof(flags));
	if (!first)
		putchar('\n');
	printf("server          %s\n"
	       "answered by     datacenter %u, worker %u\n"
	       "protocol        versions %u-%u\n"
	       "layout          %u/%u/%u/%u (time/datacenter/worker/sequence bits)\n"
	       "epoch           %s (unix ms %" PRIu64 ")\n"
	       "list_max        %u IDs\n"
	       "ranges_max      %u ranges\n"
	       "max_borrow_ms   %u\n"
	       "clock offset    %+" PRId64 " ns (system clock minus responder clock)\n"
	       "clock flags     %s\n"
	       "features        0x%" PRIx32 "%s\n",
	       server, h->datacenter, h->worker, in->version_min, in->version_max, in->time_bits,
	       in->dc_bits, in->worker_bits, in->seq_bits, iso, in->epoch_ms, in->list_max,
	       in->ranges_max, in->max_borrow_ms, in->clock_offset_ns, flags, in->features,
	       in->features & FW_WIRE_INFO_F_UUID7 ? " (uuid7)" : "");
}

static void print_json(const char *server, const struct fw_wire_info *in,
		       const struct fw_wire_hdr *h)
{
	char iso[FW_ISO8601_LEN], flags[128];

	fw_format_iso8601(in->epoch_ms, iso);
	client_args_flag_json(h->flags, flags, sizeof(flags));
	/* @server came from the command line: escape what JSON needs escaped. */
	fputs("{\"server\":\"", stdout);
	for (const char *s = server; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned)*s);
		else
			putchar(*s);
	}
	printf("\",\"datacenter\":%u,\"worker\":%u,\"version_min\":%u,\"version_max\":%u,"
	       "\"layout\":{\"time_bits\":%u,\"datacenter_bits\":%u,\"worker_bits\":%u,"
	       "\"sequence_bits\":%u},\"epoch\":\"%s\",\"epoch_ms\":%" PRIu64 ",\"list_max\":%u,"
	       "\"ranges_max\":%u,\"max_borrow_ms\":%u,\"clock_offset_ns\":%" PRId64
	       ",\"clock_flags\":%s,\"features\":%" PRIu32 ",\"uuid7\":%s}\n",
	       h->datacenter, h->worker, in->version_min, in->version_max, in->time_bits,
	       in->dc_bits, in->worker_bits, in->seq_bits, iso, in->epoch_ms, in->list_max,
	       in->ranges_max, in->max_borrow_ms, in->clock_offset_ns, flags, in->features,
	       in->features & FW_WIRE_INFO_F_UUID7 ? "true" : "false");
}

int cmd_info(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct client_args ca;
	bool json = false;
	int rc = FC_EXIT_OK, shown = 0;

	client_args_init(&ca);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = client_args_parse(&ca, argc, argv, &i);

		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (fc_is_help(a)) {
			info_help(stdout);
			return FC_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else {
			return fc_unknown_arg(cmd, a);
		}
	}
	client_args_finish(&ca);

	/* Validate every address before asking any, so a typo costs no timeout. */
	for (size_t k = 0; k < ca.n; k++) {
		struct fw_client *c;
		int r = client_args_open(&ca, k, 1, cmd, &c);

		if (r != FC_EXIT_OK)
			return r;
		fw_client_close(c);
	}
	for (size_t k = 0; k < ca.n; k++) {
		struct client_args one = ca;
		struct fw_client *c;
		struct fw_wire_info in;
		struct fw_wire_hdr h;
		int e;

		one.servers[0] = ca.servers[k];
		one.n = 1;
		if (client_args_open(&one, 0, 1, cmd, &c) != FC_EXIT_OK) {
			rc = FC_EXIT_FAIL;
			continue;
		}
		e = fw_client_info(c, &in, &h);
		if (e < 0) {
			client_args_report(&one, cmd, c, e);
			rc = FC_EXIT_FAIL;
		} else if (json) {
			print_json(ca.servers[k], &in, &h);
		} else {
			print_text(ca.servers[k], &in, &h, shown++ == 0);
		}
		fw_client_close(c);
	}
	return rc;
}

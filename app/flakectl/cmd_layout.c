/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <string.h>

#include "fw_layout.h"
#include "flakectl.h"
#include "layout_args.h"
#include "fw_time.h"

/* Gregorian average, so a 400-year span comes out exact. */
#define MS_PER_YEAR (365.2425 * 86400000.0)

static void layout_help(FILE *f)
{
	fprintf(f, "usage: flakectl layout [LAYOUT OPTIONS] [--json]\n"
		   "\n"
		   "Shows what a layout gives: IDs per ms and per s for one worker, how many\n"
		   "datacenters and workers, the epoch, the last date the timestamp field can\n"
		   "hold and the years of life in total and left from now.\n"
		   "\n"
		   "  --json                one JSON object\n");
	layout_args_help(f);
}

static void print_layout(const struct fw_layout *l, bool json)
{
	char epoch[FW_ISO8601_LEN], end[FW_ISO8601_LEN];
	uint64_t end_ms = fw_layout_end_unix_ms(l), now = fw_wall_ms();
	double years = ((double)(end_ms - l->epoch_ms) + 1) / MS_PER_YEAR;
	double left = end_ms > now ? (double)(end_ms - now) / MS_PER_YEAR : 0;

	fw_format_iso8601(l->epoch_ms, epoch);
	fw_format_iso8601(end_ms, end);
	if (json) {
		printf("{\"time_bits\":%u,\"datacenter_bits\":%u,\"worker_bits\":%u,"
		       "\"sequence_bits\":%u,\"ids_per_ms\":%" PRIu64 ",\"ids_per_sec\":%" PRIu64
		       ",\"datacenters\":%" PRIu32 ",\"workers\":%" PRIu32 ",\"epoch_ms\":%" PRIu64
		       ",\"epoch\":\"%s\",\"end_ms\":%" PRIu64
		       ",\"end\":\"%s\",\"years\":%.2f,\"years_left\":%.2f}\n",
		       l->time_bits, l->dc_bits, l->worker_bits, l->seq_bits,
		       fw_layout_ids_per_ms(l), fw_layout_ids_per_sec(l), fw_layout_datacenters(l),
		       fw_layout_workers(l), l->epoch_ms, epoch, end_ms, end, years, left);
		return;
	}
	printf("bits            %u/%u/%u/%u (time/datacenter/worker/sequence)\n"
	       "IDs/ms/worker   %" PRIu64 "\n"
	       "IDs/s/worker    %" PRIu64 "\n"
	       "datacenters     %" PRIu32 "\n"
	       "workers         %" PRIu32 "\n"
	       "epoch           %s  (unix ms %" PRIu64 ")\n"
	       "end             %s  (unix ms %" PRIu64 ")\n"
	       "life            %.1f years, %.1f left\n",
	       l->time_bits, l->dc_bits, l->worker_bits, l->seq_bits, fw_layout_ids_per_ms(l),
	       fw_layout_ids_per_sec(l), fw_layout_datacenters(l), fw_layout_workers(l), epoch,
	       l->epoch_ms, end, end_ms, years, left);
}

int cmd_layout(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct layout_args la;
	struct fw_layout l;
	bool json = false;

	layout_args_init(&la);
	for (int i = 1; i < argc; i++) {
		int r = layout_args_parse(&la, argc, argv, &i);

		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (fc_is_help(argv[i])) {
			layout_help(stdout);
			return FC_EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else {
			return fc_unknown_arg(cmd, argv[i]);
		}
	}
	if (layout_args_finish(&la, cmd, &l) < 0)
		return FC_EXIT_USAGE;
	print_layout(&l, json);
	return FC_EXIT_OK;
}

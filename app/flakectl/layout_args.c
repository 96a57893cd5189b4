/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <string.h>

#include "fw_err.h"
#include "flakectl.h"
#include "layout_args.h"
#include "fw_time.h"

enum {
	LAYOUT_ARG_EPOCH = 0x1,
	LAYOUT_ARG_DC = 0x2,
	LAYOUT_ARG_WORKER = 0x4,
	LAYOUT_ARG_SEQ = 0x8,
};

static const struct layout_preset {
	const char *flag;
	const char *help;
	uint64_t epoch_ms;
	unsigned dc_bits, worker_bits, seq_bits;
} presets[] = {
	{"--twitter", "Twitter", 1288834974657ULL, 5, 5, 12},
	/* Discord's "worker" and "process" fields are our datacenter and worker. */
	{"--discord", "Discord", 1420070400000ULL, 5, 5, 12},
};

void layout_args_init(struct layout_args *la)
{
	memset(la, 0, sizeof(*la));
	la->preset = -1;
}

static int parse_preset(struct layout_args *la, const char *cmd, const char *arg)
{
	for (int p = 0; p < (int)FW_ARRAY_SIZE(presets); p++) {
		if (strcmp(arg, presets[p].flag) != 0)
			continue;
		if (la->preset >= 0 && la->preset != p) {
			fc_err(cmd, "%s: conflicts with %s", arg, presets[la->preset].flag);
			return -1;
		}
		la->preset = p;
		return 1;
	}
	return 0;
}

int layout_args_parse(struct layout_args *la, int argc, char **argv, int *i)
{
	const struct {
		const char *name;
		uint64_t min, max;
		uint64_t *dst;
		unsigned bit;
	} flags[] = {
		{"--epoch", 0, UINT64_MAX, &la->epoch_ms, LAYOUT_ARG_EPOCH},
		{"--datacenter-bits", 0, FW_LAYOUT_DC_BITS_MAX, &la->dc_bits, LAYOUT_ARG_DC},
		{"--worker-bits", 0, FW_LAYOUT_WORKER_BITS_MAX, &la->worker_bits,
		 LAYOUT_ARG_WORKER},
		{"--sequence-bits", FW_LAYOUT_SEQ_BITS_MIN, FW_LAYOUT_SEQ_BITS_MAX, &la->seq_bits,
		 LAYOUT_ARG_SEQ},
	};

	for (size_t f = 0; f < FW_ARRAY_SIZE(flags); f++) {
		int r = fc_opt_u64(argc, argv, i, flags[f].name, flags[f].min, flags[f].max,
				   flags[f].dst);
		if (r != 0) {
			la->given |= flags[f].bit;
			return r;
		}
	}
	return parse_preset(la, argv[0], argv[*i]);
}

int layout_args_finish(const struct layout_args *la, const char *cmd, struct fw_layout *out)
{
	struct fw_layout l;
	uint64_t epoch;
	unsigned dc, worker, seq;
	int rc;

	fw_layout_default(&l);
	epoch = l.epoch_ms;
	dc = l.dc_bits;
	worker = l.worker_bits;
	seq = l.seq_bits;
	if (la->preset >= 0) {
		const struct layout_preset *p = &presets[la->preset];

		epoch = p->epoch_ms;
		dc = p->dc_bits;
		worker = p->worker_bits;
		seq = p->seq_bits;
	}
	if (la->given & LAYOUT_ARG_EPOCH)
		epoch = la->epoch_ms;
	if (la->given & LAYOUT_ARG_DC)
		dc = (unsigned)la->dc_bits;
	if (la->given & LAYOUT_ARG_WORKER)
		worker = (unsigned)la->worker_bits;
	if (la->given & LAYOUT_ARG_SEQ)
		seq = (unsigned)la->seq_bits;

	/* Each width was range-checked as parsed; only their sum can still fail. */
	if (63 - (int)(dc + worker + seq) < FW_LAYOUT_TIME_BITS_MIN) {
		fc_err(cmd,
		       "--datacenter-bits %u --worker-bits %u --sequence-bits %u: "
		       "leaves %d timestamp bits (need at least %d)",
		       dc, worker, seq, 63 - (int)(dc + worker + seq), FW_LAYOUT_TIME_BITS_MIN);
		return -1;
	}
	rc = fw_layout_init(&l, epoch, dc, worker, seq, fw_wall_ms());
	if (rc == FW_ELAYOUT_EPOCH) {
		fc_err(cmd, "--epoch %" PRIu64 ": more than %llu h in the future", epoch,
		       FW_LAYOUT_EPOCH_SLACK_MS / 3600000);
		return -1;
	}
	if (rc < 0) {
		fc_err(cmd, "layout %" PRIu64 " %u/%u/%u: %s", epoch, dc, worker, seq,
		       fw_strerror(rc));
		return -1;
	}
	*out = l;
	return 0;
}

void layout_args_help(FILE *f)
{
	struct fw_layout d;
	char iso[FW_ISO8601_LEN];

	fw_layout_default(&d);
	fprintf(f,
		"layout options:\n"
		"  --epoch MS            unix ms of timestamp 0 (default %" PRIu64 ", %s)\n"
		"  --datacenter-bits N   %d-%d (default %u)\n"
		"  --worker-bits N       %d-%d (default %u)\n"
		"  --sequence-bits N     %d-%d (default %u)\n"
		"                        the timestamp gets the rest of 63 bits, at least %d\n",
		d.epoch_ms, fw_format_iso8601(d.epoch_ms, iso), 0, FW_LAYOUT_DC_BITS_MAX, d.dc_bits,
		0, FW_LAYOUT_WORKER_BITS_MAX, d.worker_bits, FW_LAYOUT_SEQ_BITS_MIN,
		FW_LAYOUT_SEQ_BITS_MAX, d.seq_bits, FW_LAYOUT_TIME_BITS_MIN);
	for (size_t p = 0; p < FW_ARRAY_SIZE(presets); p++)
		fprintf(f, "  %-21s %s: epoch %" PRIu64 ", bits %u/%u/%u\n", presets[p].flag,
			presets[p].help, presets[p].epoch_ms, presets[p].dc_bits,
			presets[p].worker_bits, presets[p].seq_bits);
	fprintf(f, "  explicit flags override a preset\n");
}

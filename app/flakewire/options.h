/* SPDX-License-Identifier: BSD-3-Clause */
/* options.c: the command line (EAL arguments, then flakewire's after "--"). */
#pragma once

#include "fw_conf.h"

enum fwire_mode {
	FW_MODE_RUN = 0,
	FW_MODE_HELP,
	FW_MODE_PRINT_CONFIG,    /* the sample: every default */
	FW_MODE_PRINT_EFFECTIVE, /* --print-config with --config or --set: what would run */
	FW_MODE_CHECK_CONFIG,
	FW_MODE_VERSION,
};

/*
 * Splits argv: EAL arguments before "--", flakewire's after. Reads --config
 * and applies --set in order into @conf. Prints errors to stderr.
 * Returns 0 with *mode and *eal_argc set, or -1 on a usage error.
 */
int fwire_options_parse(int argc, char **argv, struct fw_conf *conf, enum fwire_mode *mode,
			int *eal_argc);
void fwire_options_usage(const char *prog);

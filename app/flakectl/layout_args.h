/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The layout flags every ID-reading subcommand shares:
 *   --epoch MS --datacenter-bits N --worker-bits N --sequence-bits N
 *   --twitter --discord
 * A preset sets all four; an explicit flag overrides it whatever the order.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "fw_layout.h"

struct layout_args {
	int preset; /* index into the preset table, -1 for none */
	uint64_t epoch_ms;
	uint64_t dc_bits;
	uint64_t worker_bits;
	uint64_t seq_bits;
	unsigned given; /* LAYOUT_ARG_* set explicitly */
};

/* Starts with nothing given: the result is the default layout. */
void layout_args_init(struct layout_args *la);

/*
 * Consumes argv[*i] (and its value) if it is a layout flag, range-checking
 * each width against the fw_layout.h limits.
 * Returns 1 if consumed, 0 if argv[*i] is not a layout flag, -1 on an error
 * already reported on stderr under the command name argv[0].
 */
int layout_args_parse(struct layout_args *la, int argc, char **argv, int *i);

/*
 * Builds the layout from the flags: defaults, then the preset, then explicit
 * flags; validated with fw_layout_init() against the current time.
 * Returns 0, or -1 on an error reported on stderr under @cmd.
 */
int layout_args_finish(const struct layout_args *la, const char *cmd, struct fw_layout *out);

/* Prints the help lines for the layout flags. */
void layout_args_help(FILE *f);

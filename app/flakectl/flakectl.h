/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakectl internals: the subcommands main() dispatches to and the helpers
 * they share for argument parsing and error reporting.
 *
 * A subcommand is called with argv[0] set to its own name and returns the
 * process exit status (FC_EXIT_*). Every usage error is reported as exactly
 * one line on stderr, "flakectl CMD: <what>: <why>", naming the argument.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FC_EXIT_OK    0
#define FC_EXIT_FAIL  1 /* the command ran and failed */
#define FC_EXIT_USAGE 2 /* bad arguments or input: nothing was done */

struct fc_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help; /* one line for 'flakectl --help' */
};

/* Subcommands, one file each (cmd_<name>.c). */
int cmd_decode(int argc, char **argv);
int cmd_layout(int argc, char **argv);
int cmd_bench_core(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_mark(int argc, char **argv);
int cmd_status(int argc, char **argv); /* exits 0-3 like a monitoring plugin */
int cmd_xdp(int argc, char **argv);    /* only with lib/xdp (FC_HAVE_XDP) */
int cmd_fleet(int argc, char **argv);  /* only with lib/fleet (FC_HAVE_FLEET) */

/* Prints "flakectl CMD: <message>\n" on stderr. */
void fc_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True for -h and --help. */
bool fc_is_help(const char *arg);

/* Reports an argument no option of CMD matches. Returns FC_EXIT_USAGE. */
int fc_unknown_arg(const char *cmd, const char *arg);

/* Outcome of fc_parse_u64(). */
enum fc_num {
	FC_NUM_OK,
	FC_NUM_EMPTY,
	FC_NUM_NOT_DECIMAL, /* anything but digits, including '+' and spaces */
	FC_NUM_NEGATIVE,    /* '-' followed by digits */
	FC_NUM_TOO_BIG,     /* digits only, but above 2^64-1 */
};

/* Parses a whole string as an unsigned decimal; *v is set only on FC_NUM_OK. */
enum fc_num fc_parse_u64(const char *s, uint64_t *v);

/*
 * Matches argv[*i] against option @name ("--epoch") given as "--epoch VALUE"
 * or "--epoch=VALUE". On a match *val points at the value and *i is moved to
 * the last argument consumed.
 * Returns 1 on a match, 0 when argv[*i] is something else, -1 when the value
 * is missing (reported on stderr under the command name argv[0]).
 */
int fc_opt_value(int argc, char **argv, int *i, const char *name, const char **val);

/*
 * fc_opt_value() for a decimal in [min, max]. Returns 1 with *v set, 0 when
 * argv[*i] is not @name, -1 on a missing, malformed or out-of-range value
 * (reported as "--name VALUE: <why> (allowed MIN-MAX)").
 */
int fc_opt_u64(int argc, char **argv, int *i, const char *name, uint64_t min, uint64_t max,
	       uint64_t *v);

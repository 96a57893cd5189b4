/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakectl, the flakewire operator tool. main() only dispatches: each
 * subcommand parses its own options and prints its own --help.
 */
#include <stdio.h>
#include <string.h>

#include "fw_common.h"
#include "flakectl.h"

static const struct fc_cmd commands[] = {
	{"decode", cmd_decode, "take IDs apart: time, datacenter, worker, sequence"},
	{"layout", cmd_layout, "capacity and lifetime of an ID layout"},
	{"bench-core", cmd_bench_core, "micro-benchmark of the ID generator and clock"},
	{"get", cmd_get, "get IDs from a responder"},
	{"info", cmd_info, "what a responder reports: layout, epoch, worker, clock state"},
	{"bench", cmd_bench, "load responders over UDP and check every ID"},
	{"mark", cmd_mark, "read or rewrite a responder's persisted high-water mark"},
#ifdef FC_HAVE_FLEET
	{"fleet", cmd_fleet,
	 "the fleet's worker-ID registry (ZooKeeper or etcd): ls, release, check, secure"},
#endif
	{"status", cmd_status,
	 "one screen from a responder's /metrics, exit 0/1/2/3 for monitoring"},
#ifdef FC_HAVE_XDP
	{"xdp", cmd_xdp, "show or remove the XDP program on an interface (AF_XDP mode)"},
#endif
};

static void usage(FILE *f)
{
	fprintf(f, "usage: flakectl COMMAND [OPTIONS] [ARGS]\n"
		   "       flakectl help COMMAND | COMMAND --help\n\ncommands:\n");
	for (size_t i = 0; i < FW_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
}

static const struct fc_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(commands); i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	}
	fprintf(stderr, "flakectl: unknown command '%s' (see flakectl --help)\n", name);
	return NULL;
}

int main(int argc, char **argv)
{
	static char help_opt[] = "--help";
	const struct fc_cmd *c;
	int rc;

	if (argc < 2 || fc_is_help(argv[1]) || (!strcmp(argv[1], "help") && argc == 2)) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? FC_EXIT_USAGE : FC_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		puts("flakectl " FC_VERSION);
		return FC_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		/* 'help CMD' is 'CMD --help', so each help text exists once. */
		argv[1] = argv[2];
		argv[2] = help_opt;
		argc = 3;
	}
	c = find_command(argv[1]);
	if (!c)
		return FC_EXIT_USAGE;
	rc = c->run(argc - 1, argv + 1);
	/* A full disk or closed pipe must not look like success. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("flakectl: stdout");
		return FC_EXIT_FAIL;
	}
	return rc;
}

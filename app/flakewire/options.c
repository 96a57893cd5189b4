/* SPDX-License-Identifier: BSD-3-Clause */
/* flakewire's own command line: everything after "--". */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include "options.h"
#include "log.h"
#include "fw_metrics.h"

void fwire_options_usage(const char *prog)
{
	size_t n = fw_conf_help(NULL, 0, 0) + 1;
	char *text = malloc(n);

	printf("Usage: %s [EAL options] -- [options]\n"
	       "       %s --help | --print-config\n"
	       "\n"
	       "The DPDK responder of flakewire: hands out 64-bit Snowflake IDs over UDP.\n"
	       "Every EAL lcore (the main one included) is a worker with its own queue on\n"
	       "every port and its own worker ID. Example (TAP, no hugepages, no NIC):\n"
	       "  %s -l 0 --no-huge --no-pci -m 256 --file-prefix fw -- \\\n"
	       "      --set state.file=/tmp/fw.mark\n"
	       "On a kernel interface shared with the kernel (AF_XDP, as root; only UDP to\n"
	       "[net] udp_port is taken, SSH/ARP/ICMP stay with the kernel):\n"
	       "  %s -l 0 --no-huge --no-pci -m 256 --file-prefix fw -- \\\n"
	       "      --set port0.mode=af_xdp --set port0.iface=eth0\n"
	       "\n"
	       "Options:\n"
	       "  -c, --config FILE     read settings from the INI file FILE\n"
	       "  -s, --set S.K=VALUE   override one setting (after --config), repeatable\n"
	       "      --check-config    validate the settings and exit\n"
	       "      --print-config    print the configuration in effect as an INI file and exit\n"
	       "                        (alone: the sample, every default; with --config or\n"
	       "                        --set: those applied)\n"
	       "      --version         print the version and exit\n"
	       "  -h, --help            this text\n"
	       "\n"
	       "Settings ([section] key, type and range, default):\n",
	       prog, prog, prog, prog);
	if (text) {
		fw_conf_help(text, n, 0);
		fputs(text, stdout);
		free(text);
	}
}

static bool app_only_flag(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "--print-config") ||
	       !strcmp(a, "--version");
}

int fwire_options_parse(int argc, char **argv, struct fw_conf *conf, enum fwire_mode *mode,
			int *eal_argc)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"set", required_argument, NULL, 's'},
		{"check-config", no_argument, NULL, 'C'},
		{"print-config", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	char err[512];
	int first = argc; /* first flakewire argument */
	int opt;

	*mode = FW_MODE_RUN;
	*eal_argc = argc;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			*eal_argc = i;
			first = i + 1;
			break;
		}
	}
	/* "flakewire --help" and "--print-config" need no EAL arguments */
	if (first == argc && argc > 1 && app_only_flag(argv[1])) {
		*eal_argc = 1;
		first = 1;
	}

	fw_conf_init(conf);
	/* getopt over a view of argv that starts at the program name */
	int n = argc - first + 1;
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return -1;
	v[0] = argv[0];
	for (int i = 1; i < n; i++)
		v[i] = argv[first + i - 1];
	optind = 1;
	opterr = 1;
	int rc = 0;
	bool given = false; /* --config or --set */
	/* --config first, so --set overrides it whatever the order */
	while ((opt = getopt_long(n, v, "c:s:h", longopts, NULL)) != -1) {
		given |= opt == 'c' || opt == 's';
		if (opt == 'c' && fw_conf_load(conf, optarg, 0, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			rc = -1;
			break;
		} else if (opt == '?') {
			rc = -1;
			break;
		}
	}
	optind = 1;
	opterr = 0;
	while (!rc && (opt = getopt_long(n, v, "c:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (fw_conf_set(conf, optarg, 0, err, sizeof(err))) {
				fprintf(stderr, "%s\n", err);
				rc = -1;
			}
			break;
		case 'C':
			*mode = FW_MODE_CHECK_CONFIG;
			break;
		case 'P':
			*mode = FW_MODE_PRINT_CONFIG;
			break;
		case 'h':
			*mode = FW_MODE_HELP;
			break;
		case 'V':
			*mode = FW_MODE_VERSION;
			break;
		default:
			break;
		}
	}
	if (!rc && optind < n) {
		fprintf(stderr, "flakewire: unexpected argument '%s' (see --help)\n", v[optind]);
		rc = -1;
	}
	free(v);
	/* getopt may be used again by EAL */
	optind = 1;
	opterr = 1;
	if (rc)
		return rc;
	if (*mode == FW_MODE_PRINT_CONFIG && given)
		*mode = FW_MODE_PRINT_EFFECTIVE;
	if (*mode == FW_MODE_RUN || *mode == FW_MODE_CHECK_CONFIG ||
	    *mode == FW_MODE_PRINT_EFFECTIVE) {
		if (fw_conf_check(conf, 0, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			return -1;
		}
		struct sockaddr_storage ss;
		size_t sl;
		if (conf->metrics.listen[0] &&
		    fw_metrics_parse_listen(conf->metrics.listen, &ss, sizeof(ss), &sl)) {
			fprintf(stderr,
				"config: [metrics] listen = %s: not ADDR:PORT (127.0.0.1:9842, "
				"[::1]:9842)\n",
				conf->metrics.listen);
			return -1;
		}
	}
	return 0;
}

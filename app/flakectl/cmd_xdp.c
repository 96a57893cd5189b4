/* SPDX-License-Identifier: BSD-3-Clause */
/* flakectl xdp: what XDP program an interface runs; remove flakewire's. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <arpa/inet.h>

#include "flakectl.h"
#include "fw_err.h"
#include "fw_xdp.h"

static void xdp_help(FILE *f)
{
	fprintf(f, "usage: flakectl xdp status IFACE\n"
		   "       flakectl xdp detach IFACE\n"
		   "\n"
		   "status: the XDP program attached to IFACE (mode, id, name, libxdp\n"
		   "dispatcher), whether it is flakewire's and, if so, the UDP port and the\n"
		   "addresses (IPv4, IPv6) it steers to AF_XDP sockets and its packet counters\n"
		   "(everything not steered goes to the kernel, counted by reason).\n"
		   "detach: removes flakewire's program from IFACE (e.g. after a crash); any\n"
		   "other program is left alone. Exit status: 0 removed, 1 error, 3 nothing\n"
		   "attached, 4 only a foreign program attached.\n"
		   "Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).\n");
}

static int xdp_status(const char *ifname)
{
	struct fw_xdp_info in;
	int rc = fw_xdp_status(ifname, &in);

	if (rc < 0) {
		fc_err("xdp", "status %s: %s", ifname, fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	printf("%s: mode %s", ifname, fw_xdp_mode_name(in.mode));
	if (in.mode == FW_XDP_MODE_NONE) {
		printf(", no XDP program\n");
		return FC_EXIT_OK;
	}
	printf(", program %s (id %" PRIu32 ")", in.prog_name, in.prog_id);
	if (in.dispatcher)
		printf(", libxdp dispatcher with %u program(s)", in.n_progs);
	printf("\nflakewire's  %s", in.ours ? "yes" : "no");
	if (in.ours)
		printf(" (id %" PRIu32 "), steering UDP port %u%s", in.own_prog_id, in.port,
		       in.port ? "" : " (none: not configured, all passed)");
	if (in.ours && (in.cfg.flags & FW_XDP_CFG_F_ADDRS)) {
		char a[INET6_ADDRSTRLEN];
		printf(", to");
		if (in.cfg.addr4)
			printf(" %s", inet_ntop(AF_INET, &in.cfg.addr4, a, sizeof(a)));
		for (unsigned int i = 0; i < in.cfg.n_addr6 && i < FW_XDP_ADDR6_MAX; i++)
			printf(" %s", inet_ntop(AF_INET6, in.cfg.addr6[i], a, sizeof(a)));
	}
	if (in.foreign)
		printf("\nforeign      %s (id %" PRIu32 ")", in.foreign_name, in.foreign_id);
	printf("\n");
	for (unsigned int i = 0; in.has_counters && i < FW_XDP_STAT_MAX; i++)
		printf("  %-19s %" PRIu64 "\n", fw_xdp_stat_name(i), in.counters[i]);
	return FC_EXIT_OK;
}

static int xdp_detach(const char *ifname)
{
	struct fw_xdp_info in;
	int rc = fw_xdp_detach_own(ifname);

	if (rc == 0) {
		printf("%s: detached flakewire's XDP program\n", ifname);
		return FC_EXIT_OK;
	}
	if (rc == -ENOENT) {
		printf("%s: no XDP program attached\n", ifname);
		return 3;
	}
	if (rc == FW_XDP_EFOREIGN && fw_xdp_status(ifname, &in) == 0) {
		fc_err("xdp", "detach %s: %s (id %" PRIu32 ") is not flakewire's: left attached",
		       ifname, in.foreign_name, in.foreign_id);
		return 4;
	}
	fc_err("xdp", "detach %s: %s", ifname, fw_strerror(rc));
	return FC_EXIT_FAIL;
}

int cmd_xdp(int argc, char **argv)
{
	if (argc >= 2 && fc_is_help(argv[1])) {
		xdp_help(stdout);
		return FC_EXIT_OK;
	}
	if (argc != 3 || (strcmp(argv[1], "status") && strcmp(argv[1], "detach"))) {
		fc_err("xdp",
		       "expected 'status IFACE' or 'detach IFACE' (see flakectl xdp --help)");
		return FC_EXIT_USAGE;
	}
	if (strlen(argv[2]) >= IF_NAMESIZE) {
		fc_err("xdp", "%s: interface name too long (at most %d characters)", argv[2],
		       IF_NAMESIZE - 1);
		return FC_EXIT_USAGE;
	}
	return strcmp(argv[1], "status") ? xdp_detach(argv[2]) : xdp_status(argv[2]);
}

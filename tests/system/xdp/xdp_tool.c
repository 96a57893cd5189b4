/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test driver for lib/xdp, shaped like the future `flakectl xdp`:
 *   xdp_tool status IFACE          what is attached, key=value per line
 *   xdp_tool detach IFACE          exit 0 removed, 2 foreign, 3 nothing attached
 *   xdp_tool set-port IFACE PORT
 *   xdp_tool set-addrs IFACE IPV4|- [IPV6...]  steer only to these addresses
 *   xdp_tool ifinfo IFACE [QUEUES] interface facts and the channel hint
 *   xdp_tool attach-libxdp IFACE OBJ...  attach through a libxdp dispatcher (skb mode)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>

#include <xdp/libxdp.h>

#include "fw_err.h"
#include "fw_xdp.h"

static int cmd_status(const char *ifname)
{
	struct fw_xdp_info info;
	int err = fw_xdp_status(ifname, &info);

	if (err < 0) {
		fprintf(stderr, "status %s: %s\n", ifname, fw_strerror(err));
		return 1;
	}
	printf("mode=%s\nprog_id=%" PRIu32 "\nprog_name=%s\ndispatcher=%d\nn_progs=%u\n",
	       fw_xdp_mode_name(info.mode), info.prog_id, info.prog_name, info.dispatcher,
	       info.n_progs);
	printf("ours=%d\nown_prog_id=%" PRIu32 "\nforeign=%d\nforeign_id=%" PRIu32
	       "\nforeign_name=%s\n",
	       info.ours, info.own_prog_id, info.foreign, info.foreign_id, info.foreign_name);
	if (info.ours) {
		char a[INET6_ADDRSTRLEN];
		printf("port=%u\nflags=%u\n", info.port, info.cfg.flags);
		inet_ntop(AF_INET, &info.cfg.addr4, a, sizeof(a));
		printf("addr4=%s\n", a);
		for (unsigned int i = 0; i < info.cfg.n_addr6 && i < FW_XDP_ADDR6_MAX; i++) {
			inet_ntop(AF_INET6, info.cfg.addr6[i], a, sizeof(a));
			printf("addr6=%s\n", a);
		}
	}
	if (info.has_counters)
		for (unsigned int i = 0; i < FW_XDP_STAT_MAX; i++)
			printf("counter.%s=%" PRIu64 "\n", fw_xdp_stat_name(i), info.counters[i]);
	return 0;
}

static int cmd_detach(const char *ifname)
{
	struct fw_xdp_info info;
	int err = fw_xdp_detach_own(ifname);

	if (err == 0) {
		printf("detached flakewire's program from %s\n", ifname);
		return 0;
	}
	if (err == FW_XDP_EFOREIGN) {
		if (fw_xdp_status(ifname, &info) == 0)
			printf("refusing: foreign program %s (id %" PRIu32 ") attached to %s\n",
			       info.foreign_name, info.foreign_id, ifname);
		return 2;
	}
	if (err == -ENOENT) {
		printf("nothing attached to %s\n", ifname);
		return 3;
	}
	fprintf(stderr, "detach %s: %s\n", ifname, fw_strerror(err));
	return 1;
}

static int cmd_set_port(const char *ifname, const char *port)
{
	long p = strtol(port, NULL, 10);
	int err;

	if (p < 0 || p > 65535) {
		fprintf(stderr, "bad port %s\n", port);
		return 1;
	}
	err = fw_xdp_set_port(ifname, (uint16_t)p);
	if (err < 0) {
		fprintf(stderr, "set-port %s: %s\n", ifname, fw_strerror(err));
		return err == FW_XDP_EFOREIGN ? 2 : 1;
	}
	return 0;
}

static int cmd_set_addrs(const char *ifname, int argc, char **argv)
{
	uint8_t a6[FW_XDP_ADDR6_MAX][16];
	uint32_t a4 = 0;
	int n = 0, err;

	if (argc < 1 || argc > 1 + FW_XDP_ADDR6_MAX ||
	    (strcmp(argv[0], "-") && inet_pton(AF_INET, argv[0], &a4) != 1)) {
		fprintf(stderr, "set-addrs %s: expected IPV4|- [IPV6...]\n", ifname);
		return 1;
	}
	for (int i = 1; i < argc; i++, n++)
		if (inet_pton(AF_INET6, argv[i], a6[n]) != 1) {
			fprintf(stderr, "bad IPv6 address %s\n", argv[i]);
			return 1;
		}
	err = fw_xdp_set_addrs(ifname, a4, (const uint8_t(*)[16])a6, (uint32_t)n);
	if (err < 0) {
		fprintf(stderr, "set-addrs %s: %s\n", ifname, fw_strerror(err));
		return err == FW_XDP_EFOREIGN ? 2 : 1;
	}
	return 0;
}

static int cmd_ifinfo(const char *ifname, const char *queues)
{
	struct fw_xdp_ifinfo in;
	char addr[INET_ADDRSTRLEN] = "", hint[128];
	uint32_t need = queues ? (uint32_t)strtoul(queues, NULL, 10) : 1;
	int err = fw_xdp_ifinfo(ifname, &in);

	if (err < 0) {
		fprintf(stderr, "ifinfo %s: %s\n", ifname, fw_strerror(err));
		return 1;
	}
	if (in.has_ipv4)
		inet_ntop(AF_INET, &in.ipv4, addr, sizeof(addr));
	printf("ifindex=%d\nup=%d\nrunning=%d\n", in.ifindex, in.up, in.running);
	if (in.has_mac)
		printf("mac=%02x:%02x:%02x:%02x:%02x:%02x\n", in.mac[0], in.mac[1], in.mac[2],
		       in.mac[3], in.mac[4], in.mac[5]);
	printf("ipv4=%s\nchannels_known=%d\ncombined=%u\nrx=%u\nmax_combined=%u\nmax_rx=%u\n"
	       "rx_queues=%u\n",
	       addr, in.channels_known, in.combined, in.rx, in.max_combined, in.max_rx,
	       in.rx_queues);
	for (uint32_t i = 0; i < in.n_ipv6; i++) {
		char a6[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, &in.ipv6[i], a6, sizeof(a6));
		printf("ipv6=%s\n", a6);
	}
	printf("fits=%d\n", fw_xdp_queues_fit(&in, 0, need) == 0);
	err = fw_xdp_channels_hint(hint, sizeof(hint), ifname, &in, need);
	printf("hint=%s\n", err >= 0 ? hint : fw_strerror(err));
	printf("bpffs=%d\n", fw_xdp_bpffs_check(NULL) == 0);
	return 0;
}

static int cmd_attach_libxdp(const char *ifname, int n, char **objs)
{
	struct xdp_program *progs[8];
	int ifindex = (int)if_nametoindex(ifname), err = 0, i;

	if (ifindex == 0 || n < 1 || n > 8)
		return 1;
	for (i = 0; i < n; i++) {
		progs[i] = xdp_program__open_file(objs[i], "xdp", NULL);
		err = (int)libxdp_get_error(progs[i]);
		if (err) {
			fprintf(stderr, "open %s: %d\n", objs[i], err);
			n = i;
			goto out;
		}
	}
	err = xdp_program__attach_multi(progs, (size_t)n, ifindex, XDP_MODE_SKB, 0);
	if (err)
		fprintf(stderr, "attach: %d\n", err);
out:
	for (i = 0; i < n; i++)
		xdp_program__close(progs[i]);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "status") == 0)
		return cmd_status(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "detach") == 0)
		return cmd_detach(argv[2]);
	if (argc >= 4 && strcmp(argv[1], "set-port") == 0)
		return cmd_set_port(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "set-addrs") == 0)
		return cmd_set_addrs(argv[2], argc - 3, argv + 3);
	if (argc >= 3 && strcmp(argv[1], "ifinfo") == 0)
		return cmd_ifinfo(argv[2], argc >= 4 ? argv[3] : NULL);
	if (argc >= 4 && strcmp(argv[1], "attach-libxdp") == 0)
		return cmd_attach_libxdp(argv[2], argc - 3, argv + 3);
	fprintf(stderr,
		"usage: %s status|detach|set-port|set-addrs|ifinfo|attach-libxdp IFACE ...\n",
		argv[0]);
	return 1;
}

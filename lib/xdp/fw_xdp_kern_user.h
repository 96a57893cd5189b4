/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Constants shared by the XDP program (flakewire.bpf.c) and its userspace
 * loader (prog.c): names the loader looks up in the kernel, the layout of the
 * configuration map and the counter indices.
 *
 * Included from BPF C and from userspace C, so it uses only <linux/types.h>.
 *
 * Manual: doc/afxdp.md.
 */
#pragma once

#include <linux/types.h>

/*
 * Name of the XDP entry point. The kernel keeps the first 15 characters of
 * it as the program name, which is how the loader recognises flakewire's own
 * program on an interface: keep it at most 15 characters.
 */
#define FW_XDP_PROG_NAME "fw_xdp_redirect"

/* ELF section of the program, for `ip link set dev X xdp obj F sec xdp`. */
#define FW_XDP_SECTION "xdp"

/*
 * XSKMAP the net_af_xdp PMD of DPDK 22.11 fills when it loads the object
 * named by its xdp_prog= argument: the name is fixed by the PMD.
 */
#define FW_XDP_XSKS_MAP "xsks_map"

/* Highest receive queue index + 1 the program can steer to an AF_XDP socket. */
#define FW_XDP_MAX_QUEUES 64

/* 1-entry BPF_MAP_TYPE_ARRAY holding struct fw_xdp_cfg at key 0. */
#define FW_XDP_CFG_MAP "fw_cfg"

/* BPF_MAP_TYPE_PERCPU_ARRAY of __u64 packet counters, indexed by enum fw_xdp_stat. */
#define FW_XDP_STATS_MAP "fw_stats"

/* Most IPv6 addresses the program steers to (flakewire's [portN] address6 limit). */
#define FW_XDP_ADDR6_MAX 4

/* fw_xdp_cfg.flags: steer only datagrams to addr4 / addr6[] (else to any address). */
#define FW_XDP_CFG_F_ADDRS 0x1u

/*
 * Runtime configuration of the program. Until userspace writes a non-zero
 * port, every packet is passed to the kernel (FW_XDP_STAT_UNCONF).
 *
 * The program steers exactly what flakewire answers and passes the rest to
 * the kernel: unicast frames, IPv4 without options, not fragmented, lengths
 * consistent, or IPv6 whose next header is UDP (no extension header) with a
 * non-zero checksum; and with FW_XDP_CFG_F_ADDRS, only to the interface's
 * addresses written here (addr4 0 and n_addr6 0: that family is not steered).
 * Such a datagram from a martian source (loopback, unspecified, multicast,
 * broadcast, one of the addresses here, a group source MAC) is dropped.
 */
struct fw_xdp_cfg {
	__u16 port;    /* UDP destination port to steer, host byte order; 0: none */
	__u16 n_addr6; /* valid entries of addr6, at most FW_XDP_ADDR6_MAX */
	__u32 flags;   /* FW_XDP_CFG_F_* */
	__u32 addr4;   /* IPv4 address, network order */
	__u8 addr6[FW_XDP_ADDR6_MAX][16];
};

/* What the program did with a packet; one counter each. */
enum fw_xdp_stat {
	FW_XDP_STAT_REDIRECT = 0, /* handed to the AF_XDP socket of its queue */
	FW_XDP_STAT_NO_XSK,       /* matched the port, no socket on its queue: passed */
	FW_XDP_STAT_NOT_IP,       /* neither IPv4 nor IPv6: ARP, VLAN-tagged, other EtherTypes */
	FW_XDP_STAT_NOT_UDP,      /* IP but not UDP: ICMP, ICMPv6 (NDP), TCP, ... */
	FW_XDP_STAT_FRAGMENT,     /* IPv4 fragment (MF or offset), IPv6 fragment header */
	FW_XDP_STAT_OTHER_PORT,   /* UDP to another port */
	FW_XDP_STAT_MALFORMED,    /* truncated or inconsistent headers, IPv6 UDP checksum 0 */
	FW_XDP_STAT_UNCONF,       /* no port configured yet */
	FW_XDP_STAT_IP_OPTIONS,   /* IPv4 header with options */
	FW_XDP_STAT_NOT_OURS,     /* not to the interface's address, or to a group MAC */
	FW_XDP_STAT_IPV6_EXT,     /* IPv6 extension header (not a fragment) */
	/*
	 * A datagram flakewire would answer but for its martian source:
	 * dropped, not passed (flakewire.bpf.c says why); IPv4-mapped IPv6
	 * under the IPv4 reason. Keep them consecutive, MAC last.
	 */
	FW_XDP_STAT_MARTIAN_LOOPBACK,    /* 127.0.0.0/8, ::1 */
	FW_XDP_STAT_MARTIAN_UNSPECIFIED, /* 0.0.0.0/8, :: */
	FW_XDP_STAT_MARTIAN_MULTICAST,   /* 224.0.0.0/4, ff00::/8 */
	FW_XDP_STAT_MARTIAN_BROADCAST,   /* 255.255.255.255 */
	FW_XDP_STAT_MARTIAN_SELF,        /* the interface's own address (addr4, addr6[]) */
	FW_XDP_STAT_MARTIAN_MAC,         /* a multicast or broadcast source MAC */
	FW_XDP_STAT_MAX
};

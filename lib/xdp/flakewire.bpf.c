// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * flakewire's XDP program: steers the UDP datagrams flakewire answers (IPv4
 * and IPv6, to its port and, once configured, to the interface's addresses)
 * to the AF_XDP socket of the receive queue they arrived on, and passes
 * everything else to the kernel untouched: ARP, neighbour discovery, ICMP,
 * TCP, other ports, and every frame flakewire would drop (IPv4 options,
 * fragments, IPv6 extension headers, inconsistent lengths, another
 * destination address, a group MAC, an IPv6 UDP checksum of 0), so the
 * kernel sees them as it would without flakewire. The exception: a
 * datagram flakewire would answer but for its martian source (loopback,
 * unspecified, multicast, broadcast, the interface's own addresses,
 * IPv4-mapped forms of those, a group source MAC) is dropped here, counted
 * by reason. It is addressed to flakewire's port, which no kernel socket
 * should serve, and the kernel does not drop every kind itself: Linux 6.1
 * delivers to a socket on the port the ones from a group source MAC, from
 * ::, from its own IPv6 address and from any IPv4-mapped source
 * (tests/system/afxdp measures it), and would otherwise answer a closed
 * port with an ICMP error towards a forged source. Checksums are not
 * verified here (that would cost a pass over every payload): a datagram
 * with a bad one is steered, and flakewire counts and drops it, as the
 * kernel would.
 *
 * Loaded either by DPDK's net_af_xdp PMD (devarg xdp_prog=), which uses the
 * first program of this object and fills xsks_map, or by `ip link`. The port
 * and addresses live in the fw_cfg map so they can be set after the PMD
 * loaded the object.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fw_xdp_kern_user.h"

/* Fragment bits of iphdr.frag_off (net/ip.h is not uapi). */
#define FW_IP_MF     0x2000
#define FW_IP_OFFSET 0x1fff

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, FW_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_xdp_cfg);
} fw_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_XDP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fw_stats SEC(".maps");

static __always_inline void fw_count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&fw_stats, &stat);

	/* Per-CPU slot: no other CPU writes it, so no atomic is needed. */
	if (v)
		*v += 1;
}

/* UDP header checks common to both families; @len is the IP payload length. */
static __always_inline __u32 fw_udp(struct udphdr *udp, void *data_end, __u32 len,
				    const struct fw_xdp_cfg *cfg)
{
	if ((void *)(udp + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (bpf_ntohs(udp->len) != len)
		return FW_XDP_STAT_MALFORMED;
	if (udp->dest != bpf_htons(cfg->port))
		return FW_XDP_STAT_OTHER_PORT;
	return FW_XDP_STAT_REDIRECT;
}

/* Why the IPv4 source @src (network order) is a martian, or FW_XDP_STAT_REDIRECT. */
static __always_inline __u32 fw_martian4(__u32 src, const struct fw_xdp_cfg *cfg)
{
	__u32 h = bpf_ntohl(src);

	if ((h >> 24) == 127)
		return FW_XDP_STAT_MARTIAN_LOOPBACK;
	if ((h >> 24) == 0)
		return FW_XDP_STAT_MARTIAN_UNSPECIFIED;
	if ((h >> 28) == 0xe)
		return FW_XDP_STAT_MARTIAN_MULTICAST;
	if (h == 0xffffffff)
		return FW_XDP_STAT_MARTIAN_BROADCAST;
	if (cfg->addr4 && src == cfg->addr4)
		return FW_XDP_STAT_MARTIAN_SELF;
	return FW_XDP_STAT_REDIRECT;
}

static __always_inline __u32 fw_ipv4(struct iphdr *iph, void *data_end,
				     const struct fw_xdp_cfg *cfg, int group)
{
	__u32 tot;

	if ((void *)(iph + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (iph->version != 4 || iph->ihl < 5)
		return FW_XDP_STAT_MALFORMED;
	if (iph->ihl != 5)
		return FW_XDP_STAT_IP_OPTIONS;
	if (iph->protocol != IPPROTO_UDP)
		return FW_XDP_STAT_NOT_UDP;
	/* Only the first fragment has a UDP header; the kernel reassembles. */
	if (iph->frag_off & bpf_htons(FW_IP_MF | FW_IP_OFFSET))
		return FW_XDP_STAT_FRAGMENT;
	tot = bpf_ntohs(iph->tot_len);
	if (tot < sizeof(*iph) + sizeof(struct udphdr) || (void *)iph + tot > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (group ||
	    ((cfg->flags & FW_XDP_CFG_F_ADDRS) && (cfg->addr4 == 0 || iph->daddr != cfg->addr4)))
		return FW_XDP_STAT_NOT_OURS;
	__u32 stat = fw_udp((void *)(iph + 1), data_end, tot - sizeof(*iph), cfg);
	if (stat != FW_XDP_STAT_REDIRECT)
		return stat;
	return fw_martian4(iph->saddr, cfg);
}

static __always_inline int fw_addr6_eq(const __u8 *a, const __u8 *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

/* The same for the IPv6 source @a: ::1, ::, ff00::/8, ours, IPv4-mapped IPv4 martians. */
static __always_inline __u32 fw_martian6(const __u8 *a, const struct fw_xdp_cfg *cfg)
{
	const __u32 *w = (const __u32 *)a;

	if (a[0] == 0xff)
		return FW_XDP_STAT_MARTIAN_MULTICAST;
	if (w[0] == 0 && w[1] == 0) {
		if (w[2] == 0 && w[3] == bpf_htonl(1))
			return FW_XDP_STAT_MARTIAN_LOOPBACK;
		if (w[2] == 0 && w[3] == 0)
			return FW_XDP_STAT_MARTIAN_UNSPECIFIED;
		if (w[2] == bpf_htonl(0xffff))
			return fw_martian4(w[3], cfg);
	}
#pragma unroll
	for (int i = 0; i < FW_XDP_ADDR6_MAX; i++)
		if (i < cfg->n_addr6 && fw_addr6_eq(a, cfg->addr6[i]))
			return FW_XDP_STAT_MARTIAN_SELF;
	return FW_XDP_STAT_REDIRECT;
}

static __always_inline __u32 fw_ipv6(struct ipv6hdr *ip6, void *data_end,
				     const struct fw_xdp_cfg *cfg, int group)
{
	struct udphdr *udp = (void *)(ip6 + 1);
	__u32 plen;

	if ((void *)(ip6 + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (ip6->version != 6)
		return FW_XDP_STAT_MALFORMED;
	switch (ip6->nexthdr) {
	case IPPROTO_UDP:
		break;
	case IPPROTO_FRAGMENT:
		return FW_XDP_STAT_FRAGMENT;
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_ESP:
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
		return FW_XDP_STAT_IPV6_EXT;
	default:
		return FW_XDP_STAT_NOT_UDP; /* ICMPv6 with NDP stays with the kernel */
	}
	plen = bpf_ntohs(ip6->payload_len);
	if (plen < sizeof(*udp) || (void *)(ip6 + 1) + plen > data_end)
		return FW_XDP_STAT_MALFORMED;
	if ((void *)(udp + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (udp->check == 0) /* mandatory in IPv6: flakewire drops it */
		return FW_XDP_STAT_MALFORMED;
	if (group)
		return FW_XDP_STAT_NOT_OURS;
	if (cfg->flags & FW_XDP_CFG_F_ADDRS) {
		int ours = 0;

#pragma unroll
		for (int i = 0; i < FW_XDP_ADDR6_MAX; i++)
			if (i < cfg->n_addr6 &&
			    fw_addr6_eq(ip6->daddr.in6_u.u6_addr8, cfg->addr6[i]))
				ours = 1;
		if (!ours)
			return FW_XDP_STAT_NOT_OURS;
	}
	__u32 stat = fw_udp(udp, data_end, plen, cfg);
	if (stat != FW_XDP_STAT_REDIRECT)
		return stat;
	return fw_martian6(ip6->saddr.in6_u.u6_addr8, cfg);
}

static __always_inline __u32 fw_classify(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct fw_xdp_cfg *cfg;
	__u32 key = 0;

	if ((void *)(eth + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	/* VLAN tags are not looked into: flakewire serves untagged traffic. */
	if (eth->h_proto != bpf_htons(ETH_P_IP) && eth->h_proto != bpf_htons(ETH_P_IPV6))
		return FW_XDP_STAT_NOT_IP;
	cfg = bpf_map_lookup_elem(&fw_cfg, &key);
	if (!cfg || cfg->port == 0)
		return FW_XDP_STAT_UNCONF;
	/* flakewire answers frames to its own MAC only: groups go to the kernel */
	__u32 stat = eth->h_proto == bpf_htons(ETH_P_IP)
			     ? fw_ipv4((void *)(eth + 1), data_end, cfg, eth->h_dest[0] & 1)
			     : fw_ipv6((void *)(eth + 1), data_end, cfg, eth->h_dest[0] & 1);
	/* ... and from a unicast one: a reply never goes to a group */
	if ((stat == FW_XDP_STAT_REDIRECT ||
	     (stat >= FW_XDP_STAT_MARTIAN_LOOPBACK && stat <= FW_XDP_STAT_MARTIAN_SELF)) &&
	    (eth->h_source[0] & 1))
		return FW_XDP_STAT_MARTIAN_MAC;
	return stat;
}

SEC("xdp")
int fw_xdp_redirect(struct xdp_md *ctx)
{
	__u32 stat = fw_classify(ctx);
	long act;

	if (stat != FW_XDP_STAT_REDIRECT) {
		fw_count(stat);
		if (stat >= FW_XDP_STAT_MARTIAN_LOOPBACK && stat <= FW_XDP_STAT_MARTIAN_MAC)
			return XDP_DROP;
		return XDP_PASS;
	}
	/*
	 * The lower bits of flags are the action when no socket is bound to
	 * this queue: pass to the kernel rather than drop.
	 */
	act = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
	fw_count(act == XDP_REDIRECT ? FW_XDP_STAT_REDIRECT : FW_XDP_STAT_NO_XSK);
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";

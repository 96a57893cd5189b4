// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * flakewire's XDP program: steers IPv4 UDP datagrams for flakewire's port to
 * the AF_XDP socket of the receive queue they arrived on and passes
 * everything else to the kernel untouched.
 *
 * Loaded either by DPDK's net_af_xdp PMD (devarg xdp_prog=), which uses the
 * first program of this object and fills xsks_map, or by `ip link`. The port
 * lives in the fw_cfg map so it can be set after the PMD loaded the object.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
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

static __always_inline __u32 fw_classify(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph;
	struct udphdr *udp;
	struct fw_xdp_cfg *cfg;
	__u32 key = 0, ihl_bytes;

	if ((void *)(eth + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	/* VLAN tags are not looked into: flakewire serves untagged traffic. */
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return FW_XDP_STAT_NOT_IPV4;

	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (iph->version != 4 || iph->ihl < 5)
		return FW_XDP_STAT_MALFORMED;
	ihl_bytes = iph->ihl * 4;
	if ((void *)iph + ihl_bytes > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (iph->protocol != IPPROTO_UDP)
		return FW_XDP_STAT_NOT_UDP;
	/* Only the first fragment has a UDP header; the kernel reassembles. */
	if (iph->frag_off & bpf_htons(FW_IP_MF | FW_IP_OFFSET))
		return FW_XDP_STAT_FRAGMENT;
	if (bpf_ntohs(iph->tot_len) < ihl_bytes + sizeof(*udp))
		return FW_XDP_STAT_MALFORMED;

	udp = (void *)iph + ihl_bytes;
	if ((void *)(udp + 1) > data_end)
		return FW_XDP_STAT_MALFORMED;
	if (bpf_ntohs(udp->len) < sizeof(*udp))
		return FW_XDP_STAT_MALFORMED;

	cfg = bpf_map_lookup_elem(&fw_cfg, &key);
	if (!cfg || cfg->port == 0)
		return FW_XDP_STAT_UNCONF;
	if (udp->dest != bpf_htons(cfg->port))
		return FW_XDP_STAT_OTHER_PORT;
	return FW_XDP_STAT_REDIRECT;
}

SEC("xdp")
int fw_xdp_redirect(struct xdp_md *ctx)
{
	__u32 stat = fw_classify(ctx);
	long act;

	if (stat != FW_XDP_STAT_REDIRECT) {
		fw_count(stat);
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

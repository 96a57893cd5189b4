/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classifies one frame and answers it in place: ARP requests for our
 * address, ICMP echo requests, flakewire requests on our UDP port. Every
 * read is bounded by the segment's data_len; multi-segment frames are
 * dropped (requests are small). Checksums: swapping addresses and ports
 * leaves a one's-complement sum unchanged, so the IPv4 and ICMP headers are
 * updated incrementally (RFC 1624); the UDP payload is new, so its checksum
 * is offloaded when the port can, computed in software otherwise.
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "fw_app.h"

const char *const fw_drop_names[FW_DROP_COUNT] = {
	[FW_DROP_NOT_IP] = "not_ip",      [FW_DROP_NOT_US] = "not_us",
	[FW_DROP_IP_OPTS] = "ip_options", [FW_DROP_FRAG] = "fragment",
	[FW_DROP_BAD_CSUM] = "bad_cksum", [FW_DROP_BAD_LEN] = "bad_length",
	[FW_DROP_PROTO] = "ip_proto",     [FW_DROP_PORT] = "udp_port",
	[FW_DROP_WIRE] = "wire",
};

#define L2 ((uint16_t)sizeof(struct rte_ether_hdr))
#define L3 ((uint16_t)sizeof(struct rte_ipv4_hdr))
#define L4 ((uint16_t)sizeof(struct rte_udp_hdr))

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), all values as stored (network order). */
static inline uint16_t cksum_adjust(uint16_t hc, uint16_t old, uint16_t new)
{
	uint32_t s = (uint16_t)~hc + (uint32_t)(uint16_t)~old + new;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static inline bool drop(struct fw_lcore *lc, enum fw_drop why)
{
	lc->st.drop[why]++;
	return false;
}

static inline void swap_eth(struct rte_ether_hdr *eth, const struct fw_port *port)
{
	eth->dst_addr = eth->src_addr;
	eth->src_addr = port->mac;
}

static inline void swap_ip(struct rte_ipv4_hdr *ip)
{
	uint32_t a = ip->src_addr;

	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
}

static bool answer_arp(struct fw_lcore *lc, const struct fw_port *port, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (m->data_len < L2 + sizeof(*arp))
		return drop(lc, FW_DROP_BAD_LEN);
	if (arp->arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4 || arp->arp_opcode != RTE_BE16(RTE_ARP_OP_REQUEST) ||
	    arp->arp_data.arp_tip != port->addr_be)
		return drop(lc, FW_DROP_NOT_US);

	arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
	arp->arp_data.arp_tha = arp->arp_data.arp_sha;
	arp->arp_data.arp_tip = arp->arp_data.arp_sip;
	arp->arp_data.arp_sha = port->mac;
	arp->arp_data.arp_sip = port->addr_be;
	eth->dst_addr = arp->arp_data.arp_tha;
	eth->src_addr = port->mac;
	lc->st.arp++;
	return true;
}

static bool answer_icmp(struct fw_lcore *lc, const struct fw_port *port, struct rte_mbuf *m,
			struct rte_ipv4_hdr *ip, uint16_t ip_len)
{
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(ip + 1);

	if (ip_len < L3 + sizeof(*icmp))
		return drop(lc, FW_DROP_BAD_LEN);
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0)
		return drop(lc, FW_DROP_PROTO);
	/* type 8 -> 0 in the first 16-bit word (type, code) */
	uint16_t old = *(uint16_t *)icmp;
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = cksum_adjust(icmp->icmp_cksum, old, *(uint16_t *)icmp);
	swap_eth(rte_pktmbuf_mtod(m, struct rte_ether_hdr *), port);
	swap_ip(ip);
	rte_pktmbuf_data_len(m) = (uint16_t)(L2 + ip_len); /* trim Ethernet padding */
	rte_pktmbuf_pkt_len(m) = rte_pktmbuf_data_len(m);
	lc->st.icmp++;
	return true;
}

static bool answer_udp(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
		       struct rte_mbuf *m, struct rte_ipv4_hdr *ip, uint16_t ip_len, uint64_t now)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	if (ip_len < L3 + L4 || rte_be_to_cpu_16(udp->dgram_len) != ip_len - L3)
		return drop(lc, FW_DROP_BAD_LEN);
	if (udp->dst_port != rte_cpu_to_be_16((uint16_t)app->conf.net.udp_port))
		return drop(lc, FW_DROP_PORT);
	if (udp->dgram_cksum && __rte_ipv4_udptcp_cksum(ip, udp) != 0xffff)
		return drop(lc, FW_DROP_BAD_CSUM);

	uint8_t *payload = (uint8_t *)(udp + 1);
	size_t len = ip_len - L3 - L4;
	size_t cap = (size_t)(m->buf_len - m->data_off) - (L2 + L3 + L4);
	bool trusted = fw_conf_trusted(&app->conf.net.trusted, rte_be_to_cpu_32(ip->src_addr));
	int n = fw_serve_answer(&lc->serve, now, payload, len, cap, trusted);
	if (n < 0)
		return drop(lc, FW_DROP_WIRE);

	uint16_t old_len = ip->total_length;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(L3 + L4 + n));
	swap_eth(rte_pktmbuf_mtod(m, struct rte_ether_hdr *), port);
	swap_ip(ip);
	uint16_t sport = udp->src_port;
	udp->src_port = udp->dst_port;
	udp->dst_port = sport;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(L4 + n));
	rte_pktmbuf_data_len(m) = (uint16_t)(L2 + L3 + L4 + n);
	rte_pktmbuf_pkt_len(m) = rte_pktmbuf_data_len(m);
	if (port->tx_cksum) {
		m->l2_len = L2;
		m->l3_len = L3;
		m->ol_flags |=
			RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
		ip->hdr_checksum = 0;
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	} else {
		ip->hdr_checksum = cksum_adjust(ip->hdr_checksum, old_len, ip->total_length);
		udp->dgram_cksum = 0;
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	}
	lc->st.udp++;
	return true;
}

bool fw_pkt_answer(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
		   struct rte_mbuf *m, uint64_t now)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);

	if (m->nb_segs != 1 || m->data_len < L2)
		return drop(lc, FW_DROP_BAD_LEN);
	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_ARP))
		return answer_arp(lc, port, m);
	if (eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4))
		return drop(lc, FW_DROP_NOT_IP);
	if (!rte_is_same_ether_addr(&eth->dst_addr, &port->mac))
		return drop(lc, FW_DROP_NOT_US);
	if (m->data_len < L2 + L3)
		return drop(lc, FW_DROP_BAD_LEN);

	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	if ((ip->version_ihl >> 4) != 4)
		return drop(lc, FW_DROP_BAD_LEN);
	if (ip->version_ihl != RTE_IPV4_VHL_DEF)
		return drop(lc, FW_DROP_IP_OPTS);
	uint16_t ip_len = rte_be_to_cpu_16(ip->total_length);
	if (ip_len < L3 || ip_len > m->data_len - L2)
		return drop(lc, FW_DROP_BAD_LEN);
	if (ip->dst_addr != port->addr_be)
		return drop(lc, FW_DROP_NOT_US);
	if (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return drop(lc, FW_DROP_FRAG);
	if (rte_raw_cksum(ip, L3) != 0xffff)
		return drop(lc, FW_DROP_BAD_CSUM);

	switch (ip->next_proto_id) {
	case IPPROTO_UDP:
		return answer_udp(app, lc, port, m, ip, ip_len, now);
	case IPPROTO_ICMP:
		return answer_icmp(lc, port, m, ip, ip_len);
	default:
		return drop(lc, FW_DROP_PROTO);
	}
}

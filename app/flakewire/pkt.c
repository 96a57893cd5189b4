/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classifies one frame and answers it in place: ARP requests for our
 * address, ICMP echo requests, flakewire requests on our UDP port. Every
 * read is bounded by the segment's data_len; multi-segment frames are
 * dropped (requests are small). Checksums: swapping addresses and ports
 * leaves a one's-complement sum unchanged, so the IPv4 and ICMP headers are
 * updated incrementally (RFC 1624); the UDP payload is new, so its checksum
 * is offloaded when the port can, computed in software otherwise.
 *
 * Hostile traffic: IPv4 from outside [net] allow and UDP from reflector
 * source ports are dropped before any checksum over the payload; untrusted
 * sources over [net] rate are dropped or, every rate_slip-th, answered with
 * a 24-byte RETRY_AFTER. No reply to an untrusted source is larger than its
 * request (fw_serve_answer's budget; the slip reply is a bare header).
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
	[FW_DROP_NOT_IP] = "not_ip",
	[FW_DROP_NOT_US] = "not_us",
	[FW_DROP_IP_OPTS] = "ip_options",
	[FW_DROP_FRAG] = "fragment",
	[FW_DROP_BAD_CSUM] = "bad_cksum",
	[FW_DROP_BAD_LEN] = "bad_length",
	[FW_DROP_PROTO] = "ip_proto",
	[FW_DROP_PORT] = "udp_port",
	[FW_DROP_WIRE] = "wire",
	[FW_DROP_SOURCE] = "source",
	[FW_DROP_REFLECTOR] = "reflector_port",
	[FW_DROP_RATE] = "rate_limited",
	[FW_DROP_IPV6_EXT] = "ipv6_ext",
	[FW_DROP_ND] = "nd_invalid",
	[FW_DROP_UDP6_NO_CKSUM] = "udp6_zero_cksum",
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

/*
 * One's-complement sum of @len bytes added to @sum, 32 bits at a time into a
 * 64-bit accumulator, folded to 16 bits (RFC 1071 2(C)): the value of DPDK
 * 22.11's rte_raw_cksum, whose loop takes 16 bits per step, in about a third
 * of the instructions (the checksums were ~28 % of a request's instructions).
 */
static inline uint16_t cksum_sum(const void *buf, size_t len, uint64_t sum)
{
	const uint8_t *p = buf;
	uint32_t w;
	uint16_t h = 0;

	for (; len >= 4; len -= 4, p += 4) {
		memcpy(&w, p, 4);
		sum += w;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		sum += h;
		p += 2;
		len -= 2;
	}
	if (len) {
		h = 0;
		memcpy(&h, p, 1);
		sum += h;
	}
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* UDP sum over the pseudo header and @l4_len bytes at @udp (0xffff: checksum valid). */
static inline uint16_t udp_sum(const struct rte_ipv4_hdr *ip, const void *udp, uint16_t l4_len)
{
	uint64_t ph = (uint64_t)ip->src_addr + ip->dst_addr + RTE_BE16(IPPROTO_UDP) +
		      rte_cpu_to_be_16(l4_len);

	return cksum_sum(udp, l4_len, ph);
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
	/* The reply goes to the sender's hardware address: never to a group. */
	if (!rte_is_unicast_ether_addr(&arp->arp_data.arp_sha))
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

/* Turns the request in place into its reply of @n payload bytes and fixes the checksums. */
static bool send_udp(struct fw_lcore *lc, const struct fw_port *port, struct rte_mbuf *m,
		     struct rte_ipv4_hdr *ip, struct rte_udp_hdr *udp, int n)
{
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
		uint16_t c = (uint16_t)~udp_sum(ip, udp, (uint16_t)(L4 + n));
		udp->dgram_cksum = c ? c : 0xffff; /* 0 means "no checksum" */
	}
	lc->st.udp++;
	return true;
}

/* The IPv4 header checksum: the device's verdict when it gave one, else software. */
static inline bool ip_cksum_ok(const struct rte_mbuf *m, const struct rte_ipv4_hdr *ip)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	if (f == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		return true;
	if (f == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return false;
	return cksum_sum(ip, L3, 0) == 0xffff;
}

/* The UDP checksum (0: none sent), the same way. */
static inline bool l4_cksum_ok(const struct rte_mbuf *m, const struct rte_ipv4_hdr *ip,
			       const struct rte_udp_hdr *udp, uint16_t ip_len)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	if (udp->dgram_cksum == 0 || f == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return true;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return false;
	return udp_sum(ip, udp, (uint16_t)(ip_len - L3)) == 0xffff;
}

/*
 * The slipped answer to a rate-limited request: its header with status
 * RETRY_AFTER, 24 bytes, never more than the request. Returns the length,
 * or -1 when the datagram is no request to answer (then it is dropped).
 */
static int slip_reply(const struct fw_lcore *lc, uint8_t *payload, size_t len, uint32_t retry_us)
{
	struct fw_wire_hdr h;

	if (fw_wire_parse_request(payload, len, &h) != 0)
		return -1;
	h.status = FW_WIRE_ST_RETRY_AFTER;
	h.flags = 0;
	h.retry_after_us = retry_us;
	h.datacenter = (uint16_t)lc->serve.gen.cfg.datacenter;
	h.worker = (uint16_t)lc->serve.gen.cfg.worker;
	return fw_wire_write_status(payload, len, &h);
}

static bool answer_udp(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
		       struct rte_mbuf *m, struct rte_ipv4_hdr *ip, uint16_t ip_len, uint64_t now)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	if (ip_len < L3 + L4 || rte_be_to_cpu_16(udp->dgram_len) != ip_len - L3)
		return drop(lc, FW_DROP_BAD_LEN);
	if (udp->dst_port != rte_cpu_to_be_16((uint16_t)app->conf.net.udp_port))
		return drop(lc, FW_DROP_PORT);
	if (FW_UNLIKELY(fw_policy_reflector(&app->srcpol, rte_be_to_cpu_16(udp->src_port))))
		return drop(lc, FW_DROP_REFLECTOR);
	if (!l4_cksum_ok(m, ip, udp, ip_len))
		return drop(lc, FW_DROP_BAD_CSUM);

	uint8_t *payload = (uint8_t *)(udp + 1);
	size_t len = ip_len - L3 - L4;
	uint32_t src = rte_be_to_cpu_32(ip->src_addr);
	bool trusted = fw_conf_trusted(&app->conf.net.trusted, src);
	int n;

	if (lc->rate && !trusted) {
		uint32_t retry_us = 0;
		enum fw_rate_verdict v = fw_rate_check(lc->rate, src, lc->tsc, &retry_us);
		if (FW_UNLIKELY(v != FW_RATE_PASS)) {
			lc->st.rate_limited++;
			if (v == FW_RATE_DROP || (n = slip_reply(lc, payload, len, retry_us)) < 0)
				return drop(lc, FW_DROP_RATE);
			lc->st.slipped++;
			return send_udp(lc, port, m, ip, udp, n);
		}
	}

	size_t room = (size_t)(m->buf_len - m->data_off) - (L2 + L3 + L4);
	size_t cap = FW_MIN(room, (size_t)app->conf.net.max_reply_bytes);
	n = fw_serve_answer(&lc->serve, now, payload, len, cap, trusted);
	if (n < 0)
		return drop(lc, FW_DROP_WIRE);
	return send_udp(lc, port, m, ip, udp, n);
}

bool fw_pkt_answer(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
		   struct rte_mbuf *m, uint64_t now)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);

	if (m->nb_segs != 1 || m->data_len < L2)
		return drop(lc, FW_DROP_BAD_LEN);
	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_ARP))
		return answer_arp(lc, port, m);
	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6) && fw_pkt6_answer)
		return fw_pkt6_answer(app, lc, port, m, now);
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
	if (!ip_cksum_ok(m, ip))
		return drop(lc, FW_DROP_BAD_CSUM);
	if (FW_UNLIKELY(!fw_policy_allowed(&app->srcpol, rte_be_to_cpu_32(ip->src_addr))))
		return drop(lc, FW_DROP_SOURCE);

	switch (ip->next_proto_id) {
	case IPPROTO_UDP:
		return answer_udp(app, lc, port, m, ip, ip_len, now);
	case IPPROTO_ICMP:
		return answer_icmp(lc, port, m, ip, ip_len);
	default:
		return drop(lc, FW_DROP_PROTO);
	}
}

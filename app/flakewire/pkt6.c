/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IPv6 on the packet path: neighbour discovery for the port's addresses,
 * ICMPv6 echo, and flakewire requests on the UDP port, answered in place
 * like the IPv4 ones in pkt.c (which hands every IPv6 frame here).
 *
 * What is answered, and what is counted and dropped:
 *  - Neighbour Solicitations for one of the port's addresses (sent to it or
 *    to its solicited-node group), validated as RFC 4861 7.1.1 says: hop
 *    limit 255, ICMPv6 checksum, code 0, at least 24 bytes, a unicast
 *    target, options of non-zero length, and from the unspecified address
 *    (duplicate address detection) only to the solicited-node group and
 *    without a source link-layer option. The advertisement carries
 *    Solicited and Override (Router clear) and the target link-layer
 *    address option; to a DAD probe it goes to all-nodes with Solicited
 *    clear. Failures count as drop_nd_invalid. Neighbour discovery is
 *    exempt from [net] allow: it comes from link-local addresses and
 *    without it nothing on the link can reach the responder.
 *  - ICMPv6 echo requests to one of the addresses: checksum (with the
 *    pseudo-header) verified, reply with the checksum updated.
 *  - UDP to [net] udp_port: the UDP checksum is mandatory in IPv6, so a zero
 *    one is dropped (drop_udp6_zero_cksum); replies carry at most 1452
 *    payload bytes (a 1500-byte MTU less 40 + 8), so LIST answers hold at
 *    most 178 IDs over IPv6.
 *  - Every extension header (hop-by-hop, routing, destination options, AH,
 *    ESP, mobility, HIP, shim6) is counted and dropped (drop_ipv6_ext), a
 *    fragment header as drop_fragment: no request needs one, and skipping
 *    them would only widen the parser for attackers.
 *  - Martian sources (fw_policy_martian6: ::1, ::, ff00::/8, our own
 *    addresses, IPv4-mapped IPv4 martians) before any policy, each counted
 *    by its reason (drop_martian_*); from :: only a duplicate address
 *    detection probe is taken.
 *  - Everything else: the drop reasons of pkt.c (not_us, ip_proto, ...).
 * Replies have hop limit 64 (NDP: 255). Checksums are computed in software
 * (the virtual devices offer no IPv6 offload worth the branches).
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "lcore.h"
#include "pkt.h"
#include "pkt6.h"
#include "pkt_util.h"
#include "port.h"

#define L2  ((uint16_t)sizeof(struct rte_ether_hdr))
#define L3  ((uint16_t)sizeof(struct rte_ipv6_hdr))
#define L4  ((uint16_t)sizeof(struct rte_udp_hdr))
#define NSZ 24 /* ICMPv6 header + reserved/flags + target: NS and NA without options */

#define ICMP6_ECHO_REQUEST 128
#define ICMP6_ECHO_REPLY   129
#define ICMP6_ND_NS        135
#define ICMP6_ND_NA        136
#define ND_OPT_SLLA        1
#define ND_OPT_TLLA        2
#define NA_F_SOLICITED     0x40 /* first byte of the flags word */
#define NA_F_OVERRIDE      0x20
#define REPLY_HOPS         64
#define ND_HOPS            255

/*
 * The one's-complement sum over the IPv6 pseudo-header (addresses, upper
 * layer length, next header) and @len bytes at @l4: 0xffff when the
 * checksum in it is valid.
 */
static inline uint16_t sum6(const struct rte_ipv6_hdr *ip, uint8_t proto, const void *l4,
			    uint32_t len)
{
	uint64_t s = cksum_words(ip->src_addr, 4, 0); /* source and destination, 32 bytes */

	s = cksum_add(s, BE32(len));
	s = cksum_add(s, BE32((uint32_t)proto));
	return cksum_sum(l4, len, s);
}

/* The checksum of the @len bytes at @l4, whose checksum field holds 0. */
static inline uint16_t cksum6(const struct rte_ipv6_hdr *ip, uint8_t proto, const void *l4,
			      uint32_t len)
{
	uint16_t c = (uint16_t)~sum6(ip, proto, l4, len);

	return (proto == IPPROTO_UDP && c == 0) ? 0xffff : c; /* UDP 0: "none" */
}

/* Index of @a among the port's addresses, or -1. */
static inline int my_addr(const struct fwire_port *port, const uint8_t *a)
{
	for (uint32_t i = 0; i < port->n_addr6; i++)
		if (!memcmp(port->addr6[i], a, 16))
			return (int)i;
	return -1;
}

/* ff02::1:ffXX:XXXX, the solicited-node group of an address ending in XX:XXXX */
static const uint8_t snm_prefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 0x01};

static inline bool is_snm_of(const uint8_t *group, const uint8_t *addr)
{
	return !memcmp(group, snm_prefix, 13) && !memcmp(group + 13, addr + 13, 3);
}

/* True when @a is the solicited-node group of one of the port's addresses. */
static inline bool my_snm(const struct fwire_port *port, const uint8_t *a)
{
	if (memcmp(a, snm_prefix, 13))
		return false;
	for (uint32_t i = 0; i < port->n_addr6; i++)
		if (!memcmp(a + 13, port->addr6[i] + 13, 3))
			return true;
	return false;
}

static inline bool is_unspecified(const uint8_t *a)
{
	static const uint8_t zero[16];

	return !memcmp(a, zero, 16);
}

/* 33:33 followed by the group's last four bytes (RFC 2464 7). */
static inline void mcast_mac(struct rte_ether_addr *mac, const uint8_t *group)
{
	mac->addr_bytes[0] = 0x33;
	mac->addr_bytes[1] = 0x33;
	memcpy(&mac->addr_bytes[2], group + 12, 4);
}

static inline void set_len(struct rte_mbuf *m, uint16_t l3_payload)
{
	rte_pktmbuf_data_len(m) = (uint16_t)(L2 + L3 + l3_payload);
	rte_pktmbuf_pkt_len(m) = rte_pktmbuf_data_len(m);
}

/* Reverses the frame: Ethernet and IPv6 addresses, hop limit for a reply. */
static inline void turn_around(struct rte_ether_hdr *eth, const struct fwire_port *port,
			       struct rte_ipv6_hdr *ip, uint8_t hops)
{
	uint8_t a[16];

	eth->dst_addr = eth->src_addr;
	eth->src_addr = port->mac;
	memcpy(a, ip->src_addr, 16);
	memcpy(ip->src_addr, ip->dst_addr, 16);
	memcpy(ip->dst_addr, a, 16);
	ip->hop_limits = hops;
}

/* RFC 4861 7.1.1 and 7.2.4: validates a Neighbour Solicitation and answers it. */
static bool answer_ns(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
		      struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip, uint16_t plen)
{
	uint8_t *icmp = (uint8_t *)(ip + 1);
	const uint8_t *target = icmp + 8;
	const uint8_t *slla = NULL;
	bool dad = is_unspecified(ip->src_addr);

	if (ip->hop_limits != ND_HOPS || icmp[1] != 0 || plen < NSZ)
		return pkt_drop(lc, FW_DROP_ND);
	if (sum6(ip, IPPROTO_ICMPV6, icmp, plen) != 0xffff)
		return pkt_drop(lc, FW_DROP_BAD_CSUM);
	if (target[0] == 0xff)
		return pkt_drop(lc, FW_DROP_ND);
	for (uint16_t off = NSZ; off < plen;) {
		if (plen - off < 2 || icmp[off + 1] == 0 || icmp[off + 1] * 8 > plen - off)
			return pkt_drop(lc, FW_DROP_ND);
		if (icmp[off] == ND_OPT_SLLA && icmp[off + 1] == 1)
			slla = icmp + off + 2;
		off = (uint16_t)(off + icmp[off + 1] * 8);
	}
	if (dad && (!is_snm_of(ip->dst_addr, target) || slla))
		return pkt_drop(lc, FW_DROP_ND);
	if (my_addr(port, target) < 0)
		return pkt_drop(lc, FW_DROP_NOT_US); /* someone else's neighbour */
	if (!is_snm_of(ip->dst_addr, target) && memcmp(ip->dst_addr, target, 16))
		return pkt_drop(lc, FW_DROP_ND);
	if (slla && !rte_is_unicast_ether_addr((const struct rte_ether_addr *)slla))
		return pkt_drop(lc, FW_DROP_ND);

	/* the advertisement, written over the solicitation */
	uint8_t tgt[16];
	memcpy(tgt, target, 16);
	if (dad) {
		memcpy(ip->dst_addr, all_nodes, 16);
		mcast_mac(&eth->dst_addr, all_nodes);
	} else {
		memcpy(ip->dst_addr, ip->src_addr, 16);
		if (slla)
			memcpy(&eth->dst_addr, slla, RTE_ETHER_ADDR_LEN);
		else
			eth->dst_addr = eth->src_addr;
	}
	eth->src_addr = port->mac;
	memcpy(ip->src_addr, tgt, 16);
	ip->vtc_flow = RTE_BE32(6u << 28);
	ip->hop_limits = ND_HOPS;
	const uint16_t na_len = NSZ + 8;
	ip->payload_len = rte_cpu_to_be_16(na_len);
	memset(icmp, 0, na_len);
	icmp[0] = ICMP6_ND_NA;
	icmp[4] = (uint8_t)((dad ? 0 : NA_F_SOLICITED) | NA_F_OVERRIDE);
	memcpy(icmp + 8, tgt, 16);
	icmp[NSZ] = ND_OPT_TLLA;
	icmp[NSZ + 1] = 1;
	memcpy(icmp + NSZ + 2, port->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	uint16_t c = cksum6(ip, IPPROTO_ICMPV6, icmp, na_len);
	memcpy(icmp + 2, &c, 2);
	set_len(m, na_len);
	lc->st.nd++;
	return true;
}

static bool answer_icmp6(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
			 struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip, uint16_t plen,
			 bool to_me, uint32_t v)
{
	uint8_t *icmp = (uint8_t *)(ip + 1);

	if (plen < 8)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (icmp[0] == ICMP6_ND_NS)
		return answer_ns(lc, port, m, eth, ip, plen);
	if (icmp[0] != ICMP6_ECHO_REQUEST || icmp[1] != 0 || !to_me)
		return pkt_drop(lc, to_me ? FW_DROP_PROTO : FW_DROP_NOT_US);
	if (FW_UNLIKELY(!(v & FW_POLICY_SRC_ALLOWED)))
		return pkt_drop_source(lc, v);
	if (sum6(ip, IPPROTO_ICMPV6, icmp, plen) != 0xffff)
		return pkt_drop(lc, FW_DROP_BAD_CSUM);
	uint16_t old, new;
	memcpy(&old, icmp, 2);
	icmp[0] = ICMP6_ECHO_REPLY;
	memcpy(&new, icmp, 2);
	uint16_t c;
	memcpy(&c, icmp + 2, 2);
	c = cksum_adjust(c, old, new);
	memcpy(icmp + 2, &c, 2);
	turn_around(eth, port, ip, REPLY_HOPS);
	set_len(m, plen); /* trims Ethernet padding */
	lc->st.icmp++;
	lc->st.icmp6++;
	return true;
}

static bool send_udp6(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
		      struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip, struct rte_udp_hdr *udp,
		      int n)
{
	uint16_t l4 = (uint16_t)(L4 + n);
	uint16_t sport = udp->src_port;

	turn_around(eth, port, ip, REPLY_HOPS);
	ip->payload_len = rte_cpu_to_be_16(l4);
	udp->src_port = udp->dst_port;
	udp->dst_port = sport;
	udp->dgram_len = rte_cpu_to_be_16(l4);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = cksum6(ip, IPPROTO_UDP, udp, l4);
	set_len(m, l4);
	lc->st.udp++;
	lc->st.udp6++;
	return true;
}

static bool answer_udp6(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
			struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip, uint16_t plen,
			uint32_t v, uint64_t now)
{
	const struct fwire_pkt_ctx *px = lc->px;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	if (plen < L4 || BE16(udp->dgram_len) != plen)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (FW_UNLIKELY(!(v & FW_POLICY_SRC_ALLOWED)))
		return pkt_drop_source(lc, v);
	if (udp->dst_port != BE16((uint16_t)px->udp_port))
		return pkt_drop(lc, FW_DROP_PORT);
	if (FW_UNLIKELY(fw_policy_reflector(&px->policy, BE16(udp->src_port))))
		return pkt_drop(lc, FW_DROP_REFLECTOR);
	if (udp->dgram_cksum == 0)
		return pkt_drop(lc, FW_DROP_UDP6_NO_CKSUM);
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	    (f != RTE_MBUF_F_RX_L4_CKSUM_GOOD && sum6(ip, IPPROTO_UDP, udp, plen) != 0xffff))
		return pkt_drop(lc, FW_DROP_BAD_CSUM);

	uint8_t *payload = (uint8_t *)(udp + 1);
	size_t len = plen - L4;
	bool trusted = v & FW_POLICY_SRC_TRUSTED;
	int n;

	if (lc->rate && !trusted) {
		uint32_t retry_us = 0;
		enum fw_rate_verdict rv =
			fw_rate_check6(lc->rate, ip->src_addr, lc->tsc, &retry_us);
		if (FW_UNLIKELY(rv != FW_RATE_PASS)) {
			n = pkt_limited(lc, rv, retry_us, payload, len);
			return n >= 0 && send_udp6(lc, port, m, eth, ip, udp, n);
		}
	}

	size_t room = (size_t)(m->buf_len - m->data_off) - (L2 + L3 + L4);
	size_t cap = FW_MIN(room, (size_t)px->max_reply_bytes);
	cap = FW_MIN(cap, (size_t)FW_PKT6_PAYLOAD_MAX);
	n = fw_serve_answer(&lc->serve, now, payload, len, cap, trusted);
	if (n < 0)
		return pkt_drop(lc, FW_DROP_WIRE);
	return send_udp6(lc, port, m, eth, ip, udp, n);
}

bool fwire_pkt6_answer(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
		       uint64_t now)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);

	lc->st.rx6++;
	if (m->nb_segs != 1 || m->data_len < L2 + L3)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	uint16_t plen = rte_be_to_cpu_16(ip->payload_len);
	if (plen > m->data_len - L2 - L3)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (port->n_addr6 == 0)
		return pkt_drop(lc, FW_DROP_NOT_US);

	bool to_me = my_addr(port, ip->dst_addr) >= 0;
	if (to_me) {
		if (!rte_is_same_ether_addr(&eth->dst_addr, &port->mac))
			return pkt_drop(lc, FW_DROP_NOT_US);
	} else {
		struct rte_ether_addr g;
		if (!my_snm(port, ip->dst_addr) || ip->proto != IPPROTO_ICMPV6)
			return pkt_drop(lc, FW_DROP_NOT_US);
		mcast_mac(&g, ip->dst_addr);
		if (!rte_is_same_ether_addr(&eth->dst_addr, &g))
			return pkt_drop(lc, FW_DROP_NOT_US);
	}
	/*
	 * Martians before any policy (the verdict carries them); the
	 * unspecified source is for duplicate address detection only.
	 */
	uint32_t v = fw_policy_cached6(&lc->px->policy, &lc->srcc, ip->src_addr);
	if (FW_UNLIKELY(v & FW_POLICY_SRC_MARTIAN_MASK) &&
	    !(is_unspecified(ip->src_addr) && ip->proto == IPPROTO_ICMPV6 && plen >= 1 &&
	      ((uint8_t *)(ip + 1))[0] == ICMP6_ND_NS))
		return pkt_drop_source(lc, v);

	switch (ip->proto) {
	case IPPROTO_UDP:
		return answer_udp6(lc, port, m, eth, ip, plen, v, now);
	case IPPROTO_ICMPV6:
		return answer_icmp6(lc, port, m, eth, ip, plen, to_me, v);
	case IPPROTO_FRAGMENT:
		return pkt_drop(lc, FW_DROP_FRAG);
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_ESP:
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
		return pkt_drop(lc, FW_DROP_IPV6_EXT);
	default:
		return pkt_drop(lc, FW_DROP_PROTO);
	}
}

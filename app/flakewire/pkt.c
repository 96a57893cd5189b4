/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classifies one frame and answers it in place: ARP requests for our
 * address, ICMP echo requests, flakewire requests on our UDP port. Every
 * read is bounded by the segment's data_len; multi-segment frames are
 * dropped (requests are small). The common frame (IPv4 UDP to us, no
 * options or fragments) is recognised by four 8-byte compares (pkt_answer);
 * every other frame takes the checks one by one (pkt_answer_slow), which
 * name the reason of a drop. The Ethernet type dispatch is in
 * pkt_answer_slow: a new network protocol is one case there.
 *
 * Checksums: the device's RX verdict when it gives one (NONE: valid data,
 * unfinished checksum), else verified in software, 64 bits at a time.
 * Swapping addresses and ports leaves a one's-complement sum unchanged, so
 * the IPv4 and ICMP headers are adjusted (RFC 1624) and a same-size UDP
 * reply's sum is the verified request's minus the words that changed
 * (struct csum_state); what was not verified (by us, or by the device: RX
 * verdict GOOD) is summed from scratch.
 * TX checksum offload is used when the port has it.
 *
 * Martians: a frame from a group source MAC (multicast, broadcast) is
 * dropped before anything else, and a source address that no peer on the
 * wire can have (loopback, unspecified, multicast, broadcast, one of our
 * own: fw_policy_martian) before any policy; each counted by its reason.
 * The martian verdict is part of the source's cached verdict (never
 * allowed, never trusted), so the fast path pays nothing for it: its
 * "allowed?" test is the one it makes anyway, its MAC compare also covers
 * the source MAC's group bit. [net] trusted can never be satisfied by a
 * martian, and a reply never goes to a group MAC (ARP and neighbour
 * discovery check the hardware address they answer to).
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
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "fw_responder_conf.h"
#include "lcore.h"
#include "pkt.h"
#include "pkt6.h"
#include "pkt_util.h"
#include "port.h"

const char *const fwire_drop_names[FW_DROP_COUNT] = {
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
	[FW_DROP_MARTIAN_LOOPBACK] = "martian_loopback",
	[FW_DROP_MARTIAN_UNSPECIFIED] = "martian_unspecified",
	[FW_DROP_MARTIAN_MULTICAST] = "martian_multicast",
	[FW_DROP_MARTIAN_BROADCAST] = "martian_broadcast",
	[FW_DROP_MARTIAN_SELF] = "martian_self",
	[FW_DROP_MARTIAN_MAC] = "martian_mac",
};

_Static_assert(FW_DROP_MARTIAN(FW_POLICY_MARTIAN_SELF) == FW_DROP_MARTIAN_SELF &&
		       FW_DROP_MARTIAN(FW_POLICY_MARTIAN_COUNT) == FW_DROP_MARTIAN_MAC,
	       "enum fwire_drop's martians follow enum fw_policy_martian");

#define L2 ((uint16_t)sizeof(struct rte_ether_hdr))
#define L3 ((uint16_t)sizeof(struct rte_ipv4_hdr))
#define L4 ((uint16_t)sizeof(struct rte_udp_hdr))

/* m->tx_offload of a reply whose checksums the device writes: l2_len, l3_len, the rest 0 */
#define TX_OFFLOAD_L2_L3 ((uint64_t)L2 << RTE_MBUF_L2_LEN_OFS | (uint64_t)L3 << RTE_MBUF_L3_LEN_OFS)

/* UDP length of a single-ID request padded to its reply's size, and of that reply. */
#define ID_L4 ((uint16_t)(L4 + FW_SERVE_ID_REP_LEN))

/* UDP sum over the pseudo header and @l4_len bytes at @udp (0xffff: checksum valid). */
static inline uint16_t udp_sum(const struct rte_ipv4_hdr *ip, const void *udp, uint16_t l4_len)
{
	uint64_t ph = (uint64_t)ip->src_addr + ip->dst_addr + RTE_BE16(IPPROTO_UDP) + BE16(l4_len);

	if (FW_LIKELY(l4_len == ID_L4)) /* the common size, unrolled: 5 words */
		return cksum_fold(cksum_words(udp, ID_L4 / 8, ph));
	return cksum_sum(udp, l4_len, ph);
}

/* Sum of the 20-byte IPv4 header (no options): two words and a half. */
static inline uint16_t ip_sum(const struct rte_ipv4_hdr *ip)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)ip + 16, 4);
	return cksum_fold(cksum_words((const uint8_t *)ip, 2, v));
}

/* Writes the IPv4 header checksum from scratch (the request's may not be final). */
static inline void ip_cksum_set(struct rte_ipv4_hdr *ip)
{
	ip->hdr_checksum = 0;
	ip->hdr_checksum = (uint16_t)~ip_sum(ip);
}

static inline void swap_eth(struct rte_ether_hdr *eth, const struct fwire_port *port)
{
	eth->dst_addr = eth->src_addr;
	eth->src_addr = port->mac;
}

/*
 * Source and destination addresses exchanged: one 8-byte rotate. Returns
 * their one's-complement sum's 64-bit seed (order does not matter), so that
 * a pseudo-header sum need not read back what was just stored.
 */
static inline uint64_t swap_ip(struct rte_ipv4_hdr *ip)
{
	uint64_t a;

	memcpy(&a, &ip->src_addr, 8);
	a = a >> 32 | a << 32;
	memcpy(&ip->src_addr, &a, 8);
	return (a & 0xffffffff) + (a >> 32);
}

static bool answer_arp(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (m->data_len < L2 + sizeof(*arp))
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (arp->arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4 || arp->arp_opcode != RTE_BE16(RTE_ARP_OP_REQUEST) ||
	    arp->arp_data.arp_tip != port->addr_be)
		return pkt_drop(lc, FW_DROP_NOT_US);
	/* The reply goes to the sender's hardware address: never to a group. */
	if (!rte_is_unicast_ether_addr(&arp->arp_data.arp_sha))
		return pkt_drop(lc, FW_DROP_NOT_US);

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

static bool answer_icmp(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
			struct rte_ipv4_hdr *ip, uint16_t ip_len)
{
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(ip + 1);

	if (ip_len < L3 + sizeof(*icmp))
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0)
		return pkt_drop(lc, FW_DROP_PROTO);
	/* The reply's checksum is the request's, adjusted: only a valid one may be echoed. */
	if (cksum_sum(icmp, ip_len - L3, 0) != 0xffff)
		return pkt_drop(lc, FW_DROP_BAD_CSUM);
	/* type 8 -> 0 in the first 16-bit word (type, code) */
	uint16_t old = *(uint16_t *)icmp;
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = cksum_adjust(icmp->icmp_cksum, old, *(uint16_t *)icmp);
	swap_eth(rte_pktmbuf_mtod(m, struct rte_ether_hdr *), port);
	swap_ip(ip);
	ip_cksum_set(ip);
	rte_pktmbuf_data_len(m) = (uint16_t)(L2 + ip_len); /* trim Ethernet padding */
	rte_pktmbuf_pkt_len(m) = rte_pktmbuf_data_len(m);
	lc->st.icmp++;
	return true;
}

/*
 * What the checks of a request leave for its reply's checksums (software
 * path only): whether the request's IPv4 header checksum is final (then the
 * reply's is adjusted for the new length, RFC 1624), and for a datagram of
 * ID_L4 bytes whose UDP checksum was verified (in software, or by the
 * device: RX verdict GOOD), the sum of every
 * word a reply of the same size keeps: pseudo header, UDP header (ports and
 * length come back swapped or equal; the old checksum is taken out again)
 * and the tag (bytes 8-15 of every reply are the request's tag). The reply
 * then costs three words instead of a pass over it.
 */
struct csum_state {
	bool ip_final;
	bool keep_valid;
	bool rx_good; /* the device verified both checksums (RX verdicts GOOD) */
	uint64_t keep;
};

/*
 * What a burst keeps in registers and moves once at its end (tally_end):
 * the UDP replies sent, and the run of plain single-ID answers (struct
 * fw_serve_run: the generator's fast path and four serve counters). Every
 * drop and every other reply is counted at once. Whatever else may issue
 * IDs (pkt_answer_slow) is called between tally_end and tally_begin.
 */
struct tally {
	uint32_t udp;
	struct fw_serve_run run;
};

static inline void tally_begin(struct fwire_lcore *lc, uint64_t now, struct tally *t)
{
	t->udp = 0;
	fw_serve_run_begin(&lc->serve, now, &t->run);
}

static inline void tally_end(struct fwire_lcore *lc, struct tally *t)
{
	lc->st.udp += t->udp;
	fw_serve_run_end(&lc->serve, &t->run);
}

/* Turns the request in place into its reply of @n payload bytes and writes the checksums. */
static __rte_always_inline bool send_udp(const struct fwire_port *port, struct rte_mbuf *m,
					 struct rte_ipv4_hdr *ip, struct rte_udp_hdr *udp, int n,
					 const struct csum_state *cs, bool tx_cksum, uint32_t *nudp)
{
	uint16_t l4_len = (uint16_t)(L4 + n);
	uint16_t old_len = ip->total_length, new_len = BE16((uint16_t)(L3 + l4_len));

	ip->total_length = new_len;
	swap_eth((struct rte_ether_hdr *)ip - 1, port);
	uint64_t addrs = swap_ip(ip);
	uint32_t ports; /* source and destination port exchanged: one 4-byte rotate */
	memcpy(&ports, udp, 4);
	ports = ports >> 16 | ports << 16;
	memcpy(udp, &ports, 4);
	udp->dgram_len = BE16(l4_len);
	rte_pktmbuf_data_len(m) = (uint16_t)(L2 + L3 + l4_len);
	rte_pktmbuf_pkt_len(m) = rte_pktmbuf_data_len(m);
	if (tx_cksum) {
		/*
		 * The device writes both checksums: the IPv4 one from 0, the
		 * UDP one from the pseudo-header sum in the field (what
		 * rte_ipv4_phdr_cksum gives, here in 64-bit adds; the
		 * addresses' sum does not care that they were swapped).
		 */
		m->tx_offload = TX_OFFLOAD_L2_L3;
		m->ol_flags = (m->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL)) |
			      RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
		ip->hdr_checksum = 0;
		udp->dgram_cksum = cksum_fold(addrs + RTE_BE16(IPPROTO_UDP) + BE16(l4_len));
		(*nudp)++;
		return true;
	}
	/*
	 * Swapping addresses and ports leaves both sums unchanged. A request
	 * checksum that is not known final (RX verdict NONE: the device left it
	 * unfinished; UDP checksum 0: the client left it out) is never built
	 * on: those replies are summed from scratch. A device verdict GOOD is
	 * built on like our own verification.
	 */
	if (FW_LIKELY(cs->ip_final)) {
		if (old_len != new_len)
			ip->hdr_checksum = cksum_adjust(ip->hdr_checksum, old_len, new_len);
	} else {
		ip_cksum_set(ip);
	}
	uint16_t c;
	if (FW_LIKELY(cs->keep_valid && l4_len == ID_L4)) {
		const uint8_t *p = (const uint8_t *)(udp + 1);
		uint64_t w[4] = {(uint16_t)~udp->dgram_cksum};
		memcpy(&w[1], p, 8);
		memcpy(&w[2], p + 16, 16);
		c = (uint16_t)~cksum_fold(cksum_addn(cs->keep, w, 4));
	} else {
		udp->dgram_cksum = 0;
		c = (uint16_t)~udp_sum(ip, udp, l4_len);
	}
	udp->dgram_cksum = c ? c : 0xffff; /* 0 means "no checksum" */
	(*nudp)++;
	return true;
}

/*
 * The IPv4 header checksum: the device's verdict when it gave one, else
 * software. NONE (virtio, from the same host) means the data is valid and
 * the checksum field is not final: accepted, and the reply's is written
 * from scratch. Sets cs->ip_final.
 */
static __rte_always_inline bool ip_cksum_ok(const struct rte_mbuf *m, const struct rte_ipv4_hdr *ip,
					    struct csum_state *cs)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	cs->ip_final = f != RTE_MBUF_F_RX_IP_CKSUM_NONE;
	if (f == RTE_MBUF_F_RX_IP_CKSUM_GOOD || f == RTE_MBUF_F_RX_IP_CKSUM_NONE)
		return true;
	if (f == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return false;
	return ip_sum(ip) == 0xffff;
}

/* The UDP checksum (0: none sent), the same way. Sets cs->keep(_valid). */
static __rte_always_inline bool l4_cksum_ok(const struct rte_mbuf *m, const struct rte_ipv4_hdr *ip,
					    const struct rte_udp_hdr *udp, uint16_t ip_len,
					    bool tx_cksum, struct csum_state *cs)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	uint16_t l4_len = (uint16_t)(ip_len - L3);

	cs->keep_valid = false;
	if (tx_cksum && cs->rx_good)
		return true; /* verified by the device, the reply's written by it */
	if (udp->dgram_cksum == 0 || f == RTE_MBUF_F_RX_L4_CKSUM_NONE)
		return true;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return false;
	if (FW_LIKELY(l4_len == ID_L4)) {
		const uint8_t *p = (const uint8_t *)udp;
		uint64_t kw[2], vw[3]; /* UDP header and tag; payload words 0, 2, 3 */
		memcpy(&kw[0], p, 8);
		memcpy(&vw[0], p + 8, 8);
		memcpy(&kw[1], p + 16, 8);
		memcpy(&vw[1], p + 24, 16);
		uint64_t keep = (uint64_t)ip->src_addr + ip->dst_addr + RTE_BE16(IPPROTO_UDP) +
				RTE_BE16(ID_L4);
		keep = cksum_addn(keep, kw, 2);
		cs->keep = keep;
		cs->keep_valid = true;
		/* GOOD: the device verified the sum the reply's is derived from */
		return (cksum_fold(cksum_addn(keep, vw, 3)) == 0xffff) |
		       (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD);
	}
	return f == RTE_MBUF_F_RX_L4_CKSUM_GOOD || udp_sum(ip, udp, l4_len) == 0xffff;
}

/* A rate-limited request: counted, then dropped or slipped (RETRY_AFTER). Out of line. */
static __rte_noinline bool answer_limited(struct fwire_lcore *lc, const struct fwire_port *port,
					  struct rte_mbuf *m, struct rte_ipv4_hdr *ip,
					  struct rte_udp_hdr *udp, enum fw_rate_verdict v,
					  uint32_t retry_us, struct csum_state cs)
{
	uint8_t *payload = (uint8_t *)(udp + 1);
	size_t len = BE16(udp->dgram_len) - L4;
	uint32_t nudp = 0; /* its own: the burst's stays in registers */
	int n = pkt_limited(lc, v, retry_us, payload, len);

	if (n < 0)
		return false;
	bool sent = send_udp(port, m, ip, udp, n, &cs, port->tx_cksum, &nudp);
	lc->st.udp += nudp;
	return sent;
}

/* A UDP datagram whose lengths agree, to our port: policy, checksum, the answer. */
static __rte_always_inline bool answer_udp_ours(const struct fwire_pkt_ctx *px,
						struct fwire_lcore *lc,
						const struct fwire_port *port, struct rte_mbuf *m,
						struct rte_ipv4_hdr *ip, uint16_t ip_len,
						bool trusted, struct csum_state *cs, uint64_t now,
						bool tx_cksum, struct tally *t)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	if (FW_UNLIKELY(fw_policy_reflector(&px->policy, BE16(udp->src_port))))
		return pkt_drop(lc, FW_DROP_REFLECTOR);
	if (!l4_cksum_ok(m, ip, udp, ip_len, tx_cksum, cs))
		return pkt_drop(lc, FW_DROP_BAD_CSUM);

	uint8_t *payload = (uint8_t *)(udp + 1);
	size_t len = ip_len - L3 - L4;
	if (lc->rate && !trusted) {
		uint32_t retry_us = 0;
		enum fw_rate_verdict v =
			fw_rate_check(lc->rate, BE32(ip->src_addr), lc->tsc, &retry_us);
		if (FW_UNLIKELY(v != FW_RATE_PASS))
			return answer_limited(lc, port, m, ip, udp, v, retry_us, *cs);
	}

	/*
	 * The reply's room: only a trusted source's reply may outgrow its
	 * request, which the buffer already holds.
	 */
	size_t cap = px->max_reply_bytes;
	if (trusted)
		cap = FW_MIN(cap, (size_t)(m->buf_len - m->data_off) - (L2 + L3 + L4));
	int n = fw_serve_run_answer(&lc->serve, &t->run, now, payload, len, cap, trusted);
	if (n < 0)
		return pkt_drop(lc, FW_DROP_WIRE);
	return send_udp(port, m, ip, udp, n, cs, tx_cksum, &t->udp);
}

static __rte_always_inline bool answer_udp(const struct fwire_pkt_ctx *px, struct fwire_lcore *lc,
					   const struct fwire_port *port, struct rte_mbuf *m,
					   struct rte_ipv4_hdr *ip, uint16_t ip_len, bool trusted,
					   struct csum_state *cs, uint64_t now, struct tally *t)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	if (ip_len < L3 + L4 || BE16(udp->dgram_len) != ip_len - L3)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (udp->dst_port != BE16((uint16_t)px->udp_port))
		return pkt_drop(lc, FW_DROP_PORT);
	return answer_udp_ours(px, lc, port, m, ip, ip_len, trusted, cs, now, port->tx_cksum, t);
}

static __rte_always_inline bool answer_ipv4(const struct fwire_pkt_ctx *px, struct fwire_lcore *lc,
					    const struct fwire_port *port, struct rte_mbuf *m,
					    struct rte_ether_hdr *eth, uint64_t now,
					    struct tally *t)
{
	if (!rte_is_same_ether_addr(&eth->dst_addr, &port->mac))
		return pkt_drop(lc, FW_DROP_NOT_US);
	if (m->data_len < L2 + L3)
		return pkt_drop(lc, FW_DROP_BAD_LEN);

	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	if ((ip->version_ihl >> 4) != 4)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (ip->version_ihl != RTE_IPV4_VHL_DEF)
		return pkt_drop(lc, FW_DROP_IP_OPTS);
	uint16_t ip_len = BE16(ip->total_length);
	if (ip_len < L3 || ip_len > m->data_len - L2)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	if (ip->dst_addr != port->addr_be)
		return pkt_drop(lc, FW_DROP_NOT_US);
	if (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return pkt_drop(lc, FW_DROP_FRAG);
	struct csum_state cs = {.rx_good = false};
	if (!ip_cksum_ok(m, ip, &cs))
		return pkt_drop(lc, FW_DROP_BAD_CSUM);
	uint32_t v = fw_policy_cached(&px->policy, &lc->srcc, ip->src_addr);
	if (FW_UNLIKELY(!(v & FW_POLICY_SRC_ALLOWED)))
		return pkt_drop_source(lc, v);

	switch (ip->next_proto_id) {
	case IPPROTO_UDP:
		return answer_udp(px, lc, port, m, ip, ip_len, v & FW_POLICY_SRC_TRUSTED, &cs, now,
				  t);
	case IPPROTO_ICMP:
		return answer_icmp(lc, port, m, ip, ip_len);
	default:
		return pkt_drop(lc, FW_DROP_PROTO);
	}
}

/*
 * The common case in four 8-byte compares, for a frame of at least 42
 * bytes in one segment: to our MAC from a unicast one, IPv4 without
 * options, no fragment, UDP, to our address and port (the source's verdict,
 * martian or not, is the policy cache's). Everything else takes the slow path, whose
 * checks one by one name the reason of a drop; a frame that passes here
 * would pass them too, so both count alike.
 */
struct fast_key {
	uint64_t mac; /* bytes 0-5 of the frame, as loaded (6-7, the source MAC's first two: 0) */
	uint64_t dst; /* bytes 30-37: IPv4 destination, (source port masked), UDP port */
};

/* Little-endian view of frame bytes: the masks and keys below assume it. */
#define FAST_M0  0x0001ffffffffffffull /* destination MAC, source MAC's group bit (must be 0) */
#define FAST_M12 0x0000000000ffffffull /* ether type, version + IHL */
#define FAST_V12 0x0000000000450008ull
#define FAST_M20 0x00000000ff00ff3full /* MF + fragment offset, protocol */
#define FAST_V20 0x0000000011000000ull
#define FAST_M30 0xffff0000ffffffffull /* destination address, destination port */

static inline void fast_key_init(struct fast_key *k, const struct fwire_pkt_ctx *px,
				 const struct fwire_port *port)
{
	k->mac = 0;
	memcpy(&k->mac, &port->mac, RTE_ETHER_ADDR_LEN);
	k->dst = (uint64_t)port->addr_be | (uint64_t)BE16((uint16_t)px->udp_port) << 48;
}

static __rte_noinline bool pkt_answer_slow(const struct fwire_pkt_ctx *px, struct fwire_lcore *lc,
					   const struct fwire_port *port, struct rte_mbuf *m,
					   uint64_t now);

static __rte_always_inline bool pkt_answer(const struct fwire_pkt_ctx *px, struct fwire_lcore *lc,
					   const struct fwire_port *port, struct rte_mbuf *m,
					   const struct fast_key *k, uint64_t now, bool tx_cksum,
					   struct tally *t)
{
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	uint16_t dlen = m->data_len;
	uint64_t w0, w12, w20, w30;

	if (FW_LIKELY(dlen >= L2 + L3 + L4 && m->nb_segs == 1)) {
		memcpy(&w0, b, 8);
		memcpy(&w12, b + 12, 8);
		memcpy(&w20, b + 20, 8);
		memcpy(&w30, b + 30, 8);
		if (FW_LIKELY(((w0 ^ k->mac) & FAST_M0) == 0 && (w12 & FAST_M12) == FAST_V12 &&
			      (w20 & FAST_M20) == FAST_V20 && ((w30 ^ k->dst) & FAST_M30) == 0)) {
			struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + L2);
			struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
			uint16_t ip_len = BE16((uint16_t)(w12 >> 32));
			/*
			 * Exactly the frame (no Ethernet padding, which the slow
			 * path takes care of), and the UDP length agreeing: the
			 * frame holds at least 42 bytes, so ip_len >= 28.
			 */
			if (FW_LIKELY(ip_len == dlen - L2 && BE16(udp->dgram_len) == ip_len - L3)) {
				uint32_t v;
				/*
				 * A port whose device writes the checksums
				 * verifies them too: both verdicts GOOD in one
				 * test, and nothing left to sum (its own copy
				 * of the path, the checksum state a constant).
				 */
				if (tx_cksum &&
				    FW_LIKELY((m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK |
							      RTE_MBUF_F_RX_L4_CKSUM_MASK)) ==
					      (RTE_MBUF_F_RX_IP_CKSUM_GOOD |
					       RTE_MBUF_F_RX_L4_CKSUM_GOOD))) {
					struct csum_state good = {.ip_final = true,
								  .rx_good = true};
					v = fw_policy_cached(&px->policy, &lc->srcc, ip->src_addr);
					if (FW_UNLIKELY(!(v & FW_POLICY_SRC_ALLOWED)))
						return pkt_drop_source(lc, v);
					return answer_udp_ours(px, lc, port, m, ip, ip_len,
							       v & FW_POLICY_SRC_TRUSTED, &good,
							       now, true, t);
				}
				struct csum_state cs = {.rx_good = false};
				if (!ip_cksum_ok(m, ip, &cs))
					return pkt_drop(lc, FW_DROP_BAD_CSUM);
				v = fw_policy_cached(&px->policy, &lc->srcc, ip->src_addr);
				if (FW_UNLIKELY(!(v & FW_POLICY_SRC_ALLOWED)))
					return pkt_drop_source(lc, v);
				return answer_udp_ours(px, lc, port, m, ip, ip_len,
						       v & FW_POLICY_SRC_TRUSTED, &cs, now,
						       tx_cksum, t);
			}
		}
	}
#else
	(void)k;
#endif
	/* the slow path may issue IDs: the burst's run is written back around it */
	tally_end(lc, t);
	bool reply = pkt_answer_slow(px, lc, port, m, now);
	tally_begin(lc, now, t);
	return reply;
}

/* The dispatch on the Ethernet type: one case per network protocol. */
static __rte_always_inline bool pkt_dispatch(const struct fwire_pkt_ctx *px, struct fwire_lcore *lc,
					     const struct fwire_port *port, struct rte_mbuf *m,
					     uint64_t now, struct tally *t)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);

	if (m->nb_segs != 1 || m->data_len < L2)
		return pkt_drop(lc, FW_DROP_BAD_LEN);
	/* a group source MAC is no sender: nothing is answered to it */
	if (FW_UNLIKELY(rte_is_multicast_ether_addr(&eth->src_addr)))
		return pkt_drop(lc, FW_DROP_MARTIAN_MAC);
	switch (eth->ether_type) {
	case RTE_BE16(RTE_ETHER_TYPE_IPV4):
		return answer_ipv4(px, lc, port, m, eth, now, t);
	case RTE_BE16(RTE_ETHER_TYPE_ARP):
		return answer_arp(lc, port, m);
	case RTE_BE16(RTE_ETHER_TYPE_IPV6): {
		/* pkt6.c issues IDs too: the run is written back around it */
		tally_end(lc, t);
		bool reply = fwire_pkt6_answer(lc, port, m, now);
		tally_begin(lc, now, t);
		return reply;
	}
	default:
		return pkt_drop(lc, FW_DROP_NOT_IP);
	}
}

/* Every frame the fast path does not take; counts its own tally, out of line. */
static __rte_noinline bool pkt_answer_slow(const struct fwire_pkt_ctx *px, struct fwire_lcore *lc,
					   const struct fwire_port *port, struct rte_mbuf *m,
					   uint64_t now)
{
	struct tally t;

	tally_begin(lc, now, &t);
	bool reply = pkt_dispatch(px, lc, port, m, now, &t);
	tally_end(lc, &t);
	return reply;
}

bool fwire_pkt_answer(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
		      uint64_t now)
{
	const struct fwire_pkt_ctx *px = lc->px;
	struct fast_key k;
	struct tally t;

	fast_key_init(&k, px, port);
	tally_begin(lc, now, &t);
	bool reply = pkt_answer(px, lc, port, m, &k, now, port->tx_cksum, &t);
	tally_end(lc, &t);
	return reply;
}

/*
 * The burst loop, compiled once per checksum mode (@tx_cksum a constant):
 * whether the device writes the replies' checksums is the port's, so it is
 * decided once a burst, not once a frame.
 */
static __rte_always_inline uint16_t pkt_burst(const struct fwire_pkt_ctx *px,
					      struct fwire_lcore *lc, const struct fwire_port *port,
					      struct rte_mbuf **pkts, uint16_t n, uint64_t now,
					      struct rte_mbuf **tx, struct rte_mbuf **fr,
					      uint16_t *nfr, bool tx_cksum)
{
	struct rte_mbuf **txp = tx, **frp = fr; /* pointers: no index to widen a frame */
	struct fast_key k;
	struct tally t;

	fast_key_init(&k, px, port);
	tally_begin(lc, now, &t);
	lc->st.rx += n;
	/* DPDK l3fwd's pattern: the next frame's data is on its way while this one is answered */
	if (n)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[0], void *));
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		if (pkt_answer(px, lc, port, m, &k, now, tx_cksum, &t))
			*txp++ = m;
		else
			*frp++ = m;
	}
	tally_end(lc, &t);
	*nfr = (uint16_t)(frp - fr);
	return (uint16_t)(txp - tx);
}

uint16_t fwire_pkt_burst(struct fwire_lcore *lc, const struct fwire_port *port,
			 struct rte_mbuf **pkts, uint16_t n, uint64_t now, struct rte_mbuf **tx,
			 struct rte_mbuf **fr, uint16_t *nfr)
{
	const struct fwire_pkt_ctx *px = lc->px;

	if (port->tx_cksum)
		return pkt_burst(px, lc, port, pkts, n, now, tx, fr, nfr, true);
	return pkt_burst(px, lc, port, pkts, n, now, tx, fr, nfr, false);
}

int fwire_pkt_ctx_init(struct fwire_pkt_ctx *px, const struct fw_conf *c, uint32_t *outside,
		       uint32_t *outside6)
{
	char err[160]; /* cannot happen: lib/conf holds no longer lists than lib/policy */

	memset(px, 0, sizeof(*px));
	if (fw_responder_policy(&px->policy, c, outside, outside6, err, sizeof(err)) ||
	    fw_policy_set_martians(&px->policy, true))
		return -1;
	px->udp_port = c->net.udp_port;
	px->max_reply_bytes = c->net.max_reply_bytes;
	return 0;
}

int fwire_pkt_ctx_add_port(struct fwire_pkt_ctx *px, const struct fwire_port *port)
{
	if (port->addr_be && fw_policy_add_self(&px->policy, BE32(port->addr_be)))
		return -1;
	for (uint32_t i = 0; i < port->n_addr6; i++)
		if (fw_policy_add_self6(&px->policy, port->addr6[i]))
			return -1;
	return 0;
}

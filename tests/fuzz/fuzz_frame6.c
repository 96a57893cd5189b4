/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The IPv6 half of fuzz_frame: fix-ups that let the fuzzer reach past the
 * checksums and lengths of IPv6 frames, and the properties every IPv6
 * reply must have (aborts otherwise):
 *  - it comes from the port's MAC and one of its addresses, with hop limit
 *    64 (255 for neighbour advertisements), a payload length that matches
 *    the frame, and a valid upper-layer checksum (UDP never 0);
 *  - UDP: to the requester's address and port, at most 1452 payload bytes
 *    and max_reply_bytes, never larger than the request for an untrusted
 *    source, a well-formed reply;
 *  - echo: the request's length; NA: to the solicitor (or all-nodes),
 *    32 bytes with the target link-layer option.
 */
#include <string.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "fuzz_frame6.h"
#include "fw_wire.h"

#define L2 ((size_t)sizeof(struct rte_ether_hdr))
#define L3 ((size_t)sizeof(struct rte_ipv6_hdr))
#define L4 ((size_t)sizeof(struct rte_udp_hdr))

static uint16_t sum6(const struct rte_ipv6_hdr *ip, const void *l4, uint32_t len)
{
	struct {
		rte_be32_t len, proto;
	} ph = {rte_cpu_to_be_32(len), rte_cpu_to_be_32(ip->proto)};
	uint32_t s = rte_raw_cksum(ip->src_addr, 32) + rte_raw_cksum(&ph, sizeof(ph)) +
		     rte_raw_cksum(l4, len);

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static bool is_ipv6(const uint8_t *f, size_t len)
{
	return len >= L2 + L3 &&
	       ((const struct rte_ether_hdr *)f)->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6);
}

void fuzz6_fix_up(uint8_t *f, size_t len, uint8_t how, const struct fwire_port *port)
{
	if (!is_ipv6(f, len) || port->n_addr6 == 0)
		return;
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
	uint8_t *l4 = (uint8_t *)(ip + 1);
	if (how & 0x10) {
		eth->dst_addr = port->mac;
		memcpy(ip->dst_addr, port->addr6[0], 16);
	}
	if (how & 0x04) {
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(len - L2 - L3));
		if (ip->proto == IPPROTO_UDP && len >= L2 + L3 + L4)
			((struct rte_udp_hdr *)l4)->dgram_len = ip->payload_len;
	}
	size_t plen = rte_be_to_cpu_16(ip->payload_len);
	if (!(how & 0x02) || plen > len - L2 - L3)
		return;
	uint16_t c;
	if (ip->proto == IPPROTO_UDP && plen >= L4) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)l4;
		udp->dgram_cksum = 0;
		c = (uint16_t)~sum6(ip, udp, (uint32_t)plen);
		udp->dgram_cksum = c ? c : 0xffff;
	} else if (ip->proto == IPPROTO_ICMPV6 && plen >= 4) {
		l4[2] = l4[3] = 0;
		c = (uint16_t)~sum6(ip, l4, (uint32_t)plen);
		memcpy(l4 + 2, &c, 2);
	}
}

bool fuzz6_save(const uint8_t *f, size_t seg, struct fuzz6_req *r)
{
	memset(r, 0, sizeof(*r));
	if (!is_ipv6(f, seg))
		return false;
	memcpy(&r->eth, f, L2);
	memcpy(&r->ip, f + L2, L3);
	r->seg = seg;
	if (r->ip.proto == IPPROTO_UDP && seg >= L2 + L3 + L4)
		memcpy(&r->udp, f + L2 + L3, L4);
	return true;
}

bool fuzz6_trusted(const struct fw_conf *conf, const struct fuzz6_req *r)
{
	/* a neighbour advertisement may outgrow a solicitation without options by its
	 * 8-byte link-layer option: link-local only (hop limit 255), checked below */
	if (r->ip.proto == IPPROTO_ICMPV6)
		return true;
	return fw_conf_trusted6(&conf->net.trusted, r->ip.src_addr);
}

void fuzz6_charge(struct fw_rate *rate, const struct fuzz6_req *r, unsigned n, uint64_t tsc)
{
	for (unsigned i = 0; i < n; i++)
		fw_rate_check6(rate, r->ip.src_addr, tsc, NULL);
}

static bool mine(const struct fwire_port *port, const uint8_t *a)
{
	for (uint32_t i = 0; i < port->n_addr6; i++)
		if (!memcmp(port->addr6[i], a, 16))
			return true;
	return false;
}

void fuzz6_check_reply(const struct fw_conf *conf, const struct fwire_port *port,
		       const struct fuzz6_req *r, bool trusted, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(eth + 1);
	const uint8_t *l4 = (const uint8_t *)(ip + 1);

	if (!r->seg || m->data_len < L2 + L3 || !rte_is_same_ether_addr(&eth->src_addr, &port->mac))
		abort();
	size_t plen = rte_be_to_cpu_16(ip->payload_len);
	if (plen != m->data_len - L2 - L3 || !mine(port, ip->src_addr))
		abort();
	if (sum6(ip, l4, (uint32_t)plen) != 0xffff)
		abort();
	if (ip->proto == IPPROTO_ICMPV6 && plen >= 4 && l4[0] == 136) {
		if (ip->hop_limits != 255 || plen != 32 || l4[24] != 2 || l4[25] != 1 ||
		    memcmp(l4 + 26, &port->mac, 6) || memcmp(l4 + 8, ip->src_addr, 16))
			abort();
		return;
	}
	if (ip->hop_limits != 64 || memcmp(ip->dst_addr, r->ip.src_addr, 16) ||
	    !rte_is_same_ether_addr(&eth->dst_addr, &r->eth.src_addr))
		abort();
	if (ip->proto == IPPROTO_ICMPV6) {
		if (plen < 8 || l4[0] != 129 || plen != rte_be_to_cpu_16(r->ip.payload_len))
			abort();
		return;
	}
	if (ip->proto != IPPROTO_UDP || plen < L4 + FW_WIRE_HDR_LEN)
		abort();
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)l4;
	size_t n = plen - L4;
	struct fw_wire_reply rep;
	if (udp->dgram_cksum == 0 || udp->dst_port != r->udp.src_port ||
	    rte_be_to_cpu_16(udp->dgram_len) != plen)
		abort();
	if (n > 1452 || n > conf->net.max_reply_bytes)
		abort();
	if (!trusted && plen > rte_be_to_cpu_16(r->ip.payload_len))
		abort(); /* amplification */
	const uint8_t *p = (const uint8_t *)(udp + 1);
	if (fw_wire_reply_size(p[3] & 0x7f, 0) != 0 && fw_wire_parse_reply(p, n, &rep) != 0)
		abort();
}

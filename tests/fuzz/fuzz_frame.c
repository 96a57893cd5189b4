/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the whole packet path: each input is an Ethernet
 * frame answered by fwire_pkt_answer(), the function the lcores run, in a real
 * mbuf from a test mempool (EAL without hugepages, PCI or ports), with the
 * responder's own packet context and lcore set-up (fwire_pkt_ctx_init,
 * fwire_lcore_init: no application) and the policy on: allow list, reflector
 * ports, a rate limit with slip and a RANGE cap.
 *
 * Input: byte 0 = how the harness fixes the frame up, so mutations reach
 * past the checksums; byte 1 = bits 0-5: bytes of the frame hidden behind
 * data_len (there, but poisoned: a read past the segment is caught), bits
 * 6-7: the device's RX checksum verdict in ol_flags (0 none; 1 GOOD, given
 * only where the checksum is in fact right, as a device would; 2 BAD; 3
 * NONE: data valid, checksum field not final); byte 2 =
 * requests charged to the frame's source just before it (so the rate limit,
 * burst 8 and slip 2, drops or slips it; the table starts empty for every
 * input, which keeps runs reproducible); the rest = the frame.
 *   bit 0  recompute the IPv4 header checksum
 *   bit 1  recompute the UDP checksum (else keep the input's)
 *   bit 2  make IPv4 total length and UDP length match the frame first
 *   bit 3  the port offloads checksums
 *   bit 4  address the frame to the port (MAC and IPv4)
 *   bits 5-7  advance the fake TSC by that many quarter-milliseconds
 *
 * Checked for every frame: exactly one counter moves; nothing is read or
 * written outside the segment (the headroom is poisoned, and so is the
 * tailroom unless the source is trusted and may get a larger reply); a
 * reply goes back to the sender with valid checksums; a flakewire reply
 * parses, and to an untrusted source it is never larger than the request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanitizer/asan_interface.h>

#include <rte_arp.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "lcore.h"
#include "pkt.h"
#include "port.h"
#include "fuzz_frame6.h"
#include "fw_wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int fwire_logtype; /* main.c's, which the harness does not link */

/* What the harness builds instead of an application: a context, one lcore, one port. */
static struct fw_conf conf;
static struct fw_layout lay;
static struct fwire_pkt_ctx px;
static struct fwire_lcore *lc0;
static struct fwire_port port;
static struct rte_mempool *pool;
static uint64_t fake_tsc = 1000000;
static uint64_t now_ms = 1000000000; /* ms since the epoch, ~11.6 days in */
static struct fw_rate *rate;         /* reset for every input */
static void *rate_mem;
static struct fw_rate_config rate_cfg;

#define L2 sizeof(struct rte_ether_hdr)
#define L3 sizeof(struct rte_ipv4_hdr)
#define L4 sizeof(struct rte_udp_hdr)

static void set(const char *kv)
{
	char err[256];

	if (fw_conf_set(&conf, kv, 0, err, sizeof(err))) {
		fprintf(stderr, "fuzz_frame: %s\n", err);
		abort();
	}
}

/* FUZZ_FRAME_STATS=1: the counters at exit, to see which paths a corpus reaches */
static void report(void)
{
	const struct fwire_lcore_stats *st = &lc0->st;

	if (!getenv("FUZZ_FRAME_STATS"))
		return;
	fprintf(stderr,
		"fuzz_frame: arp %lu icmp %lu udp %lu rate_limited %lu slipped %lu capped %lu",
		(unsigned long)st->arp, (unsigned long)st->icmp, (unsigned long)st->udp,
		(unsigned long)st->rate_limited, (unsigned long)st->slipped,
		(unsigned long)lc0->serve.stats.capped);
	for (int d = 0; d < FW_DROP_COUNT; d++)
		fprintf(stderr, " %s %lu", fwire_drop_names[d], (unsigned long)st->drop[d]);
	fprintf(stderr, "\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char prefix[64];

	(void)argc;
	(void)argv;
	snprintf(prefix, sizeof(prefix), "fuzzframe-%d", (int)getpid());
	char *eal[] = {"fuzz_frame", "--no-huge",   "--no-pci",      "-m",
		       "128",        "--no-shconf", "--file-prefix", prefix,
		       "-l",         "0",           "--log-level=0", "--no-telemetry"};
	if (rte_eal_init((int)FW_ARRAY_SIZE(eal), eal) < 0) {
		fprintf(stderr, "fuzz_frame: EAL init failed\n");
		abort();
	}
	/* nothing in it is used with --no-shconf; a crash must not leave it behind */
	rmdir(rte_eal_get_runtime_dir());
	fwire_logtype = RTE_LOGTYPE_USER1;
	pool = rte_pktmbuf_pool_create("fuzz", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	lc0 = rte_zmalloc("fuzz_lcore", sizeof(*lc0), RTE_CACHE_LINE_SIZE);
	if (!pool || !lc0)
		abort();
	fw_conf_init(&conf);
	set("net.trusted=127.0.0.0/8,10.99.0.0/16,fd99::/16");
	set("net.rate=1000");
	set("net.rate_burst=8");
	set("net.rate_slip=2");
	set("net.rate_prefix=24");
	set("net.max_ids_per_request=5000");
	if (fw_layout_init(&lay, conf.id.epoch_ms, conf.id.datacenter_bits, conf.id.worker_bits,
			   conf.id.sequence_bits, 0) ||
	    fwire_pkt_ctx_init(&px, &conf, NULL, NULL) ||
	    fwire_lcore_init(lc0, &px, &conf, &lay, 0, rte_lcore_id(), 0) ||
	    fwire_lcore_rate_init(lc0, &conf, 1) || !lc0->rate)
		abort();
	fw_rate_config_default(&rate_cfg);
	rate_cfg.rate = 1000;
	rate_cfg.burst = 8;
	rate_cfg.slip = 2;
	rate_cfg.prefix_len = 24;
	rate_cfg.tsc_hz = rte_get_tsc_hz();
	rate_cfg.entries = 16;
	rate_mem = rte_zmalloc("fuzz_rate", fw_rate_memsize(&rate_cfg), RTE_CACHE_LINE_SIZE);
	if (!rate_mem)
		abort();
	atexit(report);
	/* a mark far ahead: the generator issues until its sequence runs out */
	fw_gen_set_mark(&lc0->serve.gen, now_ms + 1000000000);

	port.port_id = 0;
	port.nb_queues = 1;
	port.addr_be = rte_cpu_to_be_32(RTE_IPV4(10, 77, 0, 2));
	struct rte_ether_addr mac = {{0x02, 0x00, 0x00, 0x77, 0x00, 0x02}};
	port.mac = mac;
	snprintf(port.name, sizeof(port.name), "fuzz");
	static const uint8_t a6[16] = {0xfd, 0x77, [15] = 2}; /* fd77::2 */
	port.n_addr6 = 1;
	memcpy(port.addr6[0], a6, 16);
	return 0;
}

static uint64_t counted(const struct fwire_lcore *lc)
{
	uint64_t n = lc->st.arp + lc->st.nd + lc->st.icmp + lc->st.udp;

	for (int d = 0; d < FW_DROP_COUNT; d++)
		n += lc->st.drop[d];
	return n;
}

static void fix_up(uint8_t *f, size_t len, uint8_t how)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;

	if (len < L2 + L3 || eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4))
		return;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	if (how & 0x10) {
		eth->dst_addr = port.mac;
		ip->dst_addr = port.addr_be;
	}
	size_t ihl = (size_t)(ip->version_ihl & 0xf) * 4;
	if (how & 0x04) {
		ip->total_length = rte_cpu_to_be_16((uint16_t)(len - L2));
		if (ihl == L3 && len >= L2 + L3 + L4 && ip->next_proto_id == IPPROTO_UDP) {
			struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
			udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - L2 - L3));
		}
	}
	if (how & 0x01) {
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	size_t ip_len = rte_be_to_cpu_16(ip->total_length);
	if ((how & 0x02) && ihl == L3 && ip->next_proto_id == IPPROTO_UDP && ip_len >= L3 + L4 &&
	    ip_len <= len - L2) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		if (rte_be_to_cpu_16(udp->dgram_len) == ip_len - L3) {
			udp->dgram_cksum = 0;
			udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
		}
	}
}

/* The RX checksum flags a device would give the frame at @f (@seg bytes) for @verdict. */
static uint64_t rx_verdict(const uint8_t *f, size_t seg, uint8_t verdict)
{
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)f;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);

	switch (verdict) {
	case 2:
		return RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_BAD;
	case 3:
		return RTE_MBUF_F_RX_IP_CKSUM_NONE | RTE_MBUF_F_RX_L4_CKSUM_NONE;
	case 1:
		break;
	default:
		return 0;
	}
	if (seg < L2 + L3 || eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
	    ip->version_ihl != RTE_IPV4_VHL_DEF || rte_raw_cksum(ip, L3) != 0xffff)
		return 0;
	uint64_t fl = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
	size_t ip_len = rte_be_to_cpu_16(ip->total_length);
	if (ip->next_proto_id == IPPROTO_UDP && ip_len >= L3 + L4 && ip_len <= seg - L2) {
		const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
		if (rte_be_to_cpu_16(udp->dgram_len) == ip_len - L3 &&
		    (udp->dgram_cksum == 0 || __rte_ipv4_udptcp_cksum(ip, udp) == 0xffff))
			fl |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	}
	return fl;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fwire_lcore *lc = lc0;

	if (size < 3)
		return 0;
	uint8_t how = data[0], hide = data[1] & 0x3f, verdict = data[1] >> 6, charge = data[2];
	data += 3;
	size -= 3;
	lc->rate = rate = fw_rate_init(rate_mem, &rate_cfg);

	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	if (!m)
		abort();
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	size_t room = rte_pktmbuf_tailroom(m);
	size_t len = FW_MIN(size, room);
	memcpy(f, data, len);
	fix_up(f, len, how);
	fuzz6_fix_up(f, len, how, &port);
	size_t seg = len > hide ? len - hide : 0;
	m->data_len = (uint16_t)seg;
	m->pkt_len = (uint32_t)seg;
	m->ol_flags = rx_verdict(f, seg, verdict);
	port.tx_cksum = how & 0x08;
	fake_tsc += (uint64_t)(how >> 5) * (rte_get_tsc_hz() / 4000);
	lc->tsc = fake_tsc;
	now_ms++;

	/* what the request was, before it is answered in place */
	struct rte_ether_hdr req_eth;
	struct rte_ipv4_hdr req_ip;
	bool ipv4 = seg >= L2 + L3 &&
		    ((struct rte_ether_hdr *)f)->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4);
	memcpy(&req_eth, f, FW_MIN(seg, L2));
	if (ipv4)
		memcpy(&req_ip, f + L2, L3);
	bool trusted =
		ipv4 && fw_conf_trusted(&conf.net.trusted, rte_be_to_cpu_32(req_ip.src_addr));
	for (unsigned i = 0; ipv4 && i < charge; i++)
		fw_rate_check(rate, rte_be_to_cpu_32(req_ip.src_addr), fake_tsc, NULL);
	struct fuzz6_req req6;
	if (fuzz6_save(f, seg, &req6)) {
		trusted = fuzz6_trusted(&conf, &req6);
		fuzz6_charge(rate, &req6, charge, fake_tsc);
	}

	uint8_t *buf = m->buf_addr;
	ASAN_POISON_MEMORY_REGION(buf, m->data_off);
	if (!trusted)
		ASAN_POISON_MEMORY_REGION(f + seg, m->buf_len - m->data_off - seg);
	uint64_t before = counted(lc);
	bool reply = fwire_pkt_answer(lc, &port, m, now_ms);
	ASAN_UNPOISON_MEMORY_REGION(buf, m->buf_len);
	if (counted(lc) != before + 1)
		abort(); /* every frame is answered or dropped, and counted once */

	if (reply && req6.seg)
		fuzz6_check_reply(&conf, &port, &req6, trusted, m);
	else if (reply) {
		struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
		if (m->data_len < L2 || m->data_len > room || m->pkt_len != m->data_len)
			abort();
		if (!rte_is_same_ether_addr(&eth->src_addr, &port.mac))
			abort();
		/* ARP answers the sender hardware address it names; the rest the frame's */
		const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);
		const struct rte_ether_addr *to = eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_ARP)
							  ? &arp->arp_data.arp_tha
							  : &req_eth.src_addr;
		if (!rte_is_same_ether_addr(&eth->dst_addr, to))
			abort();
		if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4)) {
			struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
			uint16_t ip_len = rte_be_to_cpu_16(ip->total_length);
			if (!ipv4 || ip->dst_addr != req_ip.src_addr || ip_len != m->data_len - L2)
				abort();
			if (!port.tx_cksum && rte_raw_cksum(ip, L3) != 0xffff)
				abort();
			if (ip->next_proto_id == IPPROTO_ICMP &&
			    ip_len != rte_be_to_cpu_16(req_ip.total_length))
				abort();
			if (ip->next_proto_id == IPPROTO_UDP) {
				struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
				uint8_t *p = (uint8_t *)(udp + 1);
				size_t n = ip_len - L3 - L4;
				struct fw_wire_reply r;
				if (!trusted && ip_len > rte_be_to_cpu_16(req_ip.total_length))
					abort(); /* amplification */
				if (n > conf.net.max_reply_bytes || n < FW_WIRE_HDR_LEN)
					abort();
				if (!port.tx_cksum && __rte_ipv4_udptcp_cksum(ip, udp) != 0xffff)
					abort();
				if (fw_wire_reply_size(p[3] & 0x7f, 0) != 0 &&
				    fw_wire_parse_reply(p, n, &r) != 0)
					abort();
			}
		}
	}
	rte_pktmbuf_free(m);
	return 0;
}

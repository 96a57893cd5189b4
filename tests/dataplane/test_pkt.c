/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire's packet path (app/flakewire pkt.c, lcore.c) on real mbufs from
 * a test mempool: EAL without hugepages, PCI or ports, one lcore. What the
 * fuzzer cannot assert, asserted here:
 *   - RX checksum verdicts: NONE (data valid, field not final) is answered
 *     with correct checksums; BAD is dropped (issue 11, fix 1);
 *   - ICMP echo requests with a bad checksum are dropped and counted (fix 3);
 *   - [net] rate is shared between lcores (fix 4);
 *   - fw_serve_answer_fast() answers exactly as fw_serve_answer();
 *   - a burst's counters add up, the ones it tallies once a burst included;
 *   - with TX checksum offload the reply carries what the device starts
 *     from, and RX verdicts GOOD skip the software pass, BAD still drops;
 *   - martians (issue 33): with [net] allow = 0.0.0.0/0,::/0 and the default
 *     trusted loopback prefixes, every martian source (IPv4, IPv6, IPv4-mapped,
 *     our own addresses) and every group source MAC gets no reply and is
 *     counted by its reason, on the single-frame, burst and offload paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <arpa/inet.h>

#include "lcore.h"
#include "pkt.h"
#include "port.h"
#include "fw_wire.h"

int fwire_logtype; /* main.c's, which the test does not link */

#define L2 ((uint16_t)sizeof(struct rte_ether_hdr))
#define L3 ((uint16_t)sizeof(struct rte_ipv4_hdr))
#define L4 ((uint16_t)sizeof(struct rte_udp_hdr))

/* What the harness builds instead of an application: a context, one lcore, one port. */
static struct fw_conf conf;
static struct fw_layout lay;
static struct fwire_pkt_ctx px;
static struct fwire_lcore *lc0;
static struct fwire_port port;
static struct rte_mempool *pool;
static char runtime_dir[256];
static const uint64_t now_ms = 1000000000;
static const struct rte_ether_addr peer_mac = {{0x02, 0, 0, 0x77, 0, 0x01}};
static const uint32_t peer_ip = RTE_IPV4(10, 77, 0, 1);

static int setup(void **state)
{
	char prefix[64];

	(void)state;
	snprintf(prefix, sizeof(prefix), "testpkt-%d", (int)getpid());
	char *eal[] = {"test_pkt", "--no-huge",   "--no-pci",      "-m",
		       "128",      "--no-shconf", "--file-prefix", prefix,
		       "-l",       "0",           "--log-level=0", "--no-telemetry"};
	if (rte_eal_init((int)FW_ARRAY_SIZE(eal), eal) < 0)
		return -1;
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	fwire_logtype = RTE_LOGTYPE_USER1;
	pool = rte_pktmbuf_pool_create("testpkt", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	lc0 = rte_zmalloc("test_lcore", sizeof(*lc0), RTE_CACHE_LINE_SIZE);
	if (!pool || !lc0)
		return -1;
	fw_conf_init(&conf);
	if (fw_layout_init(&lay, conf.id.epoch_ms, conf.id.datacenter_bits, conf.id.worker_bits,
			   conf.id.sequence_bits, 0) ||
	    fwire_pkt_ctx_init(&px, &conf, NULL, NULL) ||
	    fwire_lcore_init(lc0, &px, &conf, &lay, 0, rte_lcore_id(), 0) ||
	    fwire_lcore_rate_init(lc0, &conf, 1))
		return -1;
	fw_gen_set_mark(&lc0->serve.gen, now_ms + 1000000000);
	port.nb_queues = 1;
	port.addr_be = rte_cpu_to_be_32(RTE_IPV4(10, 77, 0, 2));
	struct rte_ether_addr mac = {{0x02, 0, 0, 0x77, 0, 0x02}};
	port.mac = mac;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rte_eal_cleanup();
	rmdir(runtime_dir); /* empty once EAL is down (--no-shconf) */
	return 0;
}

/* An Ethernet + IPv4 frame to the port from the peer carrying @l4 (@n bytes) of @proto. */
static struct rte_mbuf *frame(uint8_t proto, const void *l4, uint16_t n)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);

	eth->dst_addr = port.mac;
	eth->src_addr = peer_mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(L3 + n));
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->src_addr = rte_cpu_to_be_32(peer_ip);
	ip->dst_addr = port.addr_be;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	memcpy(ip + 1, l4, n);
	m->data_len = (uint16_t)(L2 + L3 + n);
	m->pkt_len = m->data_len;
	return m;
}

/* A single-ID request (padded: 32 bytes), UDP checksum correct. */
static struct rte_mbuf *id_request(void)
{
	uint8_t b[L4 + 64];
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)b;
	int len = fw_wire_write_request(udp + 1, sizeof(b) - L4, FW_WIRE_OP_ID, 1, 42, true);
	assert_int_equal(len, 32);
	udp->src_port = RTE_BE16(40000);
	udp->dst_port = RTE_BE16(FW_WIRE_DEFAULT_PORT);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
	udp->dgram_cksum = 0;
	struct rte_mbuf *m = frame(IPPROTO_UDP, b, (uint16_t)(L4 + len));
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, L2);
	udp = (struct rte_udp_hdr *)(ip + 1);
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	return m;
}

static struct rte_ipv4_hdr *ip_of(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, L2);
}

static struct rte_udp_hdr *udp_of(struct rte_mbuf *m)
{
	return (struct rte_udp_hdr *)(ip_of(m) + 1);
}

/* The reply is to the peer, its checksums verify, and it carries one ID. */
static void assert_id_reply(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = ip_of(m);
	struct fw_wire_reply r;

	assert_int_equal(ip->dst_addr, rte_cpu_to_be_32(peer_ip));
	assert_int_equal(rte_raw_cksum(ip, L3), 0xffff);
	assert_int_not_equal(udp_of(m)->dgram_cksum, 0);
	assert_int_equal(__rte_ipv4_udptcp_cksum(ip, udp_of(m)), 0xffff);
	assert_int_equal(fw_wire_parse_reply(udp_of(m) + 1,
					     rte_be_to_cpu_16(ip->total_length) - L3 - L4, &r),
			 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	assert_int_equal(r.hdr.count, 1);
	assert_int_equal(r.hdr.tag, 42);
}

static bool answer(struct rte_mbuf *m)
{
	return fwire_pkt_answer(lc0, &port, m, now_ms);
}

/* The UDP checksum field as virtio leaves it for a packet of the same host: the pseudo header only.
 */
static void make_partial_udp(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = ip_of(m);

	udp_of(m)->dgram_cksum = rte_ipv4_phdr_cksum(ip, 0);
}

static void test_rx_l4_cksum_none(void **state)
{
	struct fwire_lcore_stats *st = &lc0->st;
	(void)state;

	/* without a verdict, a partial checksum is a bad checksum */
	struct rte_mbuf *m = id_request();
	make_partial_udp(m);
	uint64_t bad = st->drop[FW_DROP_BAD_CSUM];
	assert_false(answer(m));
	assert_int_equal(st->drop[FW_DROP_BAD_CSUM], bad + 1);
	rte_pktmbuf_free(m);

	/* NONE: the data is valid, the field is not final: answered, checksums right */
	m = id_request();
	make_partial_udp(m);
	m->ol_flags = RTE_MBUF_F_RX_L4_CKSUM_NONE;
	uint64_t udp = st->udp;
	assert_true(answer(m));
	assert_int_equal(st->udp, udp + 1);
	assert_id_reply(m);
	rte_pktmbuf_free(m);
}

static void test_rx_ip_cksum_none(void **state)
{
	struct fwire_lcore_stats *st = &lc0->st;
	(void)state;

	struct rte_mbuf *m = id_request();
	ip_of(m)->hdr_checksum = 0; /* not final */
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_NONE | RTE_MBUF_F_RX_L4_CKSUM_NONE;
	make_partial_udp(m);
	uint64_t udp = st->udp;
	assert_true(answer(m));
	assert_int_equal(st->udp, udp + 1);
	assert_id_reply(m);
	rte_pktmbuf_free(m);
}

static void test_rx_cksum_bad(void **state)
{
	struct fwire_lcore_stats *st = &lc0->st;
	(void)state;

	uint64_t flags[] = {RTE_MBUF_F_RX_IP_CKSUM_BAD, RTE_MBUF_F_RX_L4_CKSUM_BAD};
	for (unsigned i = 0; i < FW_ARRAY_SIZE(flags); i++) {
		struct rte_mbuf *m = id_request(); /* correct checksums, the device says bad */
		m->ol_flags = flags[i];
		uint64_t bad = st->drop[FW_DROP_BAD_CSUM];
		assert_false(answer(m));
		assert_int_equal(st->drop[FW_DROP_BAD_CSUM], bad + 1);
		rte_pktmbuf_free(m);
	}
	/* GOOD from the device: answered without a software pass, checksums written right */
	struct rte_mbuf *m = id_request();
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	assert_true(answer(m));
	assert_id_reply(m);
	rte_pktmbuf_free(m);
}

static struct rte_mbuf *echo_request(void)
{
	uint8_t b[sizeof(struct rte_icmp_hdr) + 24];
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)b;

	memset(b, 0, sizeof(b));
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	icmp->icmp_ident = RTE_BE16(7);
	icmp->icmp_seq_nb = RTE_BE16(1);
	memcpy(b + sizeof(*icmp), "flakewire echo payload!", 24);
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(b, sizeof(b));
	return frame(IPPROTO_ICMP, b, sizeof(b));
}

static void test_icmp_bad_cksum(void **state)
{
	struct fwire_lcore_stats *st = &lc0->st;
	(void)state;

	struct rte_mbuf *m = echo_request();
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(ip_of(m) + 1);
	icmp->icmp_cksum ^= RTE_BE16(0x0100);
	uint64_t bad = st->drop[FW_DROP_BAD_CSUM], echo = st->icmp;
	assert_false(answer(m));
	assert_int_equal(st->drop[FW_DROP_BAD_CSUM], bad + 1);
	assert_int_equal(st->icmp, echo);
	rte_pktmbuf_free(m);

	m = echo_request();
	assert_true(answer(m));
	assert_int_equal(st->icmp, echo + 1);
	icmp = (struct rte_icmp_hdr *)(ip_of(m) + 1);
	assert_int_equal(icmp->icmp_type, RTE_IP_ICMP_ECHO_REPLY);
	assert_int_equal(rte_raw_cksum(icmp, sizeof(*icmp) + 24), 0xffff);
	assert_int_equal(rte_raw_cksum(ip_of(m), L3), 0xffff);
	rte_pktmbuf_free(m);
}

/* One source spread over two lcores gets the configured budget in all, not twice it. */
static void test_rate_shared(void **state)
{
	struct fw_conf c2;
	struct fwire_pkt_ctx px2;
	struct fwire_lcore *l2 = rte_zmalloc("test_rate", 2 * sizeof(*l2), RTE_CACHE_LINE_SIZE);
	(void)state;

	uint32_t r, b;
	fw_rate_share(1000, 100, 2, &r, &b);
	assert_int_equal(r, 500);
	assert_int_equal(b, 50);
	fw_rate_share(1, 1, 4, &r, &b); /* never 0, which would mean no limit */
	assert_int_equal(r, 1);
	assert_int_equal(b, 1);
	fw_rate_share(0, 100, 4, &r, &b);
	assert_int_equal(r, 0);

	assert_non_null(l2);
	fw_conf_init(&c2);
	char err[256];
	assert_int_equal(fw_conf_set(&c2, "net.rate=1000", 0, err, sizeof(err)), 0);
	assert_int_equal(fw_conf_set(&c2, "net.rate_burst=100", 0, err, sizeof(err)), 0);
	assert_int_equal(fw_conf_set(&c2, "net.rate_slip=0", 0, err, sizeof(err)), 0);
	assert_int_equal(fwire_pkt_ctx_init(&px2, &c2, NULL, NULL), 0);
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(fwire_lcore_init(&l2[i], &px2, &c2, &lay, i, rte_lcore_id(), i),
				 0);
		assert_int_equal(fwire_lcore_rate_init(&l2[i], &c2, 2), 0);
	}
	/* 400 back-to-back requests, alternating lcores (RSS on the source port) */
	unsigned pass = 0;
	uint64_t tsc = 1000000;
	for (unsigned i = 0; i < 400; i++)
		pass += fw_rate_check(l2[i % 2].rate, peer_ip, tsc, NULL) == FW_RATE_PASS;
	assert_true(pass <= 100);
	assert_true(pass >= 98);
	for (unsigned i = 0; i < 2; i++)
		fwire_lcore_rate_free(&l2[i]);
	rte_free(l2);
}

/* fw_serve_answer_fast() and fw_serve_answer(): same bytes, same counters, always. */
static void test_serve_fast_same(void **state)
{
	struct {
		uint8_t op, version, status, flags;
		uint16_t count;
		size_t len, cap;
		bool trusted;
		int reply_bit;
	} c[] = {
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 32, 1472, false, 0}, /* the fast one */
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 24, 1472, false, 0}, /* no room: REFUSED */
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 24, 1472, true, 0},  /* trusted: may grow */
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 32, 24, true, 0},    /* cap 24 */
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 32, 31, false, 0},
		{FW_WIRE_OP_ID, 1, 3, 9, 1, 32, 1472, false, 0}, /* status, flags set */
		{FW_WIRE_OP_ID, 2, 0, 0, 1, 32, 1472, false, 0}, /* version */
		{FW_WIRE_OP_ID, 1, 0, 0, 2, 32, 1472, false, 0}, /* count */
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 32, 1472, false, 1}, /* a reply */
		{FW_WIRE_OP_LIST, 1, 0, 0, 1, 32, 1472, false, 0},
		{FW_WIRE_OP_RANGE, 1, 0, 0, 5, 48, 1472, false, 0},
		{FW_WIRE_OP_INFO, 1, 0, 0, 0, 56, 1472, false, 0},
		{FW_WIRE_OP_ID, 1, 0, 0, 1, 23, 1472, true, 0}, /* short */
	};
	struct fw_layout layout;
	struct fw_gen_config gcfg;
	struct fw_serve *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	(void)state;

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(fw_layout_init(&layout, FW_DEFAULT_EPOCH_MS, 5, 5, 12, 0), 0);
	fw_gen_config_default(&gcfg);
	gcfg.datacenter = 3;
	gcfg.worker = 17;
	assert_int_equal(fw_serve_init(a, &layout, &gcfg, NULL), 0);
	assert_int_equal(fw_serve_init(b, &layout, &gcfg, NULL), 0);
	fw_gen_set_mark(&a->gen, now_ms + 100000);
	fw_gen_set_mark(&b->gen, now_ms + 100000);
	a->extra_flags = b->extra_flags = FW_WIRE_F_SLEWING;
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 0; i < FW_ARRAY_SIZE(c); i++) {
			uint8_t qa[1472], qb[1472];
			memset(qa, 0, sizeof(qa));
			qa[0] = 0x46;
			qa[1] = 0x4B;
			qa[2] = c[i].version;
			qa[3] = (uint8_t)(c[i].op | (c[i].reply_bit ? FW_WIRE_OP_REPLY : 0));
			qa[4] = c[i].status;
			qa[5] = c[i].flags;
			qa[6] = (uint8_t)(c[i].count >> 8);
			qa[7] = (uint8_t)c[i].count;
			qa[15] = (uint8_t)(i + 1);
			qa[17] = 0x55; /* junk where the reply writes datacenter/worker */
			memcpy(qb, qa, sizeof(qb));
			uint64_t now =
				now_ms + round; /* the first call of a ms takes the slow path */
			int ra = fw_serve_answer_fast(a, now, qa, c[i].len, c[i].cap, c[i].trusted);
			int rb = fw_serve_answer(b, now, qb, c[i].len, c[i].cap, c[i].trusted);
			assert_int_equal(ra, rb);
			assert_memory_equal(qa, qb, sizeof(qa));
			assert_memory_equal(&a->stats, &b->stats, sizeof(a->stats));
			assert_memory_equal(&a->gen.stats, &b->gen.stats, sizeof(a->gen.stats));
		}
	}
	assert_true(a->stats.ids >= 6);
	/* refusals: the mark reached (RETRY_AFTER), the clock far behind (CLOCK_UNSAFE) */
	assert_int_equal(fw_serve_init(a, &layout, &gcfg, NULL), 0);
	assert_int_equal(fw_serve_init(b, &layout, &gcfg, NULL), 0);
	fw_gen_set_mark(&a->gen, now_ms + 3);
	fw_gen_set_mark(&b->gen, now_ms + 3);
	uint64_t nows[] = {now_ms + 5, now_ms + 5,    now_ms + 2,
			   now_ms + 2, now_ms - 5000, now_ms + 3};
	for (unsigned i = 0; i < FW_ARRAY_SIZE(nows); i++) {
		uint8_t qa[64], qb[64];
		memset(qa, 0, sizeof(qa));
		assert_int_equal(
			fw_wire_write_request(qa, sizeof(qa), FW_WIRE_OP_ID, 1, 99 + i, true), 32);
		memcpy(qb, qa, sizeof(qb));
		int ra = fw_serve_answer_fast(a, nows[i], qa, 32, 1472, false);
		int rb = fw_serve_answer(b, nows[i], qb, 32, 1472, false);
		assert_int_equal(ra, rb);
		assert_memory_equal(qa, qb, sizeof(qa));
		assert_memory_equal(&a->stats, &b->stats, sizeof(a->stats));
		assert_memory_equal(&a->gen.stats, &b->gen.stats, sizeof(a->gen.stats));
	}
	assert_true(a->stats.status[FW_WIRE_ST_RETRY_AFTER] >= 1);
	assert_true(a->stats.status[FW_WIRE_ST_CLOCK_UNSAFE] >= 1);
	free(a);
	free(b);
}

/*
 * A run (fw_serve_run_*: the generator's fast path held through a burst)
 * against fw_serve_answer() per datagram: bursts of up to 40 mixed requests,
 * mostly plain single IDs, at clock readings that stay, advance, step back
 * and pass the mark, in a layout of 8 IDs a ms so that runs are used up and
 * borrow mid-burst. Every reply byte for byte, every counter at each burst's
 * end, and the IDs strictly increasing.
 */
static void test_serve_run_same(void **state)
{
	struct fw_layout layout;
	struct fw_gen_config gcfg;
	struct fw_serve *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint64_t x = 0x9e3779b97f4a7c15ull, last_id = 0, run_ids = 0;
	uint64_t now = now_ms;
	(void)state;

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(fw_layout_init(&layout, FW_DEFAULT_EPOCH_MS, 5, 5, 5, 0), 0);
	fw_gen_config_default(&gcfg);
	gcfg.worker = 9;
	assert_int_equal(fw_serve_init(a, &layout, &gcfg, NULL), 0);
	assert_int_equal(fw_serve_init(b, &layout, &gcfg, NULL), 0);
	for (unsigned burst = 0; burst < 400; burst++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned step = (unsigned)(x % 16);
		now = step < 6 ? now : step < 14 ? now + 1 : step == 14 ? now - 3 : now + 40;
		a->extra_flags = b->extra_flags = burst % 3 ? 0 : FW_WIRE_F_SLEWING;
		fw_gen_set_mark(&a->gen, now + 2); /* the keeper's reservation, 2 ms ahead */
		fw_gen_set_mark(&b->gen, now + 2);
		struct fw_serve_run r;
		fw_serve_run_begin(a, now, &r);
		unsigned n = 1 + (unsigned)(x >> 20) % 24;
		for (unsigned i = 0; i < n; i++) {
			uint8_t qa[256], qb[256];
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			unsigned kind = (unsigned)(x % 20);
			uint8_t op = kind < 16   ? FW_WIRE_OP_ID
				     : kind < 18 ? FW_WIRE_OP_LIST
						 : FW_WIRE_OP_RANGE;
			uint16_t count = op == FW_WIRE_OP_ID ? 1 : (uint16_t)(2 + kind % 3);
			bool trusted = kind == 15 || kind == 19;
			memset(qa, 0, sizeof(qa));
			int len = fw_wire_write_request(qa, sizeof(qa), op, count, x, !trusted);
			assert_true(len > 0);
			if (kind == 14)
				qa[2] = 2; /* another version: answered by fw_serve_answer */
			memcpy(qb, qa, sizeof(qb));
			uint64_t seq = r.gen.seq, seq0 = r.gen.seq0;
			int ra = fw_serve_run_answer(a, &r, now, qa, (size_t)len, sizeof(qa),
						     trusted);
			int rb = fw_serve_answer(b, now, qb, (size_t)len, sizeof(qb), trusted);
			assert_int_equal(ra, rb);
			assert_memory_equal(qa, qb, sizeof(qa));
			run_ids += r.gen.seq0 == seq0 && r.gen.seq == seq + 1; /* the run's own */
			struct fw_wire_reply rep;
			if (ra > 0 && fw_wire_parse_reply(qa, (size_t)ra, &rep) == 0 &&
			    rep.hdr.status == FW_WIRE_ST_OK && op == FW_WIRE_OP_ID) {
				assert_true(rep.body.ids[0] > last_id);
				last_id = rep.body.ids[0];
			}
		}
		fw_serve_run_end(a, &r);
		assert_memory_equal(&a->stats, &b->stats, sizeof(a->stats));
		assert_memory_equal(&a->gen.stats, &b->gen.stats, sizeof(a->gen.stats));
		assert_int_equal(a->gen.next_seq, b->gen.next_seq);
	}
	/*
	 * Every path was taken: the run's own answers (a seventh of the IDs:
	 * each burst's first request at a new ms, the LIST/RANGE ones and those
	 * past a ms that started where the last one stopped are not), borrowing,
	 * and the mark reached.
	 */
	assert_true(run_ids * 10 > a->stats.ids);
	assert_true(a->gen.stats.borrowed_ms > 0);
	assert_true(a->stats.status[FW_WIRE_ST_RETRY_AFTER] > 0);
	free(a);
	free(b);
}

/* A burst of mixed frames: replies and drops partition it, the counters add up. */
static void test_burst_counts(void **state)
{
	struct fwire_lcore *lc = lc0;
	struct rte_mbuf *pkts[6], *tx[6], *fr[6];
	(void)state;

	pkts[0] = id_request();
	pkts[1] = id_request();
	ip_of(pkts[1])->hdr_checksum ^= 1; /* bad IPv4 checksum */
	pkts[2] = echo_request();
	pkts[3] = id_request();
	ip_of(pkts[3])->fragment_offset = RTE_BE16(RTE_IPV4_HDR_MF_FLAG);
	ip_of(pkts[3])->hdr_checksum = 0;
	ip_of(pkts[3])->hdr_checksum = rte_ipv4_cksum(ip_of(pkts[3]));
	pkts[4] = id_request();
	rte_pktmbuf_mtod(pkts[4], struct rte_ether_hdr *)->ether_type =
		RTE_BE16(RTE_ETHER_TYPE_LLDP); /* not IP (IPv6 has its own path, pkt6.c) */
	pkts[5] = id_request();
	udp_of(pkts[5])->dst_port = RTE_BE16(4243);

	struct fwire_lcore_stats before = lc->st;
	uint16_t nfr = 0;
	uint16_t ntx = fwire_pkt_burst(lc, &port, pkts, 6, now_ms, tx, fr, &nfr);
	assert_int_equal(ntx, 2);
	assert_int_equal(nfr, 4);
	assert_ptr_equal(tx[0], pkts[0]);
	assert_ptr_equal(tx[1], pkts[2]);
	assert_id_reply(tx[0]);
	assert_int_equal(lc->st.rx, before.rx + 6);
	assert_int_equal(lc->st.udp, before.udp + 1);
	assert_int_equal(lc->st.icmp, before.icmp + 1);
	assert_int_equal(lc->st.drop[FW_DROP_BAD_CSUM], before.drop[FW_DROP_BAD_CSUM] + 1);
	assert_int_equal(lc->st.drop[FW_DROP_FRAG], before.drop[FW_DROP_FRAG] + 1);
	assert_int_equal(lc->st.drop[FW_DROP_NOT_IP], before.drop[FW_DROP_NOT_IP] + 1);
	assert_int_equal(lc->st.drop[FW_DROP_PORT], before.drop[FW_DROP_PORT] + 1);
	rte_pktmbuf_free_bulk(pkts, 6);
}

/* A UDP request over IPv6 to the port's address fd00::2 from fd00::1, checksum set. */
static struct rte_mbuf *id_request6(uint8_t op, uint16_t count)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	int len = fw_wire_write_request(udp + 1, 64, op, count, 42, true);
	assert_true(len > 0);

	eth->dst_addr = port.mac;
	eth->src_addr = peer_mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
	memset(ip, 0, sizeof(*ip));
	ip->vtc_flow = RTE_BE32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
	ip->proto = IPPROTO_UDP;
	ip->hop_limits = 64;
	ip->src_addr[0] = ip->dst_addr[0] = 0xfd;
	ip->src_addr[15] = 1;
	ip->dst_addr[15] = 2;
	udp->src_port = RTE_BE16(40000);
	udp->dst_port = RTE_BE16(FW_WIRE_DEFAULT_PORT);
	udp->dgram_len = ip->payload_len;
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
	m->data_len = (uint16_t)(L2 + sizeof(*ip) + L4 + len);
	m->pkt_len = m->data_len;
	return m;
}

/* The IDs of the reply in @m (IPv4 or IPv6) into @ids; returns how many. */
static unsigned reply_ids(struct rte_mbuf *m, uint64_t *ids)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	size_t l3 =
		eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6) ? sizeof(struct rte_ipv6_hdr) : L3;
	struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, L2 + l3);
	struct fw_wire_reply r;

	assert_int_equal(fw_wire_parse_reply(udp + 1, rte_be_to_cpu_16(udp->dgram_len) - L4, &r),
			 0);
	assert_int_equal(r.hdr.status, FW_WIRE_ST_OK);
	for (unsigned i = 0; i < r.hdr.count; i++)
		ids[i] = r.body.ids[i];
	return r.hdr.count;
}

/*
 * The burst's run of IDs (held in registers) and every other way a frame
 * gets IDs in one burst: IPv6 (pkt6.c), a LIST request, a frame with
 * Ethernet padding (the slow path). Every ID in frame order is above the
 * one before: none is issued twice, none out of order.
 */
static void test_burst_ids_in_order(void **state)
{
	struct fwire_lcore *lc = lc0;
	struct fwire_port *p0 = &port;
	struct rte_mbuf *pkts[12], *tx[12], *fr[12];
	uint64_t ids[16], last = 0;
	(void)state;

	p0->n_addr6 = 1;
	memset(p0->addr6[0], 0, 16);
	p0->addr6[0][0] = 0xfd;
	p0->addr6[0][15] = 2;
	for (unsigned i = 0; i < 12; i++) {
		switch (i % 4) {
		case 1:
			pkts[i] = id_request6(FW_WIRE_OP_ID, 1);
			break;
		case 2:
			pkts[i] = i == 2 ? id_request6(FW_WIRE_OP_LIST, 3) : id_request();
			if (i != 2) { /* Ethernet padding after the datagram */
				pkts[i]->data_len += 6;
				pkts[i]->pkt_len += 6;
			}
			break;
		case 3: {
			uint8_t b[L4 + 64];
			struct rte_udp_hdr *udp = (struct rte_udp_hdr *)b;
			int len = fw_wire_write_request(udp + 1, 64, FW_WIRE_OP_LIST, 4, 42, true);
			udp->src_port = RTE_BE16(40001);
			udp->dst_port = RTE_BE16(FW_WIRE_DEFAULT_PORT);
			udp->dgram_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
			udp->dgram_cksum = 0; /* none sent */
			pkts[i] = frame(IPPROTO_UDP, b, (uint16_t)(L4 + len));
			break;
		}
		default:
			pkts[i] = id_request();
		}
	}
	uint64_t issued = lc->serve.gen.stats.issued;
	uint16_t nfr = 0;
	uint16_t ntx = fwire_pkt_burst(lc, p0, pkts, 12, now_ms, tx, fr, &nfr);
	p0->n_addr6 = 0;
	assert_int_equal(ntx, 12);
	unsigned total = 0;
	for (unsigned i = 0; i < ntx; i++) {
		assert_ptr_equal(tx[i], pkts[i]);
		unsigned n = reply_ids(tx[i], ids);
		for (unsigned k = 0; k < n; k++) {
			assert_true(ids[k] > last);
			last = ids[k];
		}
		total += n;
	}
	/* 3 IPv4 and 3 IPv6 single IDs, an IPv6 LIST of 3, 2 padded frames, 3 LISTs of 4 */
	assert_int_equal(total, 3 + 3 + 3 + 2 + 3 * 4);
	assert_int_equal(lc->serve.gen.stats.issued, issued + total);
	rte_pktmbuf_free_bulk(pkts, 12);
}

/* What a device with TX checksum offload starts from, then the checksums it writes. */
static void assert_tx_offload_reply(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = ip_of(m);
	struct rte_udp_hdr *udp = udp_of(m);
	const uint64_t txf = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;

	assert_int_equal(m->ol_flags & txf, txf);
	assert_int_equal(m->l2_len, L2);
	assert_int_equal(m->l3_len, L3);
	assert_int_equal(ip->hdr_checksum, 0);
	assert_int_equal(udp->dgram_cksum, rte_ipv4_phdr_cksum(ip, m->ol_flags));
	/* the device's part */
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	assert_id_reply(m);
}

static void test_tx_offload(void **state)
{
	struct fwire_lcore *lc = lc0;
	struct fwire_port *p0 = &port;
	const uint64_t good = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	struct rte_mbuf *pkts[6], *tx[6], *fr[6];
	(void)state;

	pkts[0] = id_request(); /* verified by the device */
	pkts[0]->ol_flags = good;
	pkts[1] = id_request(); /* the device says the IPv4 checksum is bad */
	pkts[1]->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	pkts[2] = id_request(); /* ... the UDP one */
	pkts[2]->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD;
	pkts[3] = id_request(); /* no verdict: verified in software, and wrong */
	udp_of(pkts[3])->dgram_cksum ^= RTE_BE16(0x0100);
	pkts[4] = id_request(); /* no verdict, right */
	pkts[5] = id_request(); /* GOOD, and a corrupt IPv4 checksum the device vouched for */
	pkts[5]->ol_flags = good;
	ip_of(pkts[5])->hdr_checksum ^= 1;

	struct fwire_lcore_stats before = lc->st;
	struct fw_serve_stats sbefore = lc->serve.stats;
	uint16_t nfr = 0;
	p0->tx_cksum = true;
	uint16_t ntx = fwire_pkt_burst(lc, p0, pkts, 6, now_ms, tx, fr, &nfr);
	p0->tx_cksum = false;
	assert_int_equal(ntx, 3);
	assert_int_equal(nfr, 3);
	assert_ptr_equal(tx[0], pkts[0]);
	assert_ptr_equal(tx[1], pkts[4]);
	assert_ptr_equal(tx[2], pkts[5]);
	for (unsigned i = 0; i < ntx; i++)
		assert_tx_offload_reply(tx[i]);
	assert_int_equal(lc->st.rx, before.rx + 6);
	assert_int_equal(lc->st.udp, before.udp + 3);
	assert_int_equal(lc->st.drop[FW_DROP_BAD_CSUM], before.drop[FW_DROP_BAD_CSUM] + 3);
	/* the serve counters a burst tallies, moved once at its end */
	assert_int_equal(lc->serve.stats.requests, sbefore.requests + 3);
	assert_int_equal(lc->serve.stats.ids, sbefore.ids + 3);
	assert_int_equal(lc->serve.stats.ops[FW_WIRE_OP_ID], sbefore.ops[FW_WIRE_OP_ID] + 3);
	assert_int_equal(lc->serve.stats.status[FW_WIRE_ST_OK], sbefore.status[FW_WIRE_ST_OK] + 3);
	rte_pktmbuf_free_bulk(pkts, 6);
}

/* ---- martians ---- */

static const uint8_t our6[16] = {0xfd, 0x77, [15] = 0x02};
static const uint8_t peer6[16] = {0xfd, 0x77, [15] = 0x01};

/* A single-ID request to the port from @src (host order) and @mac, checksums right. */
static struct rte_mbuf *id_request_from(uint32_t src, const struct rte_ether_addr *mac)
{
	struct rte_mbuf *m = id_request();
	struct rte_ipv4_hdr *ip = ip_of(m);

	rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->src_addr = *mac;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp_of(m)->dgram_cksum = 0;
	udp_of(m)->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp_of(m));
	return m;
}

/* The same over IPv6 from @src (16 bytes) to our6. */
static struct rte_mbuf *id_request6_from(const uint8_t *src, const struct rte_ether_addr *mac)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	int len = fw_wire_write_request(udp + 1, 64, FW_WIRE_OP_ID, 1, 42, true);

	assert_int_equal(len, 32);
	eth->dst_addr = port.mac;
	eth->src_addr = *mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
	ip->vtc_flow = RTE_BE32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
	ip->proto = IPPROTO_UDP;
	ip->hop_limits = 64;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, our6, 16);
	udp->src_port = RTE_BE16(40000);
	udp->dst_port = RTE_BE16(FW_WIRE_DEFAULT_PORT);
	udp->dgram_len = ip->payload_len;
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
	m->data_len = (uint16_t)(L2 + sizeof(*ip) + L4 + len);
	m->pkt_len = m->data_len;
	return m;
}

static void a6(uint8_t *out, const char *s)
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

/*
 * Every martian kind, with [net] allow = 0.0.0.0/0,::/0 so that the allow
 * list proves nothing and the default [net] trusted (127.0.0.0/8, ::1)
 * would otherwise answer loopback sources unpadded: no reply, and exactly
 * its reason counted, on fwire_pkt_answer, fwire_pkt_burst, and the offload path
 * (RX verdicts GOOD, which has its own copy of the source check).
 */
static void test_martians(void **state)
{
	struct fw_conf c2;
	struct fwire_pkt_ctx pxm;
	struct fwire_lcore *lm = rte_zmalloc("test_martian", sizeof(*lm), RTE_CACHE_LINE_SIZE);
	char err[256];
	(void)state;

	assert_non_null(lm);
	fw_conf_init(&c2);
	assert_int_equal(fw_conf_set(&c2, "net.allow=0.0.0.0/0,::/0", 0, err, sizeof(err)), 0);
	assert_int_equal(fwire_pkt_ctx_init(&pxm, &c2, NULL, NULL), 0);
	struct fwire_port p = port;
	p.n_addr6 = 1;
	memcpy(p.addr6[0], our6, 16);
	assert_int_equal(fwire_pkt_ctx_add_port(&pxm, &p), 0);
	assert_int_equal(fwire_lcore_init(lm, &pxm, &c2, &lay, 0, rte_lcore_id(), 1), 0);
	fw_gen_set_mark(&lm->serve.gen, now_ms + 1000000000);

	static const struct rte_ether_addr bcast = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	static const struct rte_ether_addr mcast = {{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}};
	static const struct rte_ether_addr mcast6 = {{0x33, 0x33, 0x00, 0x00, 0x00, 0x01}};
	struct {
		uint32_t src;
		const struct rte_ether_addr *mac;
		enum fwire_drop why;
	} v4[] = {
		{RTE_IPV4(127, 0, 0, 1), &peer_mac, FW_DROP_MARTIAN_LOOPBACK},
		{RTE_IPV4(127, 1, 2, 3), &peer_mac, FW_DROP_MARTIAN_LOOPBACK},
		{0, &peer_mac, FW_DROP_MARTIAN_UNSPECIFIED},
		{RTE_IPV4(0, 1, 2, 3), &peer_mac, FW_DROP_MARTIAN_UNSPECIFIED},
		{RTE_IPV4(224, 0, 0, 1), &peer_mac, FW_DROP_MARTIAN_MULTICAST},
		{RTE_IPV4(239, 255, 255, 250), &peer_mac, FW_DROP_MARTIAN_MULTICAST},
		{RTE_IPV4(255, 255, 255, 255), &peer_mac, FW_DROP_MARTIAN_BROADCAST},
		{RTE_IPV4(10, 77, 0, 2), &peer_mac, FW_DROP_MARTIAN_SELF},
		{peer_ip, &bcast, FW_DROP_MARTIAN_MAC},
		{peer_ip, &mcast, FW_DROP_MARTIAN_MAC},
		{RTE_IPV4(127, 0, 0, 1), &mcast, FW_DROP_MARTIAN_MAC}, /* the MAC first */
	};
	struct {
		const char *src;
		const struct rte_ether_addr *mac;
		enum fwire_drop why;
	} v6[] = {
		{"::1", &peer_mac, FW_DROP_MARTIAN_LOOPBACK},
		{"::", &peer_mac, FW_DROP_MARTIAN_UNSPECIFIED},
		{"ff02::1", &peer_mac, FW_DROP_MARTIAN_MULTICAST},
		{"ff0e::1234", &peer_mac, FW_DROP_MARTIAN_MULTICAST},
		{"fd77::2", &peer_mac, FW_DROP_MARTIAN_SELF},
		{"::ffff:127.0.0.1", &peer_mac, FW_DROP_MARTIAN_LOOPBACK},
		{"::ffff:0.0.0.0", &peer_mac, FW_DROP_MARTIAN_UNSPECIFIED},
		{"::ffff:224.0.0.1", &peer_mac, FW_DROP_MARTIAN_MULTICAST},
		{"::ffff:255.255.255.255", &peer_mac, FW_DROP_MARTIAN_BROADCAST},
		{"::ffff:10.77.0.2", &peer_mac, FW_DROP_MARTIAN_SELF},
		{"fd77::1", &mcast6, FW_DROP_MARTIAN_MAC},
		{"fd77::1", &bcast, FW_DROP_MARTIAN_MAC},
	};
	const unsigned n4 = FW_ARRAY_SIZE(v4), n6 = FW_ARRAY_SIZE(v6);

	/* the controls: a real peer is answered, over both families */
	struct rte_mbuf *m = id_request_from(peer_ip, &peer_mac);
	assert_true(fwire_pkt_answer(lm, &p, m, now_ms));
	assert_id_reply(m);
	rte_pktmbuf_free(m);
	m = id_request6_from(peer6, &peer_mac);
	assert_true(fwire_pkt_answer(lm, &p, m, now_ms));
	assert_int_equal(lm->st.udp6, 1);
	rte_pktmbuf_free(m);

	/* one at a time, twice (the second from the verdict cache), then with offload */
	for (int pass = 0; pass < 3; pass++) {
		struct fwire_port pp = p;
		pp.tx_cksum = pass == 2;
		for (unsigned i = 0; i < n4 + n6; i++) {
			uint8_t a[16];
			if (i < n4) {
				m = id_request_from(v4[i].src, v4[i].mac);
				if (pass == 2)
					m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD |
						      RTE_MBUF_F_RX_L4_CKSUM_GOOD;
			} else {
				a6(a, v6[i - n4].src);
				m = id_request6_from(a, v6[i - n4].mac);
			}
			enum fwire_drop why = i < n4 ? v4[i].why : v6[i - n4].why;
			struct fwire_lcore_stats before = lm->st;
			uint64_t reqs = lm->serve.stats.requests;
			if (fwire_pkt_answer(lm, &pp, m, now_ms))
				fail_msg("martian %u (%s) answered on pass %d", i,
					 i < n4 ? "IPv4" : v6[i - n4].src, pass);
			for (int d = 0; d < FW_DROP_COUNT; d++)
				if (lm->st.drop[d] != before.drop[d] + (d == (int)why))
					fail_msg("martian %u pass %d: drop_%s %lu -> %lu", i, pass,
						 fwire_drop_names[d], (unsigned long)before.drop[d],
						 (unsigned long)lm->st.drop[d]);
			assert_int_equal(lm->st.udp, before.udp);
			assert_int_equal(lm->serve.stats.requests, reqs);
			rte_pktmbuf_free(m);
		}
	}

	/* a burst of them all and one real request: only the request answered */
	struct rte_mbuf *pkts[32], *tx[32], *fr[32];
	uint16_t n = 0, nfr = 0;
	for (unsigned i = 0; i < n4; i++)
		pkts[n++] = id_request_from(v4[i].src, v4[i].mac);
	pkts[n++] = id_request_from(peer_ip, &peer_mac);
	for (unsigned i = 0; i < n6; i++) {
		uint8_t a[16];
		a6(a, v6[i].src);
		pkts[n++] = id_request6_from(a, v6[i].mac);
	}
	struct fwire_lcore_stats before = lm->st;
	uint16_t ntx = fwire_pkt_burst(lm, &p, pkts, n, now_ms, tx, fr, &nfr);
	assert_int_equal(ntx, 1);
	assert_ptr_equal(tx[0], pkts[n4]);
	assert_id_reply(tx[0]);
	assert_int_equal(nfr, n - 1);
	uint64_t martians = 0;
	for (int d = FW_DROP_MARTIAN_LOOPBACK; d <= FW_DROP_MARTIAN_MAC; d++)
		martians += lm->st.drop[d] - before.drop[d];
	assert_int_equal(martians, n - 1);
	assert_int_equal(lm->st.drop[FW_DROP_SOURCE], before.drop[FW_DROP_SOURCE]);
	rte_pktmbuf_free_bulk(pkts, n);

	/* without the martian filter (flakesock's policy) the loopback source is trusted */
	assert_int_equal(fw_policy_set_martians(&pxm.policy, false), 0);
	assert_int_equal(fw_policy_source(&pxm.policy, RTE_IPV4(127, 0, 0, 1)),
			 FW_POLICY_SRC_VALID | FW_POLICY_SRC_ALLOWED | FW_POLICY_SRC_TRUSTED);
	rte_free(lm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_l4_cksum_none), cmocka_unit_test(test_rx_ip_cksum_none),
		cmocka_unit_test(test_rx_cksum_bad),     cmocka_unit_test(test_icmp_bad_cksum),
		cmocka_unit_test(test_rate_shared),      cmocka_unit_test(test_serve_fast_same),
		cmocka_unit_test(test_serve_run_same),   cmocka_unit_test(test_burst_ids_in_order),
		cmocka_unit_test(test_burst_counts),     cmocka_unit_test(test_tx_offload),
		cmocka_unit_test(test_martians),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

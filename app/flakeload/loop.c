/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send/receive loop. A tag is run_id (16 bits) | generation (24 bits) |
 * slot (24 bits): the slot indexes the ring of outstanding requests, the
 * generation tells a reply to the slot's current request from a late reply
 * to an earlier one, the run ID a reply to another run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "fl.h"
#include "fw_time.h"

#define L2 ((uint16_t)sizeof(struct rte_ether_hdr))
#define L3 ((uint16_t)sizeof(struct rte_ipv4_hdr))
#define L4 ((uint16_t)sizeof(struct rte_udp_hdr))

#define TAG_SLOT_BITS 24
#define TAG_GEN_MASK  0xffffffu

static const uint8_t mix_ops[FL_MAX_MIX] = {FW_WIRE_OP_ID, FW_WIRE_OP_LIST, FW_WIRE_OP_RANGE,
					    FW_WIRE_OP_INFO};

/* Counts a request of @op in @by_op (indexed like mix_ops); a probe's op outside
 * the mix is not counted. */
static void count_op(uint64_t by_op[FL_MAX_MIX], uint8_t op)
{
	for (int k = 0; k < FL_MAX_MIX; k++)
		if (mix_ops[k] == op)
			by_op[k]++;
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline uint32_t client_ip(const struct fl_ctx *c, uint32_t k)
{
	return c->o.src_ip_base + k;
}

static inline uint16_t client_port(uint32_t k)
{
	return (uint16_t)(10000 + k % 50000);
}

int fl_loop_init(struct fl_ctx *c)
{
	struct timespec ts;

	c->slot = calloc(c->o.window, sizeof(*c->slot));
	if (!c->slot)
		return -ENOMEM;
	c->mask = c->o.window - 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	c->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ rte_rdtsc() ^
		 0x9e3779b97f4a7c15ull;
	c->run_id = xorshift(&c->rng) >> 48;
	for (int i = 0; i < FL_MAX_MIX; i++)
		for (uint32_t w = 0; w < c->o.mix[i]; w++)
			c->mix_table[c->mix_n++] = mix_ops[i];
	fw_hist_init(&c->hist);
	return 0;
}

void fl_loop_free(struct fl_ctx *c)
{
	free(c->slot);
	c->slot = NULL;
}

/* client_ip() for IPv6: the base address plus k in its last 32 bits */
static inline void client_ip6(const struct fl_ctx *c, uint32_t k, uint8_t *a)
{
	uint32_t low;

	memcpy(a, c->o.src_ip6_base, 16);
	memcpy(&low, a + 12, 4);
	low = rte_cpu_to_be_32(rte_be_to_cpu_32(low) + k);
	memcpy(a + 12, &low, 4);
}

/* build() over IPv6: the UDP checksum is mandatory, so always computed. */
static void build6(const struct fl_ctx *c, struct rte_mbuf *m, uint8_t op, uint16_t count,
		   uint64_t tag, uint32_t client, bool pad)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	const uint16_t l3 = (uint16_t)sizeof(*ip);
	size_t cap = (size_t)(m->buf_len - m->data_off) - (L2 + l3 + L4);
	int len = fw_wire_write_request(udp + 1, cap, op, count, tag, pad);

	eth->dst_addr = c->o.dst_mac;
	eth->src_addr = c->mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
	ip->vtc_flow = RTE_BE32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
	ip->proto = IPPROTO_UDP;
	ip->hop_limits = 64;
	client_ip6(c, client, ip->src_addr);
	memcpy(ip->dst_addr, c->o.dst_ip6, 16);
	udp->src_port = rte_cpu_to_be_16(client_port(client));
	udp->dst_port = rte_cpu_to_be_16(c->o.udp_port);
	udp->dgram_len = ip->payload_len;
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
	m->data_len = m->pkt_len = (uint32_t)(L2 + l3 + L4 + len);
}

static void build(const struct fl_ctx *c, struct rte_mbuf *m, uint8_t op, uint16_t count,
		  uint64_t tag, uint32_t client, bool pad)
{
	if (c->o.ipv6) {
		build6(c, m, op, count, tag, client, pad);
		return;
	}
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	size_t cap = (size_t)(m->buf_len - m->data_off) - (L2 + L3 + L4);
	int len = fw_wire_write_request(udp + 1, cap, op, count, tag, pad);

	eth->dst_addr = c->o.dst_mac;
	eth->src_addr = c->mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(L3 + L4 + len));
	ip->packet_id = 0;
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(client_ip(c, client));
	ip->dst_addr = rte_cpu_to_be_32(c->o.dst_ip);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(client_port(client));
	udp->dst_port = rte_cpu_to_be_16(c->o.udp_port);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
	udp->dgram_cksum = 0;
	if (c->o.udp_cksum)
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	m->data_len = m->pkt_len = (uint32_t)(L2 + L3 + L4 + len);
}

/*
 * Sends up to @want requests. @op_force (non-zero) replaces the mix (probe).
 * Returns the number sent.
 */
static uint16_t send_burst(struct fl_ctx *c, uint64_t now, uint16_t want, uint8_t op_force)
{
	struct rte_mbuf *pkts[FL_BURST];
	uint32_t idx[FL_BURST];
	uint64_t timeout = c->hz * c->o.timeout_ms / 1000;
	uint16_t n = 0;

	if (want > FL_BURST)
		want = FL_BURST;
	/*
	 * The window: take the next free slots, reclaiming those outstanding so
	 * long they timed out and skipping the others, so one lost request does
	 * not hold up the ring until it times out.
	 */
	for (uint32_t scanned = 0;
	     n < want && c->outstanding + n < c->o.window && scanned <= c->mask; scanned++) {
		uint32_t i = (uint32_t)(c->head++ & c->mask);
		struct fl_slot *s = &c->slot[i];
		if (s->tsc) {
			if (now - s->tsc <= timeout)
				continue;
			s->tsc = 0;
			c->outstanding--;
			c->st.timeouts++;
		}
		idx[n++] = i;
	}
	if (!n) {
		c->st.window_full++;
		return 0;
	}
	if (rte_pktmbuf_alloc_bulk(c->pool, pkts, n))
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		struct fl_slot *s = &c->slot[idx[i]];
		uint64_t r = xorshift(&c->rng);
		uint8_t op = op_force ? op_force : c->mix_table[r % c->mix_n];
		uint16_t count = (op == FW_WIRE_OP_LIST || op == FW_WIRE_OP_RANGE) ? c->o.count : 1;

		s->gen = (s->gen + 1) & TAG_GEN_MASK;
		s->client = c->next_client;
		if (++c->next_client == c->o.clients)
			c->next_client = 0;
		s->op = op;
		s->count = count;
		uint64_t tag = c->run_id << 48 | (uint64_t)s->gen << TAG_SLOT_BITS | idx[i];
		build(c, pkts[i], op, count, tag, s->client, c->o.pad || op_force);
	}
	uint64_t tsc = rte_rdtsc();
	uint16_t sent = rte_eth_tx_burst(c->port_id, 0, pkts, n);
	for (uint16_t i = 0; i < sent; i++) {
		struct fl_slot *s = &c->slot[idx[i]];
		s->tsc = tsc;
		count_op(c->st.by_op_sent, s->op);
	}
	/* slots of what the queue did not take stay free */
	if (sent < n) {
		c->st.tx_full += n - sent;
		rte_pktmbuf_free_bulk(&pkts[sent], n - sent);
	}
	c->outstanding += sent;
	c->st.sent += sent;
	if (sent) {
		if (!c->st.first_tsc)
			c->st.first_tsc = tsc;
		c->st.last_send_tsc = tsc;
	}
	return sent;
}

/* The slot a tag names, or NULL when it is not the slot's outstanding request. */
static struct fl_slot *match(struct fl_ctx *c, uint64_t tag)
{
	if (tag >> 48 != c->run_id) {
		c->st.foreign++;
		return NULL;
	}
	uint32_t idx = (uint32_t)(tag & ((1u << TAG_SLOT_BITS) - 1));
	uint32_t gen = (uint32_t)(tag >> TAG_SLOT_BITS) & TAG_GEN_MASK;
	if (idx > c->mask || !c->slot[idx].tsc || c->slot[idx].gen != gen) {
		c->st.late++;
		return NULL;
	}
	return &c->slot[idx];
}

/* The IDs an OK reply carries (0 for INFO), counted and verified. */
static uint64_t reply_ok(struct fl_ctx *c, const struct fw_wire_reply *r, bool measure,
			 uint64_t sent_ms, uint64_t now_ms)
{
	uint64_t ids = 0;
	uint8_t op = r->hdr.op & ~FW_WIRE_OP_REPLY;

	if (op == FW_WIRE_OP_INFO) {
		c->info = r->body.info;
		if (!c->have_layout &&
		    !fw_layout_init(&c->o.layout, r->body.info.epoch_ms, r->body.info.dc_bits,
				    r->body.info.worker_bits, r->body.info.seq_bits, 0))
			c->have_layout = true;
		return 0;
	}
	if (op == FW_WIRE_OP_RANGE) {
		for (uint16_t i = 0; i < r->hdr.count; i++) {
			ids += r->body.ranges[i].n;
			if (measure)
				fw_idcheck_add(&c->ver, r->body.ranges[i].first,
					       r->body.ranges[i].n, r->hdr.datacenter,
					       r->hdr.worker, sent_ms, now_ms);
		}
	} else {
		ids = r->hdr.count;
		if (measure)
			fw_idcheck_add_list(&c->ver, r->body.ids, r->hdr.count, r->hdr.datacenter,
					    r->hdr.worker, sent_ms, now_ms);
	}
	c->st.ids += ids;
	return ids;
}

static double ns_per_cycle(const struct fl_ctx *c)
{
	return 1e9 / (double)c->hz;
}

/*
 * One frame. Returns the matched slot's reply status (0-5), FW_WIRE_ST_COUNT
 * for an echo, -1 when it matched nothing.
 */
static int handle(struct fl_ctx *c, struct rte_mbuf *m, uint64_t now, uint64_t now_ms, bool measure,
		  struct fw_wire_reply *r)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(eth + 1);
	/* the IPv6 header is 40 bytes: the UDP header follows it (--dst-ip6) */
	const uint16_t l3 = c->o.ipv6 ? (uint16_t)sizeof(*ip6) : L3;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((uint8_t *)(eth + 1) + l3);
	const uint8_t *payload = (const uint8_t *)(udp + 1);
	uint16_t udp_port = rte_cpu_to_be_16(c->o.udp_port);

	if (m->data_len < L2 + l3 + L4 + FW_WIRE_HDR_LEN ||
	    (c->o.ipv6
		     ? eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV6) || ip6->proto != IPPROTO_UDP
		     : eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
			       ip->version_ihl != RTE_IPV4_VHL_DEF ||
			       ip->next_proto_id != IPPROTO_UDP) ||
	    (udp->src_port != udp_port && udp->dst_port != udp_port)) {
		c->st.foreign++;
		return -1;
	}
	size_t len = rte_be_to_cpu_16(udp->dgram_len);
	if (len < L4 || len > (size_t)(m->data_len - L2 - l3)) {
		c->st.bad++;
		return -1;
	}
	len -= L4;

	struct fl_slot *s;
	int status;
	if (!(payload[3] & FW_WIRE_OP_REPLY)) {
		/* our own request back: testpmd macswap */
		struct fw_wire_hdr h;
		if (!c->o.expect_echo || fw_wire_parse_request(payload, len, &h)) {
			c->st.foreign++;
			return -1;
		}
		s = match(c, h.tag);
		if (!s)
			return -1;
		c->st.echoes++;
		status = FW_WIRE_ST_COUNT;
	} else {
		if (fw_wire_parse_reply(payload, len, r)) {
			c->st.bad++;
			return -1;
		}
		s = match(c, r->hdr.tag);
		if (!s)
			return -1;
		if (r->hdr.op != (s->op | FW_WIRE_OP_REPLY)) {
			c->st.bad++;
			return -1;
		}
		uint8_t a6[16];
		if (c->o.ipv6)
			client_ip6(c, s->client, a6);
		if ((c->o.ipv6 ? memcmp(ip6->dst_addr, a6, 16) != 0
			       : ip->dst_addr != rte_cpu_to_be_32(client_ip(c, s->client))) ||
		    udp->dst_port != rte_cpu_to_be_16(client_port(s->client)) ||
		    udp->src_port != udp_port)
			c->st.misaddressed++;
		status = r->hdr.status;
		c->st.by_status[status]++;
		if (r->hdr.flags & FW_WIRE_F_BORROWED)
			c->st.flags_borrowed++;
		if (r->hdr.flags & FW_WIRE_F_PARTIAL)
			c->st.flags_partial++;
		if (status == FW_WIRE_ST_OK) {
			uint64_t got = reply_ok(c, r, measure,
						now_ms - (now - s->tsc) * 1000 / c->hz, now_ms);
			uint64_t asked = s->op == FW_WIRE_OP_INFO ? 0 : s->count;
			bool partial = (r->hdr.flags & FW_WIRE_F_PARTIAL) != 0;
			count_op(c->st.by_op_ok, s->op);
			c->st.ids_asked += asked;
			/* all it asked for, or fewer flagged PARTIAL */
			if (partial ? got >= asked : got != asked)
				c->st.bad_reply++;
		} else if (r->hdr.count) {
			c->st.bad_reply++;
		}
	}
	if (measure) {
		fw_hist_add(&c->hist, (uint64_t)((double)(now - s->tsc) * ns_per_cycle(c)));
		c->st.last_rx_tsc = now;
	}
	c->st.replies++;
	s->tsc = 0;
	c->outstanding--;
	return status;
}

/* One RX burst. Returns the number of frames; *last_status: see handle(). */
static uint16_t rx_burst(struct fl_ctx *c, bool measure, int *last_status)
{
	static struct fw_wire_reply r; /* 1.5 KB: off the stack, one lcore */
	struct rte_mbuf *pkts[FL_BURST];
	uint16_t n = rte_eth_rx_burst(c->port_id, 0, pkts, FL_BURST);

	if (!n)
		return 0;
	uint64_t now = rte_rdtsc();
	uint64_t now_ms = fw_wall_ms();
	if (measure) {
		/* a pause of the peer (or of us) longer than any seen so far */
		if (c->st.last_frame_tsc && now - c->st.last_frame_tsc > c->st.max_gap_tsc &&
		    c->st.last_frame_tsc <= c->st.last_send_tsc)
			c->st.max_gap_tsc = now - c->st.last_frame_tsc;
		c->st.last_frame_tsc = now;
	}
	c->st.rx += n;
	for (uint16_t i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		int st = handle(c, pkts[i], now, now_ms, measure, &r);
		if (st >= 0 && last_status)
			*last_status = st;
	}
	rte_pktmbuf_free_bulk(pkts, n);
	return n;
}

/* Forget every outstanding request (their late replies count as late). */
static void forget_outstanding(struct fl_ctx *c)
{
	for (uint32_t i = 0; i <= c->mask; i++)
		c->slot[i].tsc = 0;
	c->outstanding = 0;
}

static int probe_op(struct fl_ctx *c, uint8_t op, uint64_t end)
{
	uint64_t next = 0;
	int status = -1;

	while (!*c->quit && rte_rdtsc() < end) {
		uint64_t now = rte_rdtsc();
		if (now >= next) {
			send_burst(c, now, 1, op);
			next = now + c->hz / 50;
		}
		status = -1;
		if (!rx_burst(c, false, &status))
			usleep(200);
		if (status == FW_WIRE_ST_OK || status == FW_WIRE_ST_COUNT)
			return 0;
	}
	return -ETIMEDOUT;
}

int fl_probe(struct fl_ctx *c)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(c->o.link_wait_s * (double)c->hz);
	int rc = 0;

	/* INFO first (the layout), then an ID, which waits out a responder still starting */
	if (!c->o.expect_echo)
		rc = probe_op(c, FW_WIRE_OP_INFO, end);
	if (!rc)
		rc = probe_op(c, FW_WIRE_OP_ID, end);
	if (rc)
		fprintf(stderr, "flakeload: no %s from the peer within %.1f s\n",
			c->o.expect_echo ? "echo" : "OK answer to INFO and ID", c->o.link_wait_s);
	forget_outstanding(c);
	memset(&c->st, 0, sizeof(c->st));
	fw_hist_init(&c->hist);
	return rc;
}

static void progress(const struct fl_ctx *c, uint64_t now, uint64_t *last_tsc,
		     uint64_t *last_replies)
{
	if (c->o.quiet || now - *last_tsc < c->hz)
		return;
	double dt = (double)(now - *last_tsc) / (double)c->hz;
	printf("flakeload: sent %lu replies %lu (%.0f/s) outstanding %lu timeouts %lu\n",
	       (unsigned long)c->st.sent, (unsigned long)c->st.replies,
	       (double)(c->st.replies - *last_replies) / dt, (unsigned long)c->outstanding,
	       (unsigned long)c->st.timeouts);
	fflush(stdout);
	*last_tsc = now;
	*last_replies = c->st.replies;
}

void fl_run(struct fl_ctx *c)
{
	uint64_t start = rte_rdtsc();
	uint64_t end = start + (uint64_t)(c->o.duration_s * (double)c->hz);
	uint64_t drain_end = 0;
	double per_cycle = (double)c->o.rate / (double)c->hz;
	uint64_t last_tsc = start, last_replies = 0;

	for (;;) {
		uint64_t now = rte_rdtsc();
		bool sending =
			!*c->quit && now < end && (!c->o.requests || c->st.sent < c->o.requests);

		uint16_t work = 0;
		if (sending) {
			uint64_t want = FL_BURST;
			if (c->o.rate) {
				uint64_t due = (uint64_t)((double)(now - start) * per_cycle) + 1;
				want = due > c->st.sent ? due - c->st.sent : 0;
			}
			if (c->o.requests && want > c->o.requests - c->st.sent)
				want = c->o.requests - c->st.sent;
			if (want)
				work = send_burst(c, now,
						  (uint16_t)(want > FL_BURST ? FL_BURST : want), 0);
		} else {
			if (!drain_end)
				drain_end = now + c->hz * c->o.timeout_ms / 1000;
			/* a second signal ends the drain too */
			if (!c->outstanding || now > drain_end)
				break;
		}
		work += rx_burst(c, true, NULL);
		/* time in rounds with nothing to send or receive: the load is not the limit */
		if (!work && sending)
			c->st.idle_tsc += rte_rdtsc() - now;
		progress(c, now, &last_tsc, &last_replies);
	}
	c->st.timeouts += c->outstanding;
	uint64_t stop =
		c->st.last_rx_tsc > c->st.last_send_tsc ? c->st.last_rx_tsc : c->st.last_send_tsc;
	c->elapsed_s = c->st.first_tsc ? (double)(stop - c->st.first_tsc) / (double)c->hz : 0;
}

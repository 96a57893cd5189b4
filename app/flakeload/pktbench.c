/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakeload-pktbench: the responder's per-packet work on a fixed workload,
 * without a NIC. N prebuilt request frames (the ones flakeload sends: padded,
 * UDP checksum set, 16 clients) go through what flakewire's burst loop does
 * per burst (lcore.c serve_burst): one fwire_lcore_clock(), fwire_pkt_answer() per
 * frame, the mbufs freed in bulk where the real loop hands them to TX. Each
 * burst is refilled from the template first (that copy is the harness's, not
 * the responder's, and is timed separately so it can be subtracted).
 *
 * Made for instruction counts, which are stable on a noisy machine:
 *   valgrind --tool=callgrind --toggle-collect=pb_serve_burst flakeload-pktbench
 * counts exactly the responder's work (see scripts/bench/performance.sh --profile);
 * the TSC figures printed are a rough guide only.
 *
 * Usage: flakeload-pktbench [--frames N] [--op id|list|range] [--count N]
 *                           [--set SECTION.KEY=VALUE]... [--check] [--cycles N]
 *                           [--offload none|rx|rxtx] [--warmup MS] [--slices S]
 * --cycles N: the cycles harness (cycles_bench below) instead: N bursts of
 * each side, in S slice pairs (--slices, 50) alternating which goes first.
 * --warmup MS: with --cycles, the same loop runs MS ms untimed first (500).
 * --offload: the frames arrive as from a device that verified their checksums
 * (RX verdicts GOOD: every 10 GbE NIC's RX offload), and with rxtx the port
 * also writes the replies' checksums (TX offload), as flakewire uses them
 * where the device offers them (port.c). Default none: verified in software.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "lcore.h"
#include "pkt.h"
#include "port.h"
#include "fw_wire.h"

int fwire_logtype; /* flakewire's main.c defines it; this harness does not link main.c */

#define PB_CLIENTS 16
#define L2         ((uint16_t)sizeof(struct rte_ether_hdr))
#define L3         ((uint16_t)sizeof(struct rte_ipv4_hdr))
#define L4         ((uint16_t)sizeof(struct rte_udp_hdr))

struct pb_frame {
	uint16_t len;
	uint8_t b[256];
};

/* What the harness builds instead of flakewire's application. */
struct pb_app {
	struct fw_conf conf;
	struct fw_layout layout;
	struct fwire_pkt_ctx px;
	struct rte_mempool *pool;
	struct fwire_port port;
	struct fwire_lcore *lc;
};

static bool check;        /* --check: verify every reply's checksums with DPDK's own */
static uint64_t bad_csum; /* replies whose IPv4 or UDP checksum is wrong */
static uint64_t rx_flags; /* --offload rx|rxtx: the device's RX checksum verdicts */

/*
 * A reply whose checksums the device writes (TX offload) is first completed
 * as the device would: its fields must hold what the device starts from
 * (IPv4 checksum 0, UDP checksum the pseudo-header sum, the offload flags
 * and lengths); then both are checked like any other reply.
 */
static void check_reply(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, L2);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	const uint64_t tx = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;

	if (m->ol_flags & RTE_MBUF_F_TX_UDP_CKSUM) {
		if ((m->ol_flags & tx) != tx || m->l2_len != L2 || m->l3_len != L3 ||
		    ip->hdr_checksum != 0 ||
		    udp->dgram_cksum != rte_ipv4_phdr_cksum(ip, m->ol_flags)) {
			bad_csum++;
			return;
		}
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp->dgram_cksum = 0;
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	}
	if (rte_raw_cksum(ip, L3) != 0xffff || !udp->dgram_cksum ||
	    __rte_ipv4_udptcp_cksum(ip, udp) != 0xffff)
		bad_csum++;
}

/* A request as flakeload builds it (app/flakeload/loop.c build()). */
static void make_frame(struct pb_frame *f, const struct fwire_port *port, uint32_t client,
		       uint8_t op, uint16_t count, uint64_t tag)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f->b;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	int len =
		fw_wire_write_request(udp + 1, sizeof(f->b) - (L2 + L3 + L4), op, count, tag, true);
	struct rte_ether_addr src = {{0x02, 0, 0, 0, 0, 0x10}};

	if (len < 0) {
		fprintf(stderr, "pktbench: cannot build the request (%d)\n", len);
		exit(2);
	}
	eth->dst_addr = port->mac;
	eth->src_addr = src;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(L3 + L4 + len));
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(RTE_IPV4(10, 0, 0, 10) + client);
	ip->dst_addr = port->addr_be;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16((uint16_t)(10000 + client));
	udp->dst_port = rte_cpu_to_be_16(FW_WIRE_DEFAULT_PORT);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(L4 + len));
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	f->len = (uint16_t)(L2 + L3 + L4 + len);
}

static void refill(struct rte_mempool *pool, struct rte_mbuf **m, uint16_t n,
		   const struct pb_frame *fr, uint64_t k)
{
	if (rte_pktmbuf_alloc_bulk(pool, m, n)) {
		fprintf(stderr, "pktbench: mempool empty\n");
		exit(2);
	}
	for (uint16_t i = 0; i < n; i++) {
		const struct pb_frame *f = &fr[(k + i) % PB_CLIENTS];
		memcpy(rte_pktmbuf_mtod(m[i], void *), f->b, f->len);
		m[i]->data_len = f->len;
		m[i]->pkt_len = f->len;
		m[i]->ol_flags = rx_flags;
	}
}

/*
 * flakewire's serve_burst() minus the TX call: the unit the callgrind
 * toggle counts. noinline, so it stays one symbol.
 */
__attribute__((noinline)) uint16_t pb_serve_burst(struct pb_app *app, struct fwire_lcore *lc,
						  const struct fwire_port *port,
						  struct rte_mbuf **pkts, uint16_t n);
__attribute__((noinline)) uint16_t pb_serve_burst(struct pb_app *app, struct fwire_lcore *lc,
						  const struct fwire_port *port,
						  struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_mbuf *tx[FW_BURST], *fr[FW_BURST];
	uint16_t nfr;
	uint64_t now = fwire_lcore_clock(lc);
	uint16_t ntx = fwire_pkt_burst(lc, port, pkts, n, now, tx, fr, &nfr);

	if (FW_UNLIKELY(check))
		for (uint16_t i = 0; i < ntx; i++)
			check_reply(tx[i]);
	/*
	 * Where the real loop transmits: the mbufs go back to their pool as a
	 * PMD with RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE returns them (one pool,
	 * reference count 1, one segment: what flakewire's replies are).
	 */
	rte_mempool_put_bulk(app->pool, (void **)pkts, n);
	lc->st.tx += ntx;
	return ntx;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median_u64(uint64_t *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/*
 * The @q quantile of @v (n > 0), sorted in place: linear between the two
 * nearest ranks, as Python's statistics.quantiles(method="inclusive") and
 * scripts/bench/performance_table.py compute it.
 */
static double quantile(double *v, uint32_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	double pos = q * (double)(n - 1);
	uint32_t lo = (uint32_t)pos;
	return lo + 1 < n ? v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

/* The request frames written back over the burst's mbufs, as received. */
static void restore(struct rte_mbuf **m, uint16_t n, const struct pb_frame *fr)
{
	for (uint16_t i = 0; i < n; i++) {
		const struct pb_frame *f = &fr[i % PB_CLIENTS];
		memcpy(rte_pktmbuf_mtod(m[i], void *), f->b, f->len);
		m[i]->data_len = f->len;
		m[i]->pkt_len = f->len;
		m[i]->ol_flags = rx_flags;
	}
}

/*
 * The least work any responder does per packet: dpdk-testpmd's macswap
 * forwarding (app/test-pmd/macswap.h, its generic version): swap the
 * Ethernet addresses, set the mbuf's offload fields.
 */
__attribute__((noinline)) void pb_macswap_burst(struct rte_mbuf **pkts, uint16_t n);
__attribute__((noinline)) void pb_macswap_burst(struct rte_mbuf **pkts, uint16_t n)
{
	if (n)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[0], void *));
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *mb = pkts[i];
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(mb, struct rte_ether_hdr *);
		struct rte_ether_addr a = eth->dst_addr;
		eth->dst_addr = eth->src_addr;
		eth->src_addr = a;
		mb->ol_flags &= RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL;
		mb->l2_len = sizeof(struct rte_ether_hdr);
		mb->l3_len = sizeof(struct rte_ipv4_hdr);
	}
}

static uint32_t cycle_slices = 50; /* --slices: slice pairs of --cycles */

enum pb_side { PB_EMPTY, PB_SERVE, PB_MACSWAP };

/*
 * One slice of the cycles harness: @k bursts of one side over the same
 * mbufs, the requests written back before each (untimed). Returns the
 * median of the per-burst TSC cycles; adds the frames left unanswered.
 */
static uint64_t cycles_slice(struct fwire_lcore *lc, const struct fwire_port *port,
			     const struct pb_frame *fr, struct rte_mbuf **m, uint64_t *t,
			     uint32_t k, enum pb_side side, uint64_t *unanswered)
{
	struct rte_mbuf *tx[FW_BURST], *dr[FW_BURST];

	for (uint32_t i = 0; i < k; i++) {
		uint16_t nfr, ntx = FW_BURST;
		if (side != PB_EMPTY)
			restore(m, FW_BURST, fr);
		uint64_t t0 = rte_rdtsc_precise();
		if (side == PB_SERVE) {
			uint64_t now = fwire_lcore_clock(lc);
			ntx = fwire_pkt_burst(lc, port, m, FW_BURST, now, tx, dr, &nfr);
		} else if (side == PB_MACSWAP) {
			pb_macswap_burst(m, FW_BURST);
		}
		t[i] = rte_rdtsc_precise() - t0;
		*unanswered += FW_BURST - ntx;
	}
	return median_u64(t, k);
}

/*
 * --cycles: the serve path (fwire_lcore_clock + fwire_pkt_burst: what
 * flakewire's lcore does between rx_burst and tx_burst) and
 * pb_macswap_burst, over the same burst of FW_BURST request mbufs, in
 * @rounds bursts each, cut into cycle_slices slice pairs. A slice times
 * one side for rounds / slices bursts; the two slices of a pair run back
 * to back, the serve path first in even pairs and macswap first in odd
 * ones, so neither side always follows the other. Each slice's figure is
 * the median of its per-burst TSC cycles less an empty timed region's
 * (measured beside each pair), per request; the ratio is taken per pair.
 * A host whose core changes speed from one moment to the next changes
 * both sides of a pair alike, or shows in the spread of the pairs'
 * ratios, which is printed: median, quartiles, min and max.
 *
 * The same loop runs @warmup_ms untimed first. A flakewire lcore polls
 * without a pause; this process starts on a core that was idle (EAL's
 * start-up sleeps), and on a shared VM host such a core can take up to
 * 1.5x the cycles for hundreds of ms after it wakes. Measuring only after
 * half a second of the loop measures the lcore's steady state, not the
 * host's wake-up. Returns 0, or 1 if a frame went unanswered.
 */
static int cycles_bench(struct pb_app *app, struct fwire_lcore *lc, const struct fwire_port *port,
			const struct pb_frame *fr, uint32_t rounds, uint32_t warmup_ms)
{
	struct rte_mbuf *m[FW_BURST];
	uint32_t slices = cycle_slices < rounds ? cycle_slices : rounds;
	uint32_t k = rounds / slices;
	uint64_t *t = calloc(k, sizeof(uint64_t));
	double *serve = calloc(slices, sizeof(double));
	double *swap = calloc(slices, sizeof(double));
	double *ratio = calloc(slices, sizeof(double));
	double *e = calloc(slices, sizeof(double));
	uint64_t unanswered = 0, ignored = 0;

	if (!t || !serve || !swap || !ratio || !e ||
	    rte_pktmbuf_alloc_bulk(app->pool, m, FW_BURST)) {
		fprintf(stderr, "pktbench: no memory for --cycles\n");
		return 2;
	}
	uint64_t until = rte_rdtsc() + rte_get_tsc_hz() / 1000 * warmup_ms;
	while (rte_rdtsc() < until) {
		cycles_slice(lc, port, fr, m, t, 1, PB_SERVE, &ignored);
		cycles_slice(lc, port, fr, m, t, 1, PB_MACSWAP, &ignored);
	}
	for (uint32_t s = 0; s < slices; s++) {
		enum pb_side first = s % 2 ? PB_MACSWAP : PB_SERVE;
		enum pb_side second = s % 2 ? PB_SERVE : PB_MACSWAP;
		e[s] = (double)cycles_slice(lc, port, fr, m, t, k, PB_EMPTY, &ignored);
		double a = (double)cycles_slice(lc, port, fr, m, t, k, first, &unanswered);
		double b = (double)cycles_slice(lc, port, fr, m, t, k, second, &unanswered);
		serve[s] = ((first == PB_SERVE ? a : b) - e[s]) / FW_BURST;
		swap[s] = ((first == PB_SERVE ? b : a) - e[s]) / FW_BURST;
		ratio[s] = swap[s] > 0 ? serve[s] / swap[s] : 0.0;
	}
	double hz = (double)rte_get_tsc_hz();
	printf("pktbench: cycles: slices (serve/macswap cycles per request, macswap first in odd"
	       " slices):");
	for (uint32_t s = 0; s < slices; s++)
		printf(" %.2f/%.2f", serve[s], swap[s]);
	printf("\n");
	double cs = quantile(serve, slices, 0.5), cm = quantile(swap, slices, 0.5);
	double r_med = quantile(ratio, slices, 0.5), r_q1 = quantile(ratio, slices, 0.25);
	double r_q3 = quantile(ratio, slices, 0.75);
	printf("pktbench: cycles: serve %.1f cycles/request, macswap %.1f cycles/packet, "
	       "ratio %.2f (median of %u slice pairs of %u bursts of %u after %u ms of warm-up, "
	       "TSC at %.2f GHz, timing overhead %.0f cycles a burst removed; checksums %s)\n",
	       cs, cm, r_med, slices, k, FW_BURST, warmup_ms, hz / 1e9, quantile(e, slices, 0.5),
	       port->tx_cksum ? "verified and written by the device"
	       : rx_flags     ? "verified by the device, written in software"
			      : "verified and written in software");
	printf("pktbench: cycles: ratio per slice pair: median %.2f, IQR %.2f-%.2f, min %.2f, "
	       "max %.2f\n",
	       r_med, r_q1, r_q3, ratio[0], ratio[slices - 1]);
	printf("pktbench: cycles: one core answers %.2f M requests/s on the serve path alone "
	       "(%.2f M packets/s macswap), before the PMD's receive and transmit\n",
	       hz / cs / 1e6, cm > 0 ? hz / cm / 1e6 : 0.0);
	rte_pktmbuf_free_bulk(m, FW_BURST);
	free(t);
	free(serve);
	free(swap);
	free(ratio);
	free(e);
	if (unanswered)
		fprintf(stderr, "pktbench: %lu frames unanswered in --cycles\n",
			(unsigned long)unanswered);
	return unanswered ? 1 : 0;
}

static void usage(void)
{
	printf("usage: flakeload-pktbench [--frames N] [--op id|list|range] [--count N]\n"
	       "                          [--set SECTION.KEY=VALUE]... [--check] [--cycles N]\n"
	       "                          [--offload none|rx|rxtx] [--warmup MS] [--slices S]\n"
	       "--check verifies every reply's IPv4 and UDP checksums with DPDK's functions.\n"
	       "--offload rx: RX checksum verdicts GOOD, as from a NIC that verified them;\n"
	       "rxtx: also TX checksum offload (the device writes the replies' checksums).\n"
	       "--cycles N: N bursts of the same mbufs answered in a tight loop beside a\n"
	       "testpmd-style macswap over them: cycles per request, ratio to macswap.\n"
	       "--slices S: with --cycles, the N bursts of each side in S slice pairs\n"
	       "(50), back to back, who goes first alternating: a ratio per pair.\n"
	       "--warmup MS: with --cycles, the same loop untimed for MS ms first (500).\n"
	       "Feeds N request frames (default 1000000, flakeload's padded single-ID\n"
	       "requests) through flakewire's fwire_pkt_answer in bursts of %d, no NIC.\n"
	       "Default layout 41/0/0/22 (sequence space not the limit); --set changes it.\n"
	       "For instruction counts: valgrind --tool=callgrind "
	       "--toggle-collect=pb_serve_burst ...\n",
	       FW_BURST);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"frames", required_argument, 0, 'n'},
		{"op", required_argument, 0, 'o'},
		{"count", required_argument, 0, 'c'},
		{"set", required_argument, 0, 's'},
		{"check", no_argument, 0, 'k'},
		{"cycles", required_argument, 0, 'y'},
		{"offload", required_argument, 0, 'f'},
		{"warmup", required_argument, 0, 'w'},
		{"slices", required_argument, 0, 'S'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct pb_app *app = calloc(1, sizeof(*app));
	uint64_t frames = 1000000;
	uint8_t op = FW_WIRE_OP_ID;
	uint16_t count = 1;
	uint32_t cycles = 0, warmup_ms = 500;
	bool tx_offload = false;
	char err[256];
	int c;

	if (!app)
		return 2;
	fw_conf_init(&app->conf);
	fw_conf_set(&app->conf, "id.worker_bits=0", 0, err, sizeof(err));
	fw_conf_set(&app->conf, "id.sequence_bits=22", 0, err, sizeof(err));
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			frames = strtoull(optarg, NULL, 10);
			break;
		case 'o':
			op = !strcmp(optarg, "list")    ? FW_WIRE_OP_LIST
			     : !strcmp(optarg, "range") ? FW_WIRE_OP_RANGE
							: FW_WIRE_OP_ID;
			break;
		case 'c':
			count = (uint16_t)atoi(optarg);
			break;
		case 's':
			if (fw_conf_set(&app->conf, optarg, 0, err, sizeof(err))) {
				fprintf(stderr, "pktbench: %s\n", err);
				return 2;
			}
			break;
		case 'k':
			check = true;
			break;
		case 'y':
			cycles = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'f':
			if (!strcmp(optarg, "rx") || !strcmp(optarg, "rxtx")) {
				rx_flags =
					RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
				tx_offload = !strcmp(optarg, "rxtx");
			} else if (strcmp(optarg, "none")) {
				fprintf(stderr, "pktbench: --offload %s: none, rx or rxtx\n",
					optarg);
				return 2;
			}
			break;
		case 'w':
			warmup_ms = (uint32_t)strtoul(optarg, NULL, 10);
			if (warmup_ms > 60000) {
				fprintf(stderr, "pktbench: --warmup %s: 0 to 60000 ms\n", optarg);
				return 2;
			}
			break;
		case 'S':
			cycle_slices = (uint32_t)strtoul(optarg, NULL, 10);
			if (cycle_slices < 1 || cycle_slices > 100000) {
				fprintf(stderr, "pktbench: --slices %s: 1 to 100000\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (!frames || (op == FW_WIRE_OP_ID && count != 1))
		count = 1;

	char prefix[64];
	snprintf(prefix, sizeof(prefix), "pktbench-%d", (int)getpid());
	char *eal[] = {"pktbench", "--no-huge",   "--no-pci",      "-m",
		       "256",      "--no-shconf", "--file-prefix", prefix,
		       "-l",       "0",           "--log-level=5", "--no-telemetry"};
	if (rte_eal_init((int)FW_ARRAY_SIZE(eal), eal) < 0) {
		fprintf(stderr, "pktbench: EAL init failed\n");
		return 2;
	}
	fwire_logtype = RTE_LOGTYPE_USER1;
	/* a packet context and one lcore, as flakewire's poll.c builds them */
	const struct fw_conf *conf = &app->conf;
	app->pool =
		rte_pktmbuf_pool_create("pb", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	app->lc = rte_zmalloc("pb_lcore", sizeof(*app->lc), RTE_CACHE_LINE_SIZE);
	if (!app->pool || !app->lc ||
	    fw_layout_init(&app->layout, conf->id.epoch_ms, conf->id.datacenter_bits,
			   conf->id.worker_bits, conf->id.sequence_bits, 0) ||
	    fwire_pkt_ctx_init(&app->px, conf, NULL, NULL) ||
	    fwire_lcore_init(app->lc, &app->px, conf, &app->layout, 0, rte_lcore_id(),
			     (uint32_t)fw_conf_worker(conf, 0)) ||
	    fwire_lcore_rate_init(app->lc, conf, 1)) {
		fprintf(stderr, "pktbench: set-up failed\n");
		return 2;
	}

	/* the clock as the control thread publishes it, the mark far ahead */
	if (!fwire_lcores_fixed_clock(app->lc, 1, app->layout.epoch_ms, 86400000)) {
		fprintf(stderr, "pktbench: clock set-up failed\n");
		return 2;
	}

	struct fwire_port *port = &app->port;
	struct rte_ether_addr mac = {{0x02, 0, 0, 0, 0, 0x02}};
	port->mac = mac;
	port->addr_be = rte_cpu_to_be_32(RTE_IPV4(10, 0, 0, 2));
	port->tx_cksum = tx_offload;
	snprintf(port->name, sizeof(port->name), "pktbench");
	fwire_pkt_ctx_add_port(&app->px,
			       port); /* our address a martian source, as flakewire has it */

	struct pb_frame fr[PB_CLIENTS];
	for (uint32_t k = 0; k < PB_CLIENTS; k++)
		make_frame(&fr[k], port, k, op, count, 0x1234000000ull + k);

	struct fwire_lcore *lc = app->lc;
	if (cycles) {
		int rc = cycles_bench(app, lc, port, fr, cycles, warmup_ms);
		rte_eal_cleanup();
		return rc;
	}
	struct rte_mbuf *m[FW_BURST];
	uint64_t done = 0, answered = 0, t_all = 0, t_fill = 0;
	while (done < frames) {
		uint16_t n = (uint16_t)(frames - done < FW_BURST ? frames - done : FW_BURST);
		uint64_t t0 = rte_rdtsc();
		refill(app->pool, m, n, fr, done);
		uint64_t t1 = rte_rdtsc();
		answered += pb_serve_burst(app, lc, port, m, n);
		t_all += rte_rdtsc() - t1;
		t_fill += t1 - t0;
		done += n;
	}
	double hz = (double)rte_get_tsc_hz();
	printf("pktbench: %lu frames (%s, %u per request, %u bytes), %lu answered (udp %lu, "
	       "dropped %lu)\n",
	       (unsigned long)frames, fw_wire_op_name(op), count, fr[0].len,
	       (unsigned long)answered, (unsigned long)lc->st.udp,
	       (unsigned long)(frames - answered));
	printf("pktbench: %.1f ns per frame in serve_burst (+ %.1f ns harness refill), TSC\n",
	       (double)t_all * 1e9 / hz / (double)frames,
	       (double)t_fill * 1e9 / hz / (double)frames);
	if (check)
		printf("pktbench: checksums verified: %lu bad\n", (unsigned long)bad_csum);
	rte_eal_cleanup();
	return answered == frames && !bad_csum ? 0 : 1;
}

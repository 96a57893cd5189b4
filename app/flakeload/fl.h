/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakeload: the DPDK load generator for flakewire. Internal contract: the
 * context passed explicitly to every part and the functions of each file
 * (options.c, port.c, loop.c, hist.c, verify.c, report.c). The only global is
 * the quit flag in main.c.
 *
 * One lcore (the main one) sends requests in bursts, each tagged with a slot
 * of a ring of outstanding requests plus that slot's generation, reads the
 * replies, matches them by tag, records the round trip in a log-bucketed
 * histogram and checks every ID received (verify.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mempool.h>

#include "fw_layout.h"
#include "fw_wire.h"

#define FL_BURST     32
#define FL_MAX_MIX   4 /* id, list, range, info */
#define FL_MIX_TABLE 1000

/* ---- options.c ---- */

struct fl_opts {
	const char *device;   /* vdev devargs or PCI address */
	uint32_t dst_ip;      /* host order */
	uint32_t src_ip_base; /* host order */
	uint32_t clients;     /* simulated clients: src_ip_base + k, port 10000 + k % 50000 */
	struct rte_ether_addr dst_mac;
	bool have_dst_mac;
	uint16_t udp_port;
	uint64_t rate;            /* requests/s; 0: as fast as the window allows */
	double duration_s;        /* send phase; always bounded */
	uint64_t requests;        /* 0: bounded by duration only */
	uint32_t mix[FL_MAX_MIX]; /* weights of ID, LIST, RANGE, INFO */
	uint16_t count;           /* IDs per LIST / RANGE request */
	bool pad;                 /* pad to fw_wire_request_size() */
	bool udp_cksum;           /* compute the UDP checksum (else send 0) */
	const char *json;         /* write the summary as JSON here */
	bool expect_echo;         /* the peer returns our own requests (testpmd macswap) */
	uint32_t window;          /* most requests outstanding (power of 2) */
	uint32_t timeout_ms;      /* outstanding longer than this: timed out */
	uint32_t time_bound_ms;   /* IDs must decode within this of our clock */
	uint64_t max_intervals;   /* memory cap of the uniqueness check (16 B each) */
	double link_wait_s;       /* wait this long for link up and the first answer */
	double linger_s; /* after the report: keep the port up this long or until a signal */
	struct fw_layout layout; /* used when the peer does not answer INFO */
	bool quiet;
	/* IPv6 requests (--dst-ip6): to dst_ip6 from src_ip6_base + k; the MAC is
	 * still resolved by ARP for dst_ip (or given with --dst-mac) */
	bool ipv6;
	uint8_t dst_ip6[16];
	uint8_t src_ip6_base[16];
};

/*
 * Parses flakeload's options (after "--"). Returns 0; 1 after printing
 * --help; -1 after printing what is wrong.
 */
int fl_options_parse(int argc, char **argv, struct fl_opts *o);
void fl_options_usage(const char *prog);

/* ---- hist.c: log-bucketed latency histogram, ns ---- */

#define FL_HIST_SUB_BITS 4 /* 16 sub-buckets per power of two: ~6 % resolution */
#define FL_HIST_BUCKETS  (64 << FL_HIST_SUB_BITS)

struct fl_hist {
	uint64_t n;
	uint64_t sum;
	uint64_t min;
	uint64_t max;
	uint64_t b[FL_HIST_BUCKETS];
};

void fl_hist_init(struct fl_hist *h);
void fl_hist_add(struct fl_hist *h, uint64_t ns);
/* Value at quantile q (0..1): the upper bound of its bucket, capped at max. 0 when empty. */
uint64_t fl_hist_quantile(const struct fl_hist *h, double q);

/* ---- verify.c: every ID received ---- */

enum fl_viol {
	FL_V_DUPLICATE = 0, /* an ID seen twice (uniqueness over the whole run) */
	FL_V_ORDER,         /* not strictly above the previous ID of its worker */
	FL_V_TIME,          /* decodes further than time_bound_ms from our clock */
	FL_V_WORKER,        /* the ID's worker/datacenter differ from the reply header's */
	FL_V_NEGATIVE,      /* bit 63 set */
	FL_V_ADDRESS,       /* reply not addressed to the client that asked */
	FL_V_STATUS_IDS,    /* IDs in a reply whose status is not OK, or fewer than zero */
	FL_V_COUNT
};

extern const char *const fl_viol_names[FL_V_COUNT];

struct fl_worker_last {
	uint32_t key; /* datacenter << 16 | worker, + 1 (0: empty) */
	uint64_t last;
	uint64_t ival; /* index + 1 of its open interval in the uniqueness store */
};

#define FL_WORKERS_MAX 4096

struct fl_verify {
	struct fw_layout layout;
	uint32_t time_bound_ms;
	uint64_t v[FL_V_COUNT];
	uint64_t first_bad[FL_V_COUNT]; /* an example ID per violation */
	struct fl_worker_last w[FL_WORKERS_MAX];
	uint32_t n_workers;
	uint64_t workers_untracked; /* IDs of workers beyond FL_WORKERS_MAX */
	/* uniqueness: [first, first + n) intervals, merged per worker as they arrive */
	struct fl_ival {
		uint64_t first;
		uint64_t n;
	} * ival;
	uint64_t n_ival;
	uint64_t cap_ival;
	uint64_t ids_unchecked; /* IDs not stored once the cap was reached */
	uint64_t ids;           /* IDs seen */
	/* how far IDs fell outside [sent, received]: most before (<= 0), most after (>= 0) */
	int64_t min_skew_ms;
	int64_t max_skew_ms;
	/*
	 * ID-space use: the ms the IDs carry (earliest, latest), the (worker, ms)
	 * pairs whose sequence 0 arrived (a ms the worker started) and those whose
	 * last sequence value arrived (a ms it used up).
	 */
	uint64_t id_ms_first;
	uint64_t id_ms_last;
	uint64_t ms_started;
	uint64_t ms_full;
};

/* Allocates the interval store (max_intervals x 16 bytes). Returns 0 or -ENOMEM. */
int fl_verify_init(struct fl_verify *v, const struct fw_layout *l, uint32_t time_bound_ms,
		   uint64_t max_intervals);
void fl_verify_free(struct fl_verify *v);
/*
 * Checks @n consecutive IDs first..first+n-1 (n 1 for single IDs) from the
 * reply header's (@dc, @worker). The request left at @sent_ms and the reply
 * came back at @recv_ms (unix ms, our clock): the IDs must decode to a time
 * in [sent_ms - time_bound_ms, recv_ms + time_bound_ms], so a reply delayed
 * by a stall of either process is not mistaken for a clock fault.
 */
void fl_verify_ids(struct fl_verify *v, uint64_t first, uint64_t n, uint16_t dc, uint16_t worker,
		   uint64_t sent_ms, uint64_t recv_ms);
/* The uniqueness check proper: sorts the intervals and counts overlaps. */
void fl_verify_finish(struct fl_verify *v);
uint64_t fl_verify_total(const struct fl_verify *v);

/* ---- the run ---- */

struct fl_slot {
	uint64_t tsc; /* send time; 0: free */
	uint32_t gen; /* generation, in the tag */
	uint32_t client;
	uint8_t op;
	uint16_t count;
};

struct fl_stats {
	uint64_t sent;
	uint64_t tx_full;     /* built but not taken by the TX queue (not sent) */
	uint64_t window_full; /* send rounds skipped because the window was full */
	uint64_t rx;          /* frames received */
	uint64_t replies;     /* matched to an outstanding request */
	uint64_t echoes;      /* our own request back (expect_echo) */
	uint64_t late;        /* tag of a request already timed out or answered */
	uint64_t foreign;     /* not for us: ARP, other protocols, ports, run IDs */
	uint64_t bad;         /* a flakewire reply that does not parse */
	uint64_t timeouts;    /* outstanding longer than timeout_ms */
	uint64_t by_op_sent[FL_MAX_MIX];
	uint64_t by_status[FW_WIRE_ST_COUNT];
	uint64_t flags_borrowed;
	uint64_t flags_partial;
	uint64_t ids;       /* IDs in OK replies */
	uint64_t first_tsc; /* first request sent */
	uint64_t last_send_tsc;
	uint64_t last_rx_tsc; /* last matched reply */
	uint64_t idle_tsc;    /* send phase rounds that neither sent nor received */
	uint64_t max_gap_tsc; /* longest time without a frame received, send phase */
	uint64_t last_frame_tsc;
};

struct fl_ctx {
	struct fl_opts o;
	uint16_t port_id;
	bool port_started;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	volatile bool *quit;
	uint64_t hz;
	/* outstanding requests */
	struct fl_slot *slot;
	uint32_t mask;
	uint64_t head; /* next slot to look at, mod window */
	uint32_t next_client;
	uint64_t outstanding;
	uint64_t run_id; /* top 16 bits of every tag */
	uint8_t mix_table[FL_MIX_TABLE];
	uint32_t mix_n;
	uint64_t rng;
	bool have_layout; /* learned from an INFO reply */
	struct fw_wire_info info;
	struct fl_stats st;
	struct fl_hist hist;
	struct fl_verify ver;
	double elapsed_s;
	char started_at[32];
};

/* ---- port.c ---- */

/* Probes @o.device, configures one RX/TX queue, starts it and waits for the link. */
int fl_port_open(struct fl_ctx *c);
void fl_port_close(struct fl_ctx *c);
/* Resolves o.dst_ip to o.dst_mac with ARP (from src_ip_base). Returns 0 or -ETIMEDOUT. */
int fl_arp_resolve(struct fl_ctx *c);

/* ---- loop.c ---- */

int fl_loop_init(struct fl_ctx *c);
/*
 * Sends INFO (or, with expect_echo, ID) requests until one is answered:
 * learns the layout from INFO. Returns 0 or -ETIMEDOUT.
 */
int fl_probe(struct fl_ctx *c);
/* The measured run: send phase, then drain up to timeout_ms. */
void fl_run(struct fl_ctx *c);
void fl_loop_free(struct fl_ctx *c);

/* ---- report.c ---- */

void fl_report_print(const struct fl_ctx *c);
int fl_report_json(const struct fl_ctx *c, const char *path);

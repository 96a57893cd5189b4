/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakeload: the DPDK load generator for flakewire. Internal contract: the
 * context passed explicitly to every part and the functions of each file
 * (options.c, port.c, loop.c, report.c). The only global is the quit flag in
 * main.c.
 *
 * One lcore (the main one) sends requests in bursts, each tagged with a slot
 * of a ring of outstanding requests plus that slot's generation, reads the
 * replies, matches them by tag, records the round trip in a log-bucketed
 * histogram and checks every ID received (lib/loadcheck).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mempool.h>

#include "fw_hist.h"
#include "fw_idcheck.h"
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

/*
 * The latency histogram and the ID verifier are lib/loadcheck's (fw_hist.h,
 * fw_idcheck.h), shared with flakectl bench. What only a packet-level
 * generator sees (a reply to the wrong address, IDs in an error reply) is
 * counted here, in fl_stats, and reported beside the verifier's findings.
 */

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
	uint64_t tx_full;      /* built but not taken by the TX queue (not sent) */
	uint64_t window_full;  /* send rounds skipped because the window was full */
	uint64_t rx;           /* frames received */
	uint64_t replies;      /* matched to an outstanding request */
	uint64_t echoes;       /* our own request back (expect_echo) */
	uint64_t late;         /* tag of a request already timed out or answered */
	uint64_t foreign;      /* not for us: ARP, other protocols, ports, run IDs */
	uint64_t bad;          /* a flakewire reply that does not parse */
	uint64_t misaddressed; /* a violation: reply not addressed to the client that asked */
	uint64_t bad_reply;    /* a violation: IDs in a reply whose status is not OK, or an
				* OK reply with other than the count asked for (fewer
				* only when flagged PARTIAL) */
	uint64_t timeouts;     /* outstanding longer than timeout_ms */
	uint64_t by_op_sent[FL_MAX_MIX];
	uint64_t by_op_ok[FL_MAX_MIX]; /* answered with status OK */
	uint64_t by_status[FW_WIRE_ST_COUNT];
	uint64_t flags_borrowed;
	uint64_t flags_partial;
	uint64_t ids;       /* IDs in OK replies */
	uint64_t ids_asked; /* IDs the requests answered OK asked for */
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
	struct fw_hist hist;
	struct fw_idcheck ver;
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

/* Every violation: the verifier's findings plus misaddressed and bad_reply (0: clean). */
uint64_t fl_violations(const struct fl_ctx *c);

void fl_report_print(const struct fl_ctx *c);
int fl_report_json(const struct fl_ctx *c, const char *path);

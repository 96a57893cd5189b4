/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire's internal contract: the context passed explicitly to every
 * part of the responder, the per-lcore state and the functions of each
 * file (one concept per file). The only global is force_quit in main.c.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_log.h>
#include <rte_mempool.h>

#include "fw_clock.h"
#include "fw_conf.h"
#include "fw_keeper.h"
#include "fw_layout.h"
#include "fw_policy.h"
#include "fw_serve.h"

#define FW_BURST 32

extern int fw_logtype;
#define FW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, fw_logtype, "flakewire: " fmt "\n", ##__VA_ARGS__)

/* Why a frame got no reply (besides the wire drops counted by fw_serve). */
enum fw_drop {
	FW_DROP_NOT_IP = 0, /* neither IPv4 nor ARP (VLAN, IPv6, LLDP, ...) */
	FW_DROP_NOT_US,     /* not our MAC/IPv4 address, ARP not asking for us */
	FW_DROP_IP_OPTS,    /* IPv4 header with options */
	FW_DROP_FRAG,       /* IPv4 fragment */
	FW_DROP_BAD_CSUM,   /* bad IPv4, UDP or ICMP checksum */
	FW_DROP_BAD_LEN,    /* truncated, lengths inconsistent, multi-segment */
	FW_DROP_PROTO,      /* other IP protocol, ICMP other than echo request */
	FW_DROP_PORT,       /* UDP to another port */
	FW_DROP_WIRE,       /* not a flakewire request (fw_serve_answer dropped it) */
	FW_DROP_SOURCE,     /* IPv4 source outside [net] allow */
	FW_DROP_REFLECTOR,  /* UDP source port in [net] reflector_ports */
	FW_DROP_RATE,       /* over [net] rate for its prefix, not slipped */
	/* IPv6 (pkt6.c) */
	FW_DROP_IPV6_EXT,      /* an IPv6 extension header other than a fragment */
	FW_DROP_ND,            /* neighbour solicitation failing RFC 4861 7.1.1 */
	FW_DROP_UDP6_NO_CKSUM, /* UDP over IPv6 with checksum 0 (mandatory in IPv6) */
	FW_DROP_COUNT
};

extern const char *const fw_drop_names[FW_DROP_COUNT];

struct fw_lcore_stats {
	uint64_t rx;
	uint64_t tx;
	uint64_t tx_dropped; /* replies the TX queue did not take */
	uint64_t arp;        /* ARP replies built */
	uint64_t icmp;       /* echo replies built */
	uint64_t udp;        /* flakewire replies built (slipped ones included) */
	uint64_t drop[FW_DROP_COUNT];
	uint64_t rate_limited;   /* requests over the rate: drop[FW_DROP_RATE] + slipped */
	uint64_t slipped;        /* of those, answered RETRY_AFTER */
	uint64_t rate_evictions; /* filled in when read (fw_stats_lcore), not per packet */
	/* IPv6 (pkt6.c): nd is a reply of its own; the others are parts of rx, icmp, udp */
	uint64_t nd;    /* neighbour advertisements built */
	uint64_t rx6;   /* IPv6 frames received (of rx) */
	uint64_t icmp6; /* ICMPv6 echo replies built (of icmp) */
	uint64_t udp6;  /* flakewire replies over IPv6 (of udp) */
};

/*
 * A source's policy verdict, cached per lcore (pkt.c src_verdict): the
 * [net] allow and trusted lists are fixed while lcores run.
 */
#define FW_SRC_VALID      0x1u
#define FW_SRC_ALLOWED    0x2u
#define FW_SRC_TRUSTED    0x4u
#define FW_SRC_CACHE_BITS 6
struct fw_src_cache {
	uint32_t src_be;  /* IPv4 source, network order */
	uint32_t verdict; /* FW_SRC_*; 0: empty */
};

/* One per worker lcore (every EAL lcore, the main one included). */
struct fw_lcore {
	struct fw_serve serve;
	struct fw_lcore_stats st;
	uint32_t lcore_id;
	uint32_t index;             /* 0-based worker index */
	uint16_t queue;             /* its RX and TX queue on every port */
	uint32_t worker_id;         /* generator worker ID */
	struct fw_keeper_worker kw; /* its keeper slot: clock, mark, lease, worker swaps */
	uint64_t tsc;               /* TSC of the burst being answered (fw_lcore_clock) */
	struct fw_rate *rate;       /* this lcore's rate limiter; NULL when [net] rate = 0 */
	struct fw_src_cache src_cache[1u << FW_SRC_CACHE_BITS];
	uint32_t ports_down; /* bit p: port p's link is down, not polled (fw_lcore_link_watch) */
	uint32_t link_countdown; /* loop iterations until the next look at the TSC */
	uint64_t link_next_tsc;  /* TSC of the next link check */
} FW_CACHE_ALIGNED;

struct fw_port {
	uint16_t port_id;
	uint16_t nb_queues;
	uint32_t addr_be; /* our IPv4 address, network order */
	struct rte_ether_addr mac;
	bool tx_cksum; /* IPv4 + UDP checksum offload in use */
	bool rss;
	char name[RTE_ETH_NAME_MAX_LEN];
	/* net_af_xdp on a kernel interface (afxdp.c); iface is its name */
	bool probed; /* an ethdev exists: close it on the way out */
	bool af_xdp;
	char iface[16];
	int lock_fd; /* af_xdp: flock held while this process serves iface */
	/* IPv6 addresses (network order), set by fw_pkt6_port_start() */
	uint32_t n_addr6;
	uint8_t addr6[FW_CONF_ADDR6_MAX][16];
};

struct fw_app {
	volatile bool *quit;
	struct fw_conf conf;
	struct fw_layout layout;
	struct rte_mempool *pool;
	uint32_t n_ports;
	struct fw_port port[FW_CONF_PORTS_MAX];
	uint32_t n_lcores;
	struct fw_lcore *lcore;             /* n_lcores, rte_zmalloc'd */
	int16_t lcore_index[RTE_MAX_LCORE]; /* lcore id -> index in lcore[], -1 */
	struct fw_policy srcpol;            /* [net] allow and reflector_ports, read-only */
	/*
	 * The timekeeper (lib/keeper), driven by the control thread only; lcores
	 * read their slot of it once per burst (fw_lcore_clock). The fields
	 * below mirror its status for telemetry and the stats line.
	 */
	struct fw_keeper *keeper;
	uint64_t floor_unix_ms; /* persisted mark read at start (0: none) */
	uint64_t mark_unix_ms;  /* mark persisted and published */
	bool mark_failing;      /* the last persist failed */
	uint64_t mark_writes;
	uint64_t mark_failures;
	uint64_t clock_events;
	struct fw_lcore_stats prev_st; /* stats line: totals at the last line */
	struct fw_serve_stats prev_ss;
	pthread_t control;
	bool control_started;
	struct fw_fleet_app *fleet; /* [fleet]: worker-ID registry glue (fleet.c), or NULL */
	/* lcore i's first worker ID when not [id]'s (fleet.c sets it), or NULL */
	int64_t (*worker_of)(const struct fw_app *app, uint32_t i);
};

/*
 * fleet.c: worker IDs claimed through ZooKeeper ([fleet] zookeeper). start:
 * before fw_lcores_init (claims; -1: refuse to start, logged); worker: lcore
 * i's first worker ID (fleet, or [id]; -1 when [id] workers is too short);
 * attach: after the keeper started; tick: every control tick with the
 * keeper's events; stop: after the lcores stopped.
 */
struct fw_fleet_app;
int fw_fleet_wire_start(struct fw_app *app);
int64_t fw_fleet_wire_worker(const struct fw_app *app, uint32_t i);
void fw_fleet_wire_attach(struct fw_app *app);
void fw_fleet_wire_tick(struct fw_app *app, uint32_t events, uint64_t tsc, uint64_t wall_ns);
void fw_fleet_wire_stop(struct fw_app *app);

/* options.c */
enum fw_mode {
	FW_MODE_RUN = 0,
	FW_MODE_HELP,
	FW_MODE_PRINT_CONFIG,
	FW_MODE_CHECK_CONFIG,
	FW_MODE_VERSION,
};
/*
 * Splits argv: EAL arguments before "--", flakewire's after. Reads --config
 * and applies --set in order into @conf. Prints errors to stderr.
 * Returns 0 with *mode and *eal_argc set, or -1 on a usage error.
 */
int fw_options_parse(int argc, char **argv, struct fw_conf *conf, enum fw_mode *mode,
		     int *eal_argc);
void fw_options_usage(const char *prog);

/* port.c */
int fw_ports_open(struct fw_app *app);
void fw_ports_close(struct fw_app *app);

/*
 * afxdp.c: ports in mode af_xdp, or whose device is a net_af_xdp string.
 * fw_afxdp_prepare() runs before the probe: pre-flight checks of the
 * interface (exists, up, IPv4, bpffs, a stale program, queues) and the
 * devargs written into @devargs; it fills p->af_xdp, p->iface, p->addr_be.
 * fw_afxdp_started() points the attached program at [net] udp_port;
 * fw_afxdp_closed() detaches the program if the PMD left it. Return 0 or -1
 * (the reason logged).
 */
bool fw_afxdp_wanted(const struct fw_conf_port *pc);
int fw_afxdp_prepare(struct fw_app *app, uint32_t idx, char *devargs, size_t len);
int fw_afxdp_started(struct fw_app *app, uint32_t idx);
void fw_afxdp_closed(struct fw_app *app, uint32_t idx);

/* pkt.c: answers the frame in place; returns true when it must be sent back */
bool fw_pkt_answer(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
		   struct rte_mbuf *m, uint64_t now);
/*
 * pkt.c: answers a burst of @n frames received on @port (fw_pkt_answer on
 * each, inlined, the next frame prefetched): the frames to send back go to
 * tx[], in order, the others to fr[] (*nfr of them) for the caller to free.
 * Counts them in lc->st.rx. @now: fw_lcore_clock() of this burst.
 * Returns the number of replies in tx[].
 */
uint16_t fw_pkt_burst(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
		      struct rte_mbuf **pkts, uint16_t n, uint64_t now, struct rte_mbuf **tx,
		      struct rte_mbuf **fr, uint16_t *nfr);

/*
 * pkt.c: the slipped answer to a rate-limited request (IPv4 and IPv6): its
 * header with status RETRY_AFTER, 24 bytes, never more than the request.
 * Returns the length, or -1 when the datagram is no request (drop it).
 */
int fw_pkt_slip_reply(const struct fw_lcore *lc, uint8_t *payload, size_t len, uint32_t retry_us);

/*
 * pkt6.c: fw_pkt6_answer() is fw_pkt_answer() for an IPv6 frame (EtherType
 * 0x86dd), with the same contract; replies carry at most
 * FW_PKT6_PAYLOAD_MAX UDP payload bytes (1500 - 40 - 8).
 * fw_pkt6_policy_init() sets the IPv6 [net] allow prefixes in app->srcpol
 * (after fw_policy_init); returns 0 or -1.
 * The pkt6.c and port6.c functions are weak references: a program linking
 * pkt.c or port.c without them (a test or bench harness) links and has no
 * IPv6 (the function pointers are NULL); flakewire has both.
 */
#define FW_PKT6_PAYLOAD_MAX 1452
__attribute__((weak)) bool fw_pkt6_answer(struct fw_app *app, struct fw_lcore *lc,
					  const struct fw_port *port, struct rte_mbuf *m,
					  uint64_t now);
__attribute__((weak)) int fw_pkt6_policy_init(struct fw_app *app);

/*
 * port6.c: after the port started: takes its IPv6 addresses ([portN]
 * address6; af_xdp: the interface's own) and lets the solicited-node
 * multicast groups in (multicast address list, else all-multicast).
 * Returns 0 or -1 (logged).
 */
__attribute__((weak)) int fw_pkt6_port_start(struct fw_app *app, uint32_t idx);

/* lcore.c: the burst loop, launched on every lcore */
int fw_lcore_main(void *arg);
/*
 * Reads each port's link state (rte_eth_link_get_nowait, no wait) into
 * lc->ports_down: a port whose link is down is not polled until it is up
 * again (a memif peer that went away: DPDK 22.11's memif PMD tears the
 * rings down in the interrupt thread with no lock against a polling lcore).
 * A port whose driver cannot tell stays polled. Logs each change. Called
 * by fw_lcore_main at most every FW_LINK_CHECK_MS (it looks at the TSC
 * every FW_LINK_CHECK_LOOPS loop iterations).
 */
void fw_lcore_link_watch(struct fw_app *app, struct fw_lcore *lc);
#define FW_LINK_CHECK_LOOPS 1024
/* at most 100 link reads a second (net_tap answers each with an ioctl) */
#define FW_LINK_CHECK_MS    10
int fw_lcores_init(struct fw_app *app);
/*
 * Reads the clock once for a burst: sets lc->tsc (rate limiting), the
 * mark and clock flags of lc->serve; returns ms since the layout epoch, the
 * @now of fw_pkt_answer. Every burst loop calls it before fw_pkt_answer.
 */
uint64_t fw_lcore_clock(struct fw_app *app, struct fw_lcore *lc);
/*
 * Builds the source policy and, when [net] rate > 0, each lcore's rate
 * limiter (called by fw_lcores_init; separate for the fuzz harness).
 * Returns 0 or -1 (logged).
 */
int fw_lcores_policy_init(struct fw_app *app);
/*
 * [net] rate and rate_burst are for the whole responder. RSS may spread one
 * source's flows (source ports) over every lcore, and a limiter shared
 * between lcores would cost an atomic per request, so each of @n_lcores
 * lcores enforces its share: *lc_rate = ceil(@rate / n), *lc_burst =
 * ceil(@burst / n) (at least 1). A source gets at most about @rate in all
 * however its flows are spread; one whose flows all land on one lcore gets
 * that lcore's share. @rate 0 (no limit) stays 0.
 */
void fw_lcores_rate_share(uint32_t rate, uint32_t burst, uint32_t n_lcores, uint32_t *lc_rate,
			  uint32_t *lc_burst);

/* clock_pub.c: the tick source and the system clock as the keeper reads them */
uint64_t fw_tsc_ticks(void);         /* rte_rdtsc(): the lcores' tick source */
uint64_t fw_tsc_ticks_precise(void); /* rte_rdtsc_precise(), for samples */
uint64_t fw_realtime_ns(void);       /* CLOCK_REALTIME */
uint64_t fw_wall_ns(void);           /* CLOCK_REALTIME through fw_testclock_ns */
/*
 * A keeper for tools that run the packet path without the control thread
 * (flakeload-pktbench, the fuzz harness): calibrated from rte_get_tsc_hz(),
 * the mark @ahead_ms ahead of now, nothing persisted. Returns 0 or -1.
 */
int fw_clock_fixed(struct fw_app *app, uint64_t ahead_ms);
/*
 * Test-clock hooks, called by the control thread only. clock_pub.c defines
 * them as weak no-ops (flakewire); testclock.c, linked only into
 * flakewire-testclock for tests/system/faults, replaces them with a fault
 * file's clock offset, TSC rate error and pauses.
 */
int fw_testclock_init(struct fw_app *app);  /* 0, or -1: do not start */
void fw_testclock_poll(struct fw_app *app); /* every control tick */
uint64_t fw_testclock_ns(uint64_t ns);      /* a CLOCK_REALTIME sample, faults applied */

/* control.c */
int fw_control_start_state(struct fw_app *app); /* mark + calibration, before lcores */
int fw_control_start(struct fw_app *app);       /* the control thread */
void fw_control_stop(struct fw_app *app);       /* joins it, persists the final mark */

/* stats.c */
void fw_stats_sum(const struct fw_app *app, struct fw_lcore_stats *st, struct fw_serve_stats *ss);
/* One lcore's counters as read by telemetry (rate_evictions filled in). */
void fw_stats_lcore(const struct fw_lcore *lc, struct fw_lcore_stats *st);
void fw_stats_line(struct fw_app *app, double interval_s);

/* telemetry.c */
int fw_telemetry_register(struct fw_app *app);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet module: a frame answered in place (pkt.c: Ethernet dispatch,
 * ARP, IPv4, ICMP, UDP; pkt6.c: IPv6, neighbour discovery, ICMPv6; the
 * helpers both share in pkt_util.h). The dependency runs one way: pkt.c
 * hands IPv6 frames to pkt6.c (pkt6.h), pkt6.c never calls into pkt.c.
 *
 * What the packet path reads besides the frame is one read-only struct
 * fwire_pkt_ctx, reached from the lcore (lc->px), and the lcore's own state
 * (struct fwire_lcore, lcore.h): no application. A harness (the dataplane
 * tests, the fuzzers, flakeload-pktbench) builds a context and an lcore.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "fw_conf.h"
#include "fw_policy.h"

#define FW_BURST 32

struct fwire_lcore;
struct fwire_port;

/* Why a frame got no reply (besides the wire drops counted by fw_serve). */
enum fwire_drop {
	FW_DROP_NOT_IP = 0, /* neither IPv4 nor ARP (VLAN, IPv6, LLDP, ...) */
	FW_DROP_NOT_US,     /* not our MAC/IPv4 address, ARP not asking for us */
	FW_DROP_IP_OPTS,    /* IPv4 header with options */
	FW_DROP_FRAG,       /* IPv4 fragment */
	FW_DROP_BAD_CSUM,   /* bad IPv4, UDP or ICMP checksum */
	FW_DROP_BAD_LEN,    /* truncated, lengths inconsistent, multi-segment */
	FW_DROP_PROTO,      /* other IP protocol, ICMP other than echo request */
	FW_DROP_PORT,       /* UDP to another port */
	FW_DROP_WIRE,       /* not a flakewire request (fw_serve_answer dropped it) */
	FW_DROP_SOURCE,     /* source outside [net] allow */
	FW_DROP_REFLECTOR,  /* UDP source port in [net] reflector_ports */
	FW_DROP_RATE,       /* over [net] rate for its prefix, not slipped */
	/* IPv6 (pkt6.c) */
	FW_DROP_IPV6_EXT,      /* an IPv6 extension header other than a fragment */
	FW_DROP_ND,            /* neighbour solicitation failing RFC 4861 7.1.1 */
	FW_DROP_UDP6_NO_CKSUM, /* UDP over IPv6 with checksum 0 (mandatory in IPv6) */
	/*
	 * Martians, before any policy (fw_policy_martian*): a source address
	 * no peer on the wire has, in the order of enum fw_policy_martian
	 * (IPv4-mapped IPv6 under the IPv4 reason), then a group source MAC.
	 */
	FW_DROP_MARTIAN_LOOPBACK,    /* 127.0.0.0/8, ::1 */
	FW_DROP_MARTIAN_UNSPECIFIED, /* 0.0.0.0/8, :: (except a duplicate address probe) */
	FW_DROP_MARTIAN_MULTICAST,   /* 224.0.0.0/4, ff00::/8 */
	FW_DROP_MARTIAN_BROADCAST,   /* 255.255.255.255 */
	FW_DROP_MARTIAN_SELF,        /* one of the responder's own addresses */
	FW_DROP_MARTIAN_MAC,         /* a multicast or broadcast source MAC */
	FW_DROP_COUNT
};

/* The drop reason of martian reason @m (not FW_POLICY_MARTIAN_NONE). */
#define FW_DROP_MARTIAN(m) \
	((enum fwire_drop)(FW_DROP_MARTIAN_LOOPBACK - FW_POLICY_MARTIAN_LOOPBACK + (m)))

/* The counters' names in telemetry and /metrics ("drop_" + name). */
extern const char *const fwire_drop_names[FW_DROP_COUNT];

/* One lcore's packet counters: written by that lcore only, summed by stats.c. */
struct fwire_lcore_stats {
	uint64_t rx;
	uint64_t tx;
	uint64_t tx_dropped; /* replies the TX queue did not take */
	uint64_t arp;        /* ARP replies built */
	uint64_t icmp;       /* echo replies built */
	uint64_t udp;        /* flakewire replies built (slipped ones included) */
	uint64_t drop[FW_DROP_COUNT];
	uint64_t rate_limited;   /* requests over the rate: drop[FW_DROP_RATE] + slipped */
	uint64_t slipped;        /* of those, answered RETRY_AFTER */
	uint64_t rate_evictions; /* filled in when read (fwire_stats_lcore), not per packet */
	/* IPv6 (pkt6.c): nd is a reply of its own; the others are parts of rx, icmp, udp */
	uint64_t nd;    /* neighbour advertisements built */
	uint64_t rx6;   /* IPv6 frames received (of rx) */
	uint64_t icmp6; /* ICMPv6 echo replies built (of icmp) */
	uint64_t udp6;  /* flakewire replies over IPv6 (of udp) */
};

/*
 * What the packet path needs besides the frame, the port and the lcore:
 * read-only once the lcores run, shared by all of them.
 */
struct fwire_pkt_ctx {
	struct fw_policy policy;  /* [net] allow, trusted, reflector_ports (both families) */
	uint32_t udp_port;        /* [net] udp_port */
	uint32_t max_reply_bytes; /* [net] max_reply_bytes */
};

/*
 * Builds *px from @c. *@outside, *@outside6 (may be NULL): bit i set for
 * each [net] trusted prefix outside [net] allow (fw_responder_policy), for
 * the caller to report. Returns 0, or -1 when a prefix list is too long.
 */
int fwire_pkt_ctx_init(struct fwire_pkt_ctx *px, const struct fw_conf *c, uint32_t *outside,
		       uint32_t *outside6);

/*
 * Adds @port's addresses (IPv4 and IPv6, set once it started) to the
 * responder's own in @px->policy: from the wire, a frame with one of them
 * as its source is a martian (FW_DROP_MARTIAN_SELF). fwire_pkt_ctx_init()
 * turns the martian filter on; call this for every port before the lcores
 * run. Returns 0, or -1 when more addresses than FW_POLICY_SELF_MAX.
 */
int fwire_pkt_ctx_add_port(struct fwire_pkt_ctx *px, const struct fwire_port *port);

/*
 * Answers the frame @m received on @port in place, with the lcore's
 * context @lc->px. @now: fwire_lcore_clock() of this burst. Returns true when
 * @m is now the reply to send back, false when it is to be freed (the
 * reason counted in lc->st).
 */
bool fwire_pkt_answer(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
		      uint64_t now);

/*
 * Answers a burst of @n frames received on @port (fwire_pkt_answer on each,
 * inlined, the next frame prefetched): the frames to send back go to tx[],
 * in order, the others to fr[] (*nfr of them) for the caller to free.
 * Counts them in lc->st.rx. @now: fwire_lcore_clock() of this burst.
 * Returns the number of replies in tx[].
 */
uint16_t fwire_pkt_burst(struct fwire_lcore *lc, const struct fwire_port *port,
			 struct rte_mbuf **pkts, uint16_t n, uint64_t now, struct rte_mbuf **tx,
			 struct rte_mbuf **fr, uint16_t *nfr);

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_frame's IPv6 helpers (fuzz_frame6.c); each aborts on a broken property. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "fw_conf.h"
#include "fw_policy.h"
#include "lcore.h"
#include "port.h"

/* The request's headers, kept before it is answered in place. */
struct fuzz6_req {
	size_t seg; /* 0: not an IPv6 frame */
	struct rte_ether_hdr eth;
	struct rte_ipv6_hdr ip;
	struct rte_udp_hdr udp;
};

/* Fix-ups of the harness header's @how bits (0x10 addresses, 0x04 lengths, 0x02 checksums). */
void fuzz6_fix_up(uint8_t *f, size_t len, uint8_t how, const struct fwire_port *port);
/* Saves the request in *r; returns whether it is an IPv6 frame. */
bool fuzz6_save(const uint8_t *f, size_t seg, struct fuzz6_req *r);
/* Whether the reply may be larger than the request (trusted source, or NDP). */
bool fuzz6_trusted(const struct fw_conf *conf, const struct fuzz6_req *r);
/* Pre-charges the source's rate bucket @n times. */
void fuzz6_charge(struct fw_rate *rate, const struct fuzz6_req *r, unsigned n, uint64_t tsc);
/* The properties of an IPv6 reply to @r. */
void fuzz6_check_reply(const struct fw_conf *conf, const struct fwire_port *port,
		       const struct fuzz6_req *r, bool trusted, const struct rte_mbuf *m);

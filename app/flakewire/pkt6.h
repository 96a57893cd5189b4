/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pkt6.c: IPv6 on the packet path, called by pkt.c's Ethernet dispatch for
 * every IPv6 frame (EtherType 0x86dd); it never calls back into pkt.c.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

struct fwire_lcore;
struct fwire_port;

/* UDP payload of an IPv6 reply at most: a 1500-byte MTU less 40 + 8. */
#define FW_PKT6_PAYLOAD_MAX 1452

/*
 * fwire_pkt_answer() for an IPv6 frame, with the same contract. It may issue
 * IDs: a caller holding a struct fw_serve_run writes it back around it.
 */
bool fwire_pkt6_answer(struct fwire_lcore *lc, const struct fwire_port *port, struct rte_mbuf *m,
		       uint64_t now);

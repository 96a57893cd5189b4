/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port as the packet path sees it (its addresses, whether its device
 * writes checksums) and the functions that open and close the ports:
 * port.c (DPDK devices), port6.c (their IPv6 side), afxdp.c (net_af_xdp on
 * a kernel interface).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_ether.h>

#include "fw_conf.h"

struct fwire_app;

struct fwire_port {
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
	/*
	 * The kernel interface behind the device (net_tap, net_af_xdp) when the
	 * port started: its index and name, for the link watch (poll.c);
	 * 0 and "" for a device without one (memif, ring, PCI).
	 */
	uint32_t kif_index;
	char kif_name[16];
	/* IPv6 addresses (network order), set by fwire_port6_start() */
	uint32_t n_addr6;
	uint8_t addr6[FW_CONF_ADDR6_MAX][16];
};

/* port.c: opens, configures and starts every [portN]; closes them. 0 or -1 (logged). */
int fwire_ports_open(struct fwire_app *app);
void fwire_ports_close(struct fwire_app *app);

/*
 * port6.c: after the port started: takes its IPv6 addresses ([portN]
 * address6; af_xdp: the interface's own) and lets the solicited-node
 * multicast groups in (multicast address list, else all-multicast).
 * Returns 0 or -1 (logged).
 */
int fwire_port6_start(struct fwire_app *app, uint32_t idx);

/*
 * afxdp.c (afxdp_none.c without lib/xdp): ports in mode af_xdp, or whose
 * device is a net_af_xdp string. fwire_afxdp_prepare() runs before the probe:
 * pre-flight checks of the interface (exists, up, IPv4, bpffs, a stale
 * program, queues) and the devargs written into @devargs; it fills
 * p->af_xdp, p->iface, p->addr_be. fwire_afxdp_started() points the attached
 * program at [net] udp_port; fwire_afxdp_closed() detaches the program if the
 * PMD left it. Return 0 or -1 (the reason logged).
 */
bool fwire_afxdp_wanted(const struct fw_conf_port *pc);
int fwire_afxdp_prepare(struct fwire_app *app, uint32_t idx, char *devargs, size_t len);
int fwire_afxdp_started(struct fwire_app *app, uint32_t idx);
void fwire_afxdp_closed(struct fwire_app *app, uint32_t idx);

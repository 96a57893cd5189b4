/* SPDX-License-Identifier: BSD-3-Clause */
/* Port bring-up (one RX and one TX queue), link wait and ARP resolution. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "fl.h"
#include "fw_ethdev.h"

#define RX_DESC    1024
#define TX_DESC    1024
#define POOL_CACHE 256

static int wait_link(struct fl_ctx *c)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(c->o.link_wait_s * (double)c->hz);
	struct rte_eth_link link;

	while (!*c->quit && rte_rdtsc() < end) {
		if (!rte_eth_link_get_nowait(c->port_id, &link) && link.link_status)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "flakeload: %s: link still down after %.1f s (is the peer running?)\n",
		c->o.device, c->o.link_wait_s);
	return -ETIMEDOUT;
}

int fl_port_open(struct fl_ctx *c)
{
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	uint16_t nrx = RX_DESC, ntx = TX_DESC;
	int rc;

	/* in flight: the window, both rings, a burst and the per-lcore cache */
	uint32_t n = c->o.window + RX_DESC + TX_DESC + 2 * FL_BURST + 2 * POOL_CACHE + 1024;
	c->pool = rte_pktmbuf_pool_create("fl_pool", n, POOL_CACHE, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					  rte_socket_id());
	if (!c->pool) {
		fprintf(stderr, "flakeload: cannot create a pool of %u mbufs: %s (raise -m?)\n", n,
			rte_strerror(rte_errno));
		return -1;
	}
	rc = fw_ethdev_attach(c->o.device, &c->port_id);
	if (rc) {
		fprintf(stderr, "flakeload: cannot attach '%s': %s\n", c->o.device,
			rte_strerror(-rc));
		return -1;
	}
	rc = rte_eth_dev_info_get(c->port_id, &info);
	if (!rc)
		rc = rte_eth_dev_configure(c->port_id, 1, 1, &conf);
	if (!rc)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(c->port_id, &nrx, &ntx);
	int socket = rte_eth_dev_socket_id(c->port_id);
	if (!rc)
		rc = rte_eth_rx_queue_setup(c->port_id, 0, nrx, socket, NULL, c->pool);
	if (!rc)
		rc = rte_eth_tx_queue_setup(c->port_id, 0, ntx, socket, NULL);
	if (!rc)
		rc = rte_eth_dev_start(c->port_id);
	if (rc) {
		fprintf(stderr, "flakeload: %s: setup failed: %s\n", c->o.device,
			rte_strerror(-rc));
		return -1;
	}
	c->port_started = true;
	rte_eth_macaddr_get(c->port_id, &c->mac);
	(void)rte_eth_promiscuous_enable(c->port_id); /* best effort: not every device has it */
	if (!c->o.quiet) {
		char mac[RTE_ETHER_ADDR_FMT_SIZE];
		rte_ether_format_addr(mac, sizeof(mac), &c->mac);
		printf("flakeload: %s (driver %s) MAC %s, %u/%u descriptors\n", c->o.device,
		       info.driver_name, mac, nrx, ntx);
	}
	return wait_link(c);
}

void fl_port_close(struct fl_ctx *c)
{
	if (c->port_started) {
		rte_eth_dev_stop(c->port_id);
		rte_eth_dev_close(c->port_id);
		c->port_started = false;
	}
}

static void send_arp_request(struct fl_ctx *c)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(c->pool);

	if (!m)
		return;
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
	memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	eth->src_addr = c->mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = c->mac;
	arp->arp_data.arp_sip = htonl(c->o.src_ip_base);
	memset(&arp->arp_data.arp_tha, 0, RTE_ETHER_ADDR_LEN);
	arp->arp_data.arp_tip = htonl(c->o.dst_ip);
	m->data_len = m->pkt_len = sizeof(*eth) + sizeof(*arp);
	if (!rte_eth_tx_burst(c->port_id, 0, &m, 1))
		rte_pktmbuf_free(m);
}

int fl_arp_resolve(struct fl_ctx *c)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(c->o.link_wait_s * (double)c->hz);
	uint64_t next = 0;
	struct rte_mbuf *pkts[FL_BURST];

	while (!*c->quit && rte_rdtsc() < end) {
		if (rte_rdtsc() >= next) {
			send_arp_request(c);
			next = rte_rdtsc() + c->hz / 10;
		}
		uint16_t n = rte_eth_rx_burst(c->port_id, 0, pkts, FL_BURST);
		bool found = false;
		for (uint16_t i = 0; i < n; i++) {
			struct rte_ether_hdr *eth =
				rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
			struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
			if (!found && pkts[i]->data_len >= sizeof(*eth) + sizeof(*arp) &&
			    eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_ARP) &&
			    arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REPLY) &&
			    arp->arp_data.arp_sip == htonl(c->o.dst_ip)) {
				c->o.dst_mac = arp->arp_data.arp_sha;
				found = true;
			}
		}
		rte_pktmbuf_free_bulk(pkts, n);
		if (found) {
			c->o.have_dst_mac = true;
			return 0;
		}
		if (!n)
			usleep(1000);
	}
	struct in_addr a = {.s_addr = htonl(c->o.dst_ip)};
	fprintf(stderr, "flakeload: no ARP reply for %s within %.1f s (give --dst-mac?)\n",
		inet_ntoa(a), c->o.link_wait_s);
	return -ETIMEDOUT;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Port bring-up: probe the device, one RX/TX queue per worker, offloads and RSS by capability. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "app.h"
#include "fw_ethdev.h"
#include "log.h"
#include "port.h"
#include "power.h"

#define POOL_CACHE 256

static int pool_create(struct fwire_app *app)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < app->conf.n_ports; i++)
		n += app->n_lcores * (app->conf.port[i].rx_desc + app->conf.port[i].tx_desc);
	n += app->n_lcores * (FW_BURST + POOL_CACHE) + 1024;
	app->pool = rte_pktmbuf_pool_create("fw_pool", n, POOL_CACHE, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					    rte_socket_id());
	if (!app->pool) {
		FW_LOG(ERR, "cannot create a pool of %u mbufs: %s (raise -m?)", n,
		       rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* Undoes a port_open() that failed half-way: close the ethdev, remove the XDP program. */
static void port_abandon(struct fwire_app *app, uint32_t idx)
{
	struct fwire_port *p = &app->port[idx];

	if (p->probed) {
		int rc = rte_eth_dev_stop(p->port_id);
		if (rc)
			FW_LOG(WARNING, "port%u: stop: %s", idx, rte_strerror(-rc));
		rc = rte_eth_dev_close(p->port_id);
		if (rc)
			FW_LOG(WARNING, "port%u: close: %s", idx, rte_strerror(-rc));
		p->probed = false;
	}
	if (p->af_xdp)
		fwire_afxdp_closed(app, idx);
}

static int port_open(struct fwire_app *app, uint32_t idx)
{
	const struct fw_conf_port *pc = &app->conf.port[idx];
	struct fwire_port *p = &app->port[idx];
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	uint16_t nq = (uint16_t)app->n_lcores;
	char addr[INET_ADDRSTRLEN];
	char xdp_args[FW_CONF_STR_LEN + 1200];
	const char *device = pc->device;
	int rc;

	if (fwire_afxdp_wanted(pc)) {
		if (fwire_afxdp_prepare(app, idx, xdp_args, sizeof(xdp_args)))
			return -1;
		device = xdp_args;
	}
	rc = fw_ethdev_attach(device, &p->port_id);
	if (rc) {
		FW_LOG(ERR, "port%u: cannot attach device '%s': %s", idx, device,
		       rte_strerror(-rc));
		return -1;
	}
	p->probed = true;
	rc = rte_eth_dev_get_name_by_port(p->port_id, p->name);
	if (rc) {
		FW_LOG(ERR, "port%u: name of ethdev %u: %s", idx, p->port_id, rte_strerror(-rc));
		return -1;
	}
	rc = rte_eth_dev_info_get(p->port_id, &info);
	if (rc) {
		FW_LOG(ERR, "port%u: dev_info: %s", idx, rte_strerror(-rc));
		return -1;
	}
	if (nq > info.max_rx_queues || nq > info.max_tx_queues) {
		FW_LOG(ERR, "port%u (%s): %u lcores need %u queues, the device has %u RX / %u TX",
		       idx, p->name, nq, nq, info.max_rx_queues, info.max_tx_queues);
		return -1;
	}
	if (nq > 1) {
		uint64_t want = RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_IPV4;
		conf.rx_adv_conf.rss_conf.rss_hf = want & info.flow_type_rss_offloads;
		if (conf.rx_adv_conf.rss_conf.rss_hf) {
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
			p->rss = true;
		}
	}
	const uint64_t cks = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	if ((info.tx_offload_capa & cks) == cks) {
		conf.txmode.offloads = cks;
		p->tx_cksum = true;
	}
	/*
	 * Replies are the requests' own mbufs: one pool, reference count 1, one
	 * segment, never attached. The PMD may put them back in bulk.
	 */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	/* Checksums the device verified on receive need no second look in software. */
	const uint64_t rx_cks = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	conf.rxmode.offloads = info.rx_offload_capa & rx_cks;
	fwire_power_port_conf(app, &conf);
	rc = rte_eth_dev_configure(p->port_id, nq, nq, &conf);
	if (rc) {
		FW_LOG(ERR, "port%u (%s): configure: %s", idx, p->name, rte_strerror(-rc));
		return -1;
	}
	uint16_t nrx = (uint16_t)pc->rx_desc, ntx = (uint16_t)pc->tx_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nrx, &ntx);
	if (rc) {
		FW_LOG(ERR, "port%u (%s): descriptors %u/%u: %s", idx, p->name, nrx, ntx,
		       rte_strerror(-rc));
		return -1;
	}
	int socket = rte_eth_dev_socket_id(p->port_id);
	if (socket < 0) /* unknown NUMA node (virtual devices): any */
		socket = (int)SOCKET_ID_ANY;
	for (uint16_t q = 0; q < nq; q++) {
		struct rte_eth_txconf txc = info.default_txconf;
		txc.offloads = conf.txmode.offloads;
		rc = rte_eth_rx_queue_setup(p->port_id, q, nrx, socket, NULL, app->pool);
		if (!rc)
			rc = rte_eth_tx_queue_setup(p->port_id, q, ntx, socket, &txc);
		if (rc) {
			FW_LOG(ERR, "port%u (%s): queue %u setup: %s", idx, p->name, q,
			       rte_strerror(-rc));
			return -1;
		}
	}
	p->nb_queues = nq;
	if (fwire_power_port_queues(app, p))
		return -1;
	rc = rte_eth_dev_start(p->port_id);
	if (rc) {
		FW_LOG(ERR, "port%u (%s): start: %s", idx, p->name, rte_strerror(-rc));
		return -1;
	}
	if (fwire_power_port_started(app, p))
		return -1;
	if (p->af_xdp) {
		/* MAC and address were read from the kernel by fwire_afxdp_prepare() */
		if (fwire_afxdp_started(app, idx))
			return -1;
	} else {
		rc = rte_eth_macaddr_get(p->port_id, &p->mac);
		if (rc) {
			FW_LOG(ERR, "port%u (%s): MAC address: %s", idx, p->name,
			       rte_strerror(-rc));
			return -1;
		}
		p->addr_be = htonl(pc->address);
	}
	inet_ntop(AF_INET, &p->addr_be, addr, sizeof(addr));
	if (fwire_port6_start(app, idx))
		return -1;
	/* from the wire, our own addresses are martian sources (pkt.c) */
	if (fwire_pkt_ctx_add_port(&app->px, p)) {
		FW_LOG(ERR, "port%u: more than %u own addresses of a family", idx,
		       FW_POLICY_SELF_MAX);
		return -1;
	}
	/* the kernel interface behind it (net_tap, af_xdp), as the link watch will look for it */
	char kif[IF_NAMESIZE];
	if (info.if_index && if_indextoname(info.if_index, kif) &&
	    strlen(kif) < sizeof(p->kif_name)) {
		p->kif_index = info.if_index;
		snprintf(p->kif_name, sizeof(p->kif_name), "%s", kif);
	}

	struct rte_eth_link link;
	char mac[RTE_ETHER_ADDR_FMT_SIZE];
	if (rte_eth_link_get_nowait(p->port_id, &link))
		memset(&link, 0, sizeof(link)); /* reported as down; the link watch follows it */
	rte_ether_format_addr(mac, sizeof(mac), &p->mac);
	FW_LOG(INFO,
	       "port%u: %s (ethdev %u, driver %s) MAC %s address %s, %u queue(s) x %u/%u desc, "
	       "RSS %s, checksums: tx %s rx %s, link %s",
	       idx, p->af_xdp ? p->iface : pc->device, p->port_id, info.driver_name, mac, addr, nq,
	       nrx, ntx, p->rss ? "on (UDP 4-tuple)" : "off",
	       p->tx_cksum ? "offloaded" : "software",
	       conf.rxmode.offloads ? "verified by the device" : "software",
	       link.link_status ? "up" : "down");
	return 0;
}

int fwire_ports_open(struct fwire_app *app)
{
	if (pool_create(app))
		return -1;
	for (uint32_t i = 0; i < app->conf.n_ports; i++) {
		if (port_open(app, i)) {
			port_abandon(app, i);
			return -1;
		}
		app->n_ports = i + 1;
	}
	return 0;
}

void fwire_ports_close(struct fwire_app *app)
{
	for (uint32_t i = 0; i < app->n_ports; i++) {
		struct fwire_port *p = &app->port[i];
		int rc = rte_eth_dev_stop(p->port_id);
		if (rc)
			FW_LOG(WARNING, "port%u: stop: %s", i, rte_strerror(-rc));
		rc = rte_eth_dev_close(p->port_id);
		if (rc)
			FW_LOG(WARNING, "port%u: close: %s", i, rte_strerror(-rc));
		p->probed = false;
		if (p->af_xdp)
			fwire_afxdp_closed(app, i);
	}
	app->n_ports = 0;
}

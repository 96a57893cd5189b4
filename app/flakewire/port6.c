/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's IPv6 side: its addresses and the multicast groups neighbour
 * discovery needs (the solicited-node group of each address, RFC 4861 7.2.1).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "app.h"
#include "log.h"
#include "port.h"

int fwire_port6_start(struct fwire_app *app, uint32_t idx)
{
	struct fwire_port *p = &app->port[idx];
	const struct fw_conf_port *pc = &app->conf.port[idx];
	struct rte_ether_addr mc[FW_CONF_ADDR6_MAX];
	char list[FW_CONF_ADDR6_MAX * (INET6_ADDRSTRLEN + 1)] = "";
	size_t len = 0;

	if (!p->af_xdp) { /* af_xdp: the interface's, read by fwire_afxdp_prepare() */
		p->n_addr6 = pc->address6.n;
		memcpy(p->addr6, pc->address6.a, sizeof(p->addr6));
	}
	if (p->n_addr6 == 0)
		return 0;
	for (uint32_t i = 0; i < p->n_addr6; i++) {
		char a[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, p->addr6[i], a, sizeof(a));
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", a);
		/* 33:33:ff + the address's last 24 bits */
		mc[i].addr_bytes[0] = 0x33;
		mc[i].addr_bytes[1] = 0x33;
		mc[i].addr_bytes[2] = 0xff;
		memcpy(&mc[i].addr_bytes[3], &p->addr6[i][13], 3);
	}
	if (p->af_xdp) {
		/* the kernel answers neighbour discovery and has joined the groups */
		FW_LOG(INFO, "port%u: IPv6 %s (the interface's)", idx, list);
		return 0;
	}
	const char *how = "multicast list";
	int rc = rte_eth_dev_set_mc_addr_list(p->port_id, mc, p->n_addr6);
	if (rc) {
		how = "all-multicast";
		rc = rte_eth_allmulticast_enable(p->port_id);
	}
	if (rc == -ENOTSUP) {
		/* virtual devices without a filter receive every group anyway */
		how = "no multicast filter on this device";
		rc = 0;
	}
	if (rc) {
		FW_LOG(ERR, "port%u: cannot receive the solicited-node groups of %s: %s", idx, list,
		       rte_strerror(-rc));
		return -1;
	}
	FW_LOG(INFO, "port%u: IPv6 %s, neighbour discovery groups: %s", idx, list, how);
	return 0;
}

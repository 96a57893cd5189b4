/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>

#include "fw_ethdev.h"

FW_API int fw_ethdev_attach(const char *devargs, uint16_t *port_id)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	size_t n = strcspn(devargs, ",");
	uint16_t pid;
	int rc;

	if (n >= sizeof(name))
		return -ENAMETOOLONG;
	rc = rte_dev_probe(devargs);
	if (rc && rc != -EEXIST)
		return rc;
	memcpy(name, devargs, n);
	name[n] = '\0';
	if (!rte_eth_dev_get_port_by_name(name, port_id))
		return 0;
	/* PCI devices are named by their full address: 01:00.0 -> 0000:01:00.0 */
	RTE_ETH_FOREACH_DEV(pid)
	{
		char other[RTE_ETH_NAME_MAX_LEN];
		if (!rte_eth_dev_get_name_by_port(pid, other) && strstr(other, name)) {
			*port_id = pid;
			return 0;
		}
	}
	return -ENODEV;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Attaching a DPDK port from a device string, shared by the responder and
 * the load generator: "0000:01:00.0" or "01:00.0" (a PCI device), or a vdev
 * string such as "net_memif0,role=server,socket=/tmp/x.sock".
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"

/*
 * Probes @devargs (an already probed device is fine) and finds its ethdev:
 * the port named by the part before the first ',', or, for a PCI address
 * given without its domain, the port whose name contains it.
 * Returns 0 with *port_id set; -ENAMETOOLONG (name part too long); the
 * negative code of rte_dev_probe(); -ENODEV (probed, but no ethdev found).
 * rte_strerror(-rc) describes every code.
 */
FW_API int fw_ethdev_attach(const char *devargs, uint16_t *port_id);

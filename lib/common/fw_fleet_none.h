/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a responder built without lib/fleet (no store library: neither the
 * ZooKeeper client, libzookeeper-mt-dev, nor libcurl and json-c for etcd)
 * does with [fleet]: it refuses to start when [fleet] zookeeper or [fleet]
 * etcd is set, with this one message. Header only; the responder core
 * (lib/responder/responder.c) calls it in its build without the library.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

/*
 * Returns 0 when @zookeeper and @etcd ([fleet] zookeeper, etcd) are empty;
 * else -1 with the reason written into @msg (@len bytes) for @prog
 * ("flakewire") to log.
 */
static inline int fw_fleet_none_check(const char *zookeeper, const char *etcd, const char *prog,
				      char *msg, size_t len)
{
	if (!zookeeper[0] && !etcd[0])
		return 0;
	snprintf(msg, len,
		 "[fleet] %s is set but this %s was built without lib/fleet (it needs a "
		 "registry client: libzookeeper-mt-dev for ZooKeeper, libcurl and json-c for etcd)",
		 zookeeper[0] ? "zookeeper" : "etcd", prog);
	return -1;
}

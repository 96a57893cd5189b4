/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry interface (fw_fleet_store.h) over ZooKeeper
 * (libzookeeper_mt, synchronous API):
 *   layout record  the root znode's data
 *   worker record  ROOT/workers/NNNNN, version = the znode's version,
 *                  mtime = the znode's mtime (the server's clock)
 *   liveness       ROOT/nodes/IDENTITY, an ephemeral znode of the session
 *   now()          writes ROOT/clock and returns its mtime
 * The session's state follows the client's watcher (session events), not
 * polling: connect() and a DOWN session wait on a condition variable on
 * CLOCK_MONOTONIC. Session expiry makes the state LOST; connect() then
 * opens a new session. A call on a DOWN or LOST session returns -ENOTCONN.
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet_store.h"

/*
 * A store for @connect ("host:port,...") and @root, with sessions of
 * @session_ms. Connects to nothing. NULL with errno set (ENOMEM, EINVAL:
 * @connect or @root too long).
 */
FW_API struct fw_fleet_store *fw_fleet_store_zk_new(const char *connect, const char *root,
						    uint32_t session_ms);

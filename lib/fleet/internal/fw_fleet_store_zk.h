/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal to lib/fleet (the ZooKeeper store library; fw_fleet_store_open
 * makes one). The registry interface (fw_fleet_store.h) over ZooKeeper
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
 * @session_ms and digest credentials @auth ("user:password", NULL or "":
 * none). With credentials every session authenticates (zoo_add_auth) once
 * connected, and the root, its children and every record are created with
 * the fleet's ACL: all permissions for that principal, read for anyone.
 * Without, the ACLs are open (ZOO_OPEN_ACL_UNSAFE). A refusal by the ACL is
 * -EACCES. Connects to nothing. NULL with errno set (ENOMEM, EINVAL:
 * @connect, @root or @auth too long).
 */
struct fw_fleet_store *fw_fleet_store_zk_new(const char *connect, const char *root,
					     uint32_t session_ms, const char *auth);

/*
 * Migration of a fleet created with open ACLs: sets the fleet's ACL (see
 * above) on the root, workers, nodes, clock and every child of workers and
 * nodes, with @s's credentials (required). Returns the number of znodes
 * set; -ENOENT (no fleet at the root); -EINVAL (no credentials); a store
 * code (-EACCES: the fleet already belongs to another principal).
 */
int fw_fleet_store_zk_secure(struct fw_fleet_store *s, uint32_t timeout_ms, char *err,
			     size_t errlen);

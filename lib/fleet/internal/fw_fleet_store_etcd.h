/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal to lib/fleet (the etcd store library; fw_fleet_store_open makes
 * one). The registry interface (fw_fleet_store.h) over etcd's v3 API, through
 * its JSON gateway (HTTP POST of JSON, keys and values base64; libcurl for
 * HTTP and TLS, json-c for JSON: both in Debian and kept well, and the
 * gateway is served by every etcd since 3.3 with no gRPC stack needed).
 * See doc/design/fleet-safety.md ("etcd") for how each rule maps.
 *
 *   layout record  the key ROOT
 *   worker record  ROOT/workers/NNNNN; version = the key's mod_revision;
 *                  mtime = 0 (etcd keeps no write time)
 *   liveness       ROOT/nodes/IDENTITY, put with this session's etcd lease
 *                  (TTL = the session timeout), kept alive by a thread of
 *                  the store; the key goes when the lease expires or is
 *                  revoked (close())
 *   create()       txn: compare create_revision == 0, then put       (S1)
 *   cas()          txn: compare mod_revision == version, then put    (S2)
 *   now()          from the Date header of the gateway's reply to a read
 *                  (the serving member's clock, whole seconds): this
 *                  node's clock when it falls within that second, else the
 *                  nearer end of it; so never more than a second off the
 *                  member's clock. etcd's own replies carry no time;
 *                  uniqueness does not depend on now() (fw_fleet_store.h),
 *                  a takeover's timing does. No clock offset is measured.
 *
 * Sessions: connect() grants a lease and starts the keep-alive thread
 * (every third of the TTL). The state is UP while keep-alives are
 * answered, DOWN after one fails (calls may still work on another
 * endpoint), LOST when etcd says the lease is gone or no keep-alive was
 * answered for a whole TTL. An etcd lease's TTL restarts on a leader
 * change, so a lease can outlive its TTL: liveness is a lower bound, which
 * only delays a takeover.
 *
 * Endpoints are tried in order; a transport error moves to the next one
 * (the one that answered is kept). With a user, the store authenticates
 * (/v3/auth/authenticate) and again when etcd says the token is invalid.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet_store.h"

/*
 * Checks an endpoint list: 1 to FW_FLEET_ETCD_ENDPOINTS_MAX comma-separated
 * http:// or https:// URLs of at most 255 characters, no path, no user info
 * (user:password@: refused without echoing it). Returns 0 or -EINVAL with
 * @why (may be NULL) naming what is wrong.
 */
int fw_fleet_etcd_endpoints_check(const char *endpoints, char *why, size_t whylen);

/*
 * Checks @o before a store is made of it: the endpoints as above, and a
 * user (with a password) only over https:// unless o->plain_password.
 * Returns 0 or -EINVAL with @why (may be NULL; never holds the password).
 */
int fw_fleet_etcd_opts_check(const struct fw_fleet_etcd_opts *o, char *why, size_t whylen);

/*
 * A store for @o and @root. Connects to nothing (connect() does). NULL with
 * errno set: EINVAL (a bad endpoint list, @root too long), ENOMEM.
 */
struct fw_fleet_store *fw_fleet_store_etcd_new(const struct fw_fleet_etcd_opts *o,
					       const char *root);

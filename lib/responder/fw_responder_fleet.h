/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fleet started from the configuration, for both responders: [fleet]
 * through fw_responder_fleet_config (fw_responder_conf.h) into the registry
 * (fw_fleet.h), then the keeper glue (fw_fleet_app.h). Built only with
 * lib/fleet's store clients (libzookeeper-mt-dev); without them the
 * responders refuse [fleet] (fw_fleet_none.h).
 */
#pragma once

#include "fw_fleet_app.h"
#include "fw_responder_conf.h"

/*
 * Without [fleet] zookeeper or etcd: *out = NULL, returns 0 (static worker
 * IDs). With one and [fleet] static = yes: *out = NULL, and the static worker
 * IDs are checked against the root's reservation (fw_fleet_static_check:
 * its code, FW_EFLEET_ROOT for an ID not reserved). Otherwise creates the
 * registry for @n_workers slots with @log (lib/common/fw_log.h; {NULL,
 * NULL}: silent) and claims (fw_fleet_start: take back, claim, take over;
 * cache or NO_LEASE when the store is down).
 * @state_stamp: the fw_state_lock_stamp of the locked state.
 * Returns 0 with *out set, or fw_responder_fleet_config's,
 * fw_fleet_create's or fw_fleet_start's code with one line in @err (the
 * caller refuses to start).
 */
FW_API int fw_responder_fleet_start(const struct fw_conf *c, const struct fw_layout *layout,
				    uint32_t n_workers, const char *state_stamp, struct fw_log log,
				    struct fw_fleet_app **out, char *err, size_t errlen);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A usable session with the store: connected, the root holding this
 * node's layout, and this identity's liveness record held by the session.
 * What a lost session costs: the liveness record (re-claimed here on the
 * next round); the leases stay, they are records, not session state.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet_store.h"
#include "fw_layout.h"

struct fw_fleet_session {
	struct fw_fleet_store *store;
	const char *root;
	const char *identity;
	struct fw_layout layout;
	bool root_ok;  /* the layout was checked in this session */
	bool alive_ok; /* the liveness record is held */
};

/*
 * Makes the session usable, waiting up to @wait_ms for the store. The
 * liveness record: at start (@alive_wait_ms > 0) another live holder is
 * waited for up to @alive_wait_ms (this node's previous process, less than
 * a session timeout ago) and then refused; running (0), a holder is left
 * and retried at the next call (renewals, being CAS, stay safe meanwhile).
 * Returns 0; FW_EFLEET_LAYOUT (the root holds another layout, or no fleet
 * layout); FW_EFLEET_IDENTITY (at start only); FW_EFLEET_AUTH (the store's
 * ACL refuses this session); FW_EFLEET_STORE (unreachable or failed). @err gets one line on error.
 */
int fw_fleet_session_ensure(struct fw_fleet_session *ss, uint32_t wait_ms, uint32_t alive_wait_ms,
			    char *err, size_t errlen);

/* Ends the session (the liveness record goes). */
void fw_fleet_session_drop(struct fw_fleet_session *ss);

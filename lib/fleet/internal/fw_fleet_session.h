/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A usable session with the store: connected, the root holding this
 * node's layout and datacenter value under the generation it started on (or
 * a newer fence), and this identity's liveness record held by the session.
 * The root is read at every call: a missing root, one of another generation
 * without a newer fence, a store that went back (as this node saw, or as the
 * stop record another node wrote says: fw_fleet_stop.h) stops every claim,
 * takeover and renewal (the node keeps issuing within its confirmed leases).
 * What a lost session costs: the liveness record (re-claimed here on the
 * next round); the leases stay, they are records, not session state.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_stop.h"
#include "fw_fleet_store.h"
#include "fw_layout.h"

struct fw_fleet_session {
	struct fw_fleet_store *store;
	const char *root;
	const char *identity;
	struct fw_layout layout;
	bool root_ok;             /* the layout was checked in this session */
	bool alive_ok;            /* the liveness record is held */
	uint32_t datacenter;      /* this node's [id] datacenter: the root must serve it */
	struct fw_fleet_root rec; /* the root record as last checked (its reservation) */
	/* The root's generation this process works under (set at the first
	 * check) and its fence: a root of another generation is accepted only
	 * with a newer fence (an operator's `flakectl fleet fence`) */
	bool gen_set;
	uint64_t gen, fence;
	bool back; /* the store went back (a restore): stopped until a newer fence */
	/* fw_state_lock_stamp of the state this process holds locked (NULL or "":
	 * none), and this run's token: written in the liveness record, so that
	 * this state's next process replaces it rather than wait for this
	 * session to end */
	const char *stamp;
	uint64_t token;
	struct fw_log log; /* {NULL, NULL}: silent */
	/* why claims stopped (back, or a root of another generation); "": the
	 * store went back as a record of this node showed */
	char why[3 * FW_FLEET_STOP_REASON_MAX];
	uint64_t stop_gen; /* the generation the stop record is to name */
	bool stop_written; /* the stop record names stop_gen */
	bool tombstone;    /* the root gone: its value's store-wide record names it */
};

/*
 * Checks that @root is a root `flakectl fleet init` made for this node: its
 * record exists, holds @l and @datacenter, and the store-wide record of
 * @datacenter names @root (no other root serves it). *out gets the record.
 * Reads only; never creates. Returns 0; FW_EFLEET_ROOT (no root, one made
 * before `fleet init` recorded a datacenter, another datacenter value, the
 * value's store-wide record missing or naming another root); FW_EFLEET_LAYOUT
 * (another layout, or not a fleet's); FW_EFLEET_AUTH; FW_EFLEET_STORE. @err
 * gets one line naming the root and both values where they differ.
 */
int fw_fleet_root_check(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			uint32_t datacenter, struct fw_fleet_root *out, char *err, size_t errlen);

/*
 * Makes the session usable, waiting up to @wait_ms for the store. The
 * liveness record (fw_fleet_alive_format, naming ss->stamp and ss->token):
 * one held by another session is replaced at once when it names this
 * state's stamp and another process (this state's previous process, gone:
 * its successor holds the state's lock) or this registry's own earlier
 * session (one line logged). Any other holder (another state's: a twin of
 * this identity; a record of a version before issue 49) is, at start
 * (@alive_wait_ms > 0), waited for up to @alive_wait_ms and then refused;
 * running (0), left and retried at the next call (renewals, being CAS, stay
 * safe meanwhile).
 * Returns 0; FW_EFLEET_ROOT and FW_EFLEET_LAYOUT (fw_fleet_root_check; also a
 * root of another generation without a newer fence, or ss->back, or a stop
 * record naming the root's generation, or the store's history mark below
 * the one the root recorded: fw_fleet_stop.h);
 * FW_EFLEET_IDENTITY (at start only); FW_EFLEET_AUTH (the store's
 * ACL refuses this session); FW_EFLEET_STORE (unreachable or failed). @err gets one line on error.
 */
int fw_fleet_session_ensure(struct fw_fleet_session *ss, uint32_t wait_ms, uint32_t alive_wait_ms,
			    char *err, size_t errlen);

/* Ends the session (the liveness record goes). */
void fw_fleet_session_drop(struct fw_fleet_session *ss);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stop record: what one node saw of a wiped or restored registry, kept
 * where every node reads it (issue 48, case 7; doc/design/fleet-safety.md).
 *
 * A restored store holds nothing of what was written after its copy: a
 * worker ID claimed since is free in it, and a process that starts on it
 * with nothing of its own to compare (a fresh one) would claim it while
 * its owner still issues under it. The first node that sees the store go
 * back (its own record gone or older than it wrote, its worker ID another
 * owner's below the lease it confirmed, the store's write counter or log
 * below what it saw, the root of another generation without a newer fence)
 * writes ROOT/stopped, created once per root generation:
 *
 *   "flakewire-stopped v1\ngeneration=HEX16\nby=IDENTITY\nat=UNIX_MS\n
 *    reason=ONE LINE\n"
 *
 * generation is the root's generation it stops (the one the root record
 * holds as the node saw it); every node reads the record with the root at
 * every round and at start, and while it names the root's current
 * generation no claim, takeover or renewal is made. `flakectl fleet fence`
 * writes a new generation, which no stop record names: the fence clears it
 * (the record stays, naming an old generation, until the next stop
 * overwrites it).
 *
 * A root that is gone cannot hold the record (ZooKeeper would make the root
 * again, empty, as its parent): the root's absence already stops every
 * claim, since no node makes a root. What a node writes then is the store-wide
 * record of its datacenter value naming its root, if it is missing (a whole
 * store wiped): `flakectl fleet init` then refuses to make the root again
 * and names `fleet fence`, as after a wipe of the root's keys alone.
 *
 * Functions take the store of the calling thread (fw_fleet_store.h's rule)
 * and never print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_fleet.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_store.h"

/* The longest reason kept in a stop record (longer ones are cut). */
#define FW_FLEET_STOP_REASON_MAX 256

/* The store's log may read this far below the mark a fence recorded and still
 * be the same history (the mark is read in two steps, see history() in
 * fw_fleet_store.h). */
#define FW_FLEET_HISTORY_SLACK 16

/* One stop record. */
struct fw_fleet_stop {
	uint64_t generation;                   /* the root generation it stops */
	char by[FW_FLEET_IDENTITY_MAX];        /* the identity that saw it */
	uint64_t at;                           /* unix ms, the store's time (else the node's) */
	char reason[FW_FLEET_STOP_REASON_MAX]; /* what it saw, one line */
};

/* The record's text; returns its length (< @cap) or -ENOSPC. */
int fw_fleet_stop_format(char *buf, size_t cap, const struct fw_fleet_stop *st);

/* Parses a stop record of @len bytes. Returns 0 or -EINVAL (not one, or no generation). */
int fw_fleet_stop_parse(const char *buf, int len, struct fw_fleet_stop *st);

/*
 * Reads @root's stop record into *st. Returns 0; -ENOENT (none); -EINVAL
 * (garbled: treated by the caller as a stop of an unknown generation); a
 * store code.
 */
int fw_fleet_stop_read(struct fw_fleet_store *s, const char *root, struct fw_fleet_stop *st);

/*
 * Writes *st as @root's stop record: created when there is none (S1); a
 * record of the same generation is kept as it is (the first node's words
 * stay); one of another generation (or garbled) is overwritten (S2), so a
 * fence's new generation can be stopped again. Returns 0 (the record names
 * st->generation now); a store code (-ENOTCONN: not known: written again at
 * the next round).
 */
int fw_fleet_stop_write(struct fw_fleet_store *s, const char *root, const struct fw_fleet_stop *st);

/*
 * A root that is gone under a node: creates the store-wide record of
 * @datacenter naming @root when it is missing (S1), so that `fleet init`
 * refuses to make the root again (it names `fleet fence`). Returns 0 (the
 * record names @root, made now or before); -EEXIST (it names another root:
 * nothing written); a store code.
 */
int fw_fleet_stop_tombstone(struct fw_fleet_store *s, const char *root, uint32_t datacenter);

/*
 * Whether the store's history went back since @r was written: @r records
 * the store's history mark at its last init or fence (r->has_history), and
 * a store that keeps one (history() in fw_fleet_store.h, etcd) reads it
 * now. Returns 1 (went back: *now_mark holds the mark read), 0 (same
 * history, or nothing to compare: no mark recorded, a store that keeps
 * none, or an error reading it).
 */
int fw_fleet_stop_history_back(struct fw_fleet_store *s, const struct fw_fleet_root *r,
			       int64_t *now_mark);

/* ---- the session's side (stop.c; a session is fw_fleet_session.h's) ---- */

struct fw_fleet_session;

/*
 * The store went back (a restore) or lost this root's records, as this
 * node saw (@why, one line): stops every claim, takeover and renewal until
 * a newer fence (ss->back), and writes the stop record for @gen (the root's
 * generation the node saw; fw_fleet_stop.h) so that every other node, and a
 * process that starts now, stops too. A write that fails is tried again at
 * every round (fw_fleet_session_ensure).
 */
void fw_fleet_session_went_back(struct fw_fleet_session *ss, uint64_t gen, const char *why);

/*
 * The root's check's part for a restored registry, on the root @r as just
 * read (accepted, or one this session stopped on: ss->back): a stop record
 * naming r->generation (another node saw the store go back), or the store's
 * history mark below the one @r recorded (this node sees it:
 * fw_fleet_session_went_back). Stopped (ss->back), it writes the stop
 * record again when it is missing or names another generation (a write
 * that failed, or a store that went back again). Returns 0 (not stopped);
 * FW_EFLEET_ROOT with @err naming why, the record and `flakectl fleet
 * fence`; FW_EFLEET_STORE or FW_EFLEET_AUTH (the record could not be read).
 */
int fw_fleet_session_stop_check(struct fw_fleet_session *ss, const struct fw_fleet_root *r,
				char *err, size_t errlen);

/*
 * The root gone under a node that worked under it: makes sure its
 * datacenter value's store-wide record names it (fw_fleet_stop_tombstone),
 * once (ss->tombstone), so `fleet init` refuses to make it again.
 */
void fw_fleet_session_root_gone(struct fw_fleet_session *ss);

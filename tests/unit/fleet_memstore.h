/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An in-memory implementation of the registry interface (fw_fleet_store.h)
 * for the unit tests of lib/fleet: one "server" (struct memsrv) holding the
 * records of one root, any number of clients (one per registry, each with
 * its own session), and the faults the recipe must survive: replies lost
 * after a write was applied, writes failing before they are applied, the
 * server down, its time moved (back or ahead), sessions dropped (their
 * liveness records go). Versions are one global revision, as etcd's
 * mod_revision (ZooKeeper's start at 0 per znode): the recipe must only
 * compare what it was given. Thread-safe (a registry thread and the test
 * thread use it together).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_fleet_rec.h"
#include "fw_fleet_store.h"

struct memsrv;

struct memsrv *memsrv_new(void);
void memsrv_free(struct memsrv *m);

/* A client of @m (a fw_fleet_store the registry owns and frees). */
struct fw_fleet_store *memsrv_client(struct memsrv *m);

/* Server time = CLOCK_REALTIME + @offset_ms (may be negative). */
void memsrv_time_offset(struct memsrv *m, int64_t offset_ms);
uint64_t memsrv_now(struct memsrv *m);
/* While down: connect() and every call fail with -ENOTCONN. */
void memsrv_down(struct memsrv *m, bool down);
/* The next @n writes of worker records are applied, and answer -ENOTCONN. */
void memsrv_lose_replies(struct memsrv *m, int n);
/* The next @n writes of worker records are applied, their reply comes too
 * late and the client sends them again, as etcd_call does after a try's
 * timeout: the second try finds the first one's record and answers -EEXIST
 * (create) or -ESTALE (CAS). */
void memsrv_resend_writes(struct memsrv *m, int n);
/* The next @n writes of worker records fail with -ENOTCONN, not applied. */
void memsrv_fail_writes(struct memsrv *m, int n);
/* Until called again with 0: writes of worker @w fail with @rc (-EIO: a
 * store error that is not unreachability, e.g. etcd's NOSPACE), not applied. */
void memsrv_fail_worker(struct memsrv *m, uint32_t w, int rc);
/* The next connect() of a client whose session is up opens another session
 * in its place (its liveness record goes), never showing it LOST: as the
 * ZooKeeper store replaces a handle down for two session timeouts. */
void memsrv_replace_session(struct memsrv *m);
/* Ends every session (state LOST; liveness records go). */
void memsrv_drop_sessions(struct memsrv *m);

/* Writes applied so far: worker records, and all (with the clock record). */
uint64_t memsrv_worker_writes(struct memsrv *m);
uint64_t memsrv_writes(struct memsrv *m);

/* Another node's hand: reads or writes worker @w directly (no faults). */
bool memsrv_get(struct memsrv *m, uint32_t w, struct fw_fleet_rec *r, int64_t *version);
void memsrv_put(struct memsrv *m, uint32_t w, const struct fw_fleet_rec *r);
void memsrv_put_text(struct memsrv *m, uint32_t w, const char *text);
/* A restore: worker @w's record becomes @text at @version (an older one). */
void memsrv_put_version(struct memsrv *m, uint32_t w, const char *text, int64_t version);
/* A restore of the whole store: its revision (write counter) is set back to @rev
 * (it starts at 100). */
void memsrv_rev_set(struct memsrv *m, int64_t rev);
/* A wipe: every worker record and the meta records at and under @root go. */
void memsrv_wipe(struct memsrv *m, const char *root);
/* Writes the record at @key (the root, or a store-wide one) as @text; NULL deletes it. */
void memsrv_set_meta(struct memsrv *m, const char *key, const char *text);
/* Marks @identity alive in a session of its own (another live process),
 * its liveness record "pid=1\n" (as written before issue 49). */
void memsrv_alive_other(struct memsrv *m, const char *identity);
/* As memsrv_alive_other, the record holding @text (a killed run's session,
 * still open: its record names that run's state, token and process). */
void memsrv_alive_other_text(struct memsrv *m, const char *identity, const char *text);
/* How many liveness records alive_replace replaced. */
uint64_t memsrv_alive_replaced(struct memsrv *m);
/* @identity's live liveness record's text into @buf; false when none. */
bool memsrv_alive_text(struct memsrv *m, const char *identity, char *buf, size_t cap);

/* A copy of every record (worker and meta), the revision and the history mark. */
struct memsnap;
struct memsnap *memsrv_snapshot(struct memsrv *m);
/*
 * A restore from @sn (free() it after): every record and the revision as
 * they were, the history mark below what it was (as etcd's after `snapshot
 * restore`: a new raft log); with @drop_sessions every session ends, as when
 * the server restarts on the copy (ZooKeeper, etcd), else they go on (a copy
 * brought up behind the same address without a client noticing).
 */
void memsrv_restore(struct memsrv *m, const struct memsnap *sn, bool drop_sessions);
/* history() answers (etcd: true) or says -ENOTSUP (ZooKeeper: the default). */
void memsrv_keep_history(struct memsrv *m, bool keep);
/* The record at @key's text into @text (@cap bytes); false when there is none. */
bool memsrv_get_meta(struct memsrv *m, const char *key, char *text, size_t cap);
/* Requests by kind, each counted when it reaches the server (not while it is
 * down), whatever its answer. */
enum memsrv_call {
	MS_LIST,        /* list: the worker records' keys */
	MS_GET,         /* get: one worker record */
	MS_CREATE,      /* create: a worker record */
	MS_CAS,         /* cas: a worker record */
	MS_META_GET,    /* meta_get: the root, a liveness or census record, ... */
	MS_META_CREATE, /* meta_create */
	MS_META_CAS,    /* meta_cas */
	MS_ALIVE_OF,    /* alive_of: one identity's liveness */
	MS_ALIVE_LIST,  /* alive_list: every live identity */
	MS_NOW,         /* now: the store's time */
	MS_CALLS
};
uint64_t memsrv_calls(struct memsrv *m, enum memsrv_call kind);
void memsrv_calls_reset(struct memsrv *m);

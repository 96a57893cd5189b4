/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry's state, shared by registry.c (the API: create, start, the
 * owner's requests and copies) and registry_round.c (the registry thread's
 * rounds, publishing and counters) and by nothing else. The calls run one
 * way: registry.c calls the functions below; registry_round.c calls
 * nothing of registry.c. Locking: fields "under mu" are read and written
 * with mu held; "thread-private" ones only by the registry thread (and by
 * fw_fleet_start before the thread exists).
 */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fw_fleet.h"
#include "fw_fleet_cache.h"
#include "fw_fleet_recipe.h"
#include "fw_fleet_registry.h"
#include "fw_fleet_session.h"

#define MSG_LEN 2048

struct retire_req {
	int32_t worker;
	uint64_t last;
};

/* A worker ID replaced in its slot, held until the store confirms its release. */
struct retiring {
	struct fw_fleet_held h;
	uint64_t last;     /* layout ms: the retirement point (valid once asked) */
	bool asked;        /* fw_fleet_retire came: the slot's worker swapped */
	int warned_rc;     /* the last failure logged (0: none) */
	bool warned_cache; /* "waits for the cache" logged */
};

struct fw_fleet {
	struct fw_fleet_config cfg;
	char root[256], identity[FW_FLEET_IDENTITY_MAX], cache[PATH_MAX], stamp[128];
	char mark[PATH_MAX];   /* cfg.mark_file ("": none) */
	char legacy[PATH_MAX]; /* cfg.legacy_cache_file ("": none) */
	int cache_lock;        /* fd holding "CACHE.lock" (-1: none) */
	uint32_t n;
	struct fw_fleet_store *store;
	struct fw_fleet_recipe r;
	struct fw_fleet_session ss;
	struct fw_fleet_cache_of cache_of;

	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	pthread_t thread;
	bool thread_on;
	/* under mu */
	bool stop;
	bool keep_session; /* the thread leaves the session open (a release follows) */
	bool wake;         /* a request arrived: run a round now */
	struct fw_fleet_slot *pub;
	struct fw_fleet_status st;
	bool *replace_req;
	struct retire_req retire_q[FW_FLEET_SLOTS_MAX];
	uint32_t n_retire_q;

	/* thread-private (and fw_fleet_start's before the thread runs) */
	struct fw_fleet_held *slot;
	bool *skip; /* 2^worker_bits: claims leave these out */
	struct retiring retiring[FW_FLEET_SLOTS_MAX];
	uint32_t n_retiring;
	/* the previous run's claims on this state (its cache): what the recipe
	 * may take back (f->r.proven) */
	struct fw_fleet_held proven[FW_FLEET_SLOTS_MAX];
	uint32_t n_proven;
	int cache_rc;        /* the last cache write's code (logged once per change) */
	uint64_t cache_mark; /* the mark the last cache write recorded */
	/* a reconnection seen (a session back up, a new one, a round after
	 * failures): the next round is a check round (registry_round.c) */
	bool check_now;
	bool watch_down;         /* the session was seen not up between rounds */
	uint64_t watch_next;     /* monotonic ms: the next round while it stays down */
	uint64_t watch_sessions; /* store->sessions as last looked at */
	uint32_t renew_fails, repl_fails;
	uint64_t next_renew, next_repl; /* monotonic ms */
	uint64_t next_census;           /* monotonic ms */
	uint32_t need_full, repl_full;  /* slots short when FULL was last logged (0: none) */
	bool wait_all; /* started without IDs (start_when_full): claims all or none until served */
	bool cache_dirty, logged_down;
	int logged_rc; /* the code of the failure logged (a root stop after a store error: logged
			  too) */
	/* f->r.census: the census the last claim's scan took (registry_census.c) */
	struct fw_fleet_scan_census scan_census;
};

/* fw_wall_ms as a fw_fleet_config.now_ms (@arg unused): the default local clock */
uint64_t fleet_realtime_ms(void *arg);
uint64_t fleet_rand64(void);
/* Copies slot @i's held ID to the owner's copy (bumps gen on a change). */
void fleet_publish_locked(struct fw_fleet *f, uint32_t i, enum fw_fleet_source src);
void fleet_publish(struct fw_fleet *f, uint32_t i, enum fw_fleet_source src);
void fleet_count(struct fw_fleet *f, uint64_t *c, uint64_t by);
void fleet_count_kinds(struct fw_fleet *f, const enum fw_fleet_kind *k, uint32_t n);
/*
 * Writes the cache when it changed (cache_dirty), with the mark the state
 * holds now (fleet_mark; the last one recorded when it cannot be read);
 * cache_dirty stays set until a write is durable. A failure is logged once
 * per change of its code.
 */
void fleet_cache_save(struct fw_fleet *f);

/*
 * The state's mark (cfg.mark_file) into *unix_ms: fw_mark_read's code
 * (-ENOENT also when no mark file is configured). The registry's one read
 * of the mark.
 */
int fleet_mark(const struct fw_fleet *f, uint64_t *unix_ms);

/*
 * Claims for slots without a usable ID, then (when due) the replacements.
 * At start, and while f->wait_all, all or nothing. 0, FW_EFLEET_FULL (@err
 * says why, with the root's census), FW_EFLEET_STORE.
 */
int fleet_claim_round(struct fw_fleet *f, uint64_t mono, bool at_start, char *err, size_t errlen);

/*
 * fw_fleet_stop_release's work, with the thread stopped: releases every
 * held and retiring ID above the final mark once the cache no longer names
 * them, until @deadline (monotonic ms). Its return codes.
 */
int fleet_release_all(struct fw_fleet *f, uint64_t deadline);

/*
 * The root's census into f->st (total_ids, free_ids, stranded_ids,
 * next_stranded_unix, census_unix), at most once a period (census.c):
 * the census this round's claim scan took (written to ROOT/census), else
 * the shared one (fw_fleet_census_shared: one read while ROOT/census is
 * fresh, about one full census per period for the whole root). Returns 0
 * or the store's code (the last census stays). registry_census.c.
 */
int fleet_census(struct fw_fleet *f);

/*
 * As fleet_census, but never from ROOT/census: this round's claim scan's
 * census, else a full one (fw_fleet_census_take), written to ROOT/census.
 * For the line of a shortage (rare: logged once per change).
 */
int fleet_census_full(struct fw_fleet *f);

/* The registry thread (pthread_create's start routine; @arg the registry). */
void *fleet_thread_main(void *arg);

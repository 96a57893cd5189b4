/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records' text (pure: no store, no clock, no I/O). Every store keeps
 * the same text, so `flakectl fleet ls` and the proof read the same fields
 * whatever the store.
 *
 *   layout record  "flakewire-fleet v1\nepoch_ms=E\ndatacenter_bits=D\n
 *                   worker_bits=W\nsequence_bits=S\n": the layout every member
 *                   of the fleet shares (a mismatch refuses to start)
 *   root record    the layout record's lines, then "datacenter=N\n
 *                   reserved=LIST\ngeneration=HEX16\nfence=MS\n[history=N\n]": what
 *                   `flakectl fleet init` (and `fence`) wrote at ROOT (nodes
 *                   never write it): the datacenter
 *                   value the root serves, the worker IDs kept for static
 *                   nodes ("0-3,7"; empty: none), a random generation (new
 *                   at every init or fence), the floor of every claim after
 *                   a fence (layout ms, 0: none), the store's history mark
 *                   at that init or fence (fw_fleet_store.h; only where the
 *                   store keeps one: a mark below it is a restore since). A
 *                   root written before these lines existed has none of them
 *                   (has_dc false): nodes refuse it until `fleet init` adopts it
 *   store-wide     FW_FLEET_IDS/layout: the layout every root of the store
 *                   shares (the layout record's text); FW_FLEET_IDS/dc/NNNN,
 *                   one per datacenter value in use, created once (S1):
 *                   "flakewire-root v1\nroot=ROOT\n"
 *   worker record  "flakewire-worker v1\nowner=IDENTITY\ntoken=HEX16\n
 *                   lease_until=MS\nfloor=MS\n": owner empty = free (released);
 *                   MS are layout ms (since the epoch); token is random per
 *                   process start, so a process recognises its own write
 *                   after a lost reply
 *   liveness       "pid=N\ntoken=HEX16\nprocess=HEX16\nstate=STAMP\n" at
 *                   ROOT/nodes/IDENTITY, held by the writer's session: its
 *                   PID (for operators), its run's token, a random number per
 *                   process, and the stamp of the state it held locked (""
 *                   for none): what lets its successor on that state replace
 *                   it rather than wait for its session to end (session.c).
 *                   Before issue 49 it held "pid=N\n" only
 *
 * Keys (the one place they are spelt): ROOT/workers/NNNNN (5 digits, zero
 * padded), ROOT/nodes/IDENTITY (liveness), ROOT/clock (ZooKeeper's time),
 * ROOT/stopped (a restored registry's stop record: fw_fleet_stop.h).
 * ROOT/census (the census record below: fw_fleet_key_sub(..., "census")).
 * See doc/design/fleet-safety.md for what each field guarantees.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet.h"
#include "fw_layout.h"

/* One worker record. */
struct fw_fleet_rec {
	char owner[FW_FLEET_IDENTITY_MAX]; /* "" when free */
	uint64_t token;
	uint64_t lease; /* lease_until, layout ms */
	uint64_t floor; /* layout ms: the owner issues only above */
};

/* Writes @r's text into @buf; returns its length (< @cap), or -ENOSPC. */
int fw_fleet_rec_format(char *buf, size_t cap, const struct fw_fleet_rec *r);

/*
 * Parses a worker record of @len bytes. Returns 0, or -EINVAL (garbled:
 * wrong magic, a field missing or out of range, an owner too long): such a
 * record is never claimed nor written.
 */
int fw_fleet_rec_parse(const char *buf, int len, struct fw_fleet_rec *r);

/* A liveness record. */
struct fw_fleet_alive {
	long pid;         /* the writer's PID */
	uint64_t token;   /* its run's token (fw_fleet_recipe.token) */
	uint64_t process; /* random per writing process (two registries of one process share it) */
	char state[128];  /* fw_state_lock_stamp of the state it held locked ("": none) */
};

/* Writes @a's text; returns its length (< @cap) or -ENOSPC. */
int fw_fleet_alive_format(char *buf, size_t cap, const struct fw_fleet_alive *a);

/*
 * Parses a liveness record. Returns 0, or -EINVAL (garbled, a field missing,
 * or one written before issue 49: "pid=N\n" alone): such a record proves
 * nothing about its writer.
 */
int fw_fleet_alive_parse(const char *buf, int len, struct fw_fleet_alive *a);

/* The layout record's text; returns its length or -ENOSPC. */
int fw_fleet_layout_format(char *buf, size_t cap, const struct fw_layout *l);

/* Parses a layout record. Returns 0 or -EINVAL (not a flakewire fleet layout). */
int fw_fleet_layout_parse(const char *buf, int len, struct fw_layout *l);

/* True when @a and @b are the same layout (epoch and the three widths). */
bool fw_fleet_layout_same(const struct fw_layout *a, const struct fw_layout *b);

/* The store-wide records' place, beside every fleet root (no root at or under it). */
#define FW_FLEET_IDS         "/flakewire-roots"
/* Most ranges in a root's reservation. */
#define FW_FLEET_RESERVE_MAX 16

/* Worker IDs a root keeps for static nodes: ranges lo[i]..hi[i], both included. */
struct fw_fleet_reserve {
	uint32_t n;
	uint32_t lo[FW_FLEET_RESERVE_MAX], hi[FW_FLEET_RESERVE_MAX];
};

/* A root record. */
struct fw_fleet_root {
	struct fw_layout layout;
	bool has_dc;         /* false: written before `fleet init` (no datacenter line) */
	uint32_t datacenter; /* < 2^layout.dc_bits */
	struct fw_fleet_reserve reserved;
	uint64_t generation; /* random per init or fence (0 on a root without one) */
	uint64_t fence;      /* layout ms (0: never fenced): no claim's floor is below it */
	bool has_history;    /* the store's history mark was recorded (history=) */
	int64_t history;     /* the store's history mark at the last init or fence (etcd) */
};

/* Writes the root record's text; returns its length or -ENOSPC. */
int fw_fleet_root_format(char *buf, size_t cap, const struct fw_fleet_root *r);

/*
 * Parses a root record (or a layout record written before `fleet init`:
 * has_dc false). Returns 0 or -EINVAL (not a flakewire fleet layout, a
 * datacenter value beyond the width, a bad reservation).
 */
int fw_fleet_root_parse(const char *buf, int len, struct fw_fleet_root *r);

/*
 * Parses "A-B,C,..." (worker IDs below @total, at most FW_FLEET_RESERVE_MAX
 * ranges; "" is none) into *r. Returns 0 or -EINVAL.
 */
int fw_fleet_reserve_parse(const char *s, uint32_t total, struct fw_fleet_reserve *r);

/* Writes *r as "A-B,C" (NUL-terminated, "" for none); returns the length or -ENOSPC. */
int fw_fleet_reserve_format(char *buf, size_t cap, const struct fw_fleet_reserve *r);

/* True when worker @w is in *r (NULL: none). */
bool fw_fleet_reserved(const struct fw_fleet_reserve *r, uint32_t w);

/* True when *a and *b hold the same worker IDs. */
bool fw_fleet_reserve_same(const struct fw_fleet_reserve *a, const struct fw_fleet_reserve *b,
			   uint32_t total);

/* The store-wide records' keys: FW_FLEET_IDS/layout and FW_FLEET_IDS/dc/NNNN. */
int fw_fleet_key_ids_layout(char *buf, size_t cap);
int fw_fleet_key_ids_dc(char *buf, size_t cap, uint32_t datacenter);

/* A datacenter record's text for @root; returns its length or -ENOSPC. */
int fw_fleet_dc_format(char *buf, size_t cap, const char *root);

/* Parses a datacenter record: the root into @root (@cap bytes). 0 or -EINVAL. */
int fw_fleet_dc_parse(const char *buf, int len, char *root, size_t cap);

/*
 * The root's census (issue 50): what a node's gauges
 * (flakewire_fleet_{free,stranded}_worker_ids: registry_round.c) and
 * `flakectl fleet ls` (fw_fleet_list_store) count, with one function, so
 * the two never disagree. Every worker ID below 2^worker_bits goes in once.
 */
struct fw_fleet_census {
	uint32_t total;         /* counted: every worker ID the root does not reserve */
	uint32_t reserved;      /* left out: reserved for static nodes, never claimed */
	uint32_t free;          /* claimable: no record, released (owner ""), or lease ended */
	uint32_t held;          /* leased to an owner with a live session */
	uint32_t stranded;      /* leased to an owner with no live session */
	uint32_t garbled;       /* unreadable records: never claimed, never counted free */
	uint64_t next_stranded; /* layout ms the first stranded lease ends (UINT64_MAX: none) */
};

/* Whether @owner has a live session (its liveness record): 0 with *alive, or a store code. */
typedef int (*fw_fleet_alive_fn)(void *arg, const char *owner, bool *alive);

/* An empty census (next_stranded UINT64_MAX). */
void fw_fleet_census_init(struct fw_fleet_census *c);

/*
 * Counts worker @w into @c. @res: the root's reservation (NULL: none).
 * @read_rc: what reading its record gave (fw_fleet_read's code): 0 with
 * @rec, -ENOENT (no record: never claimed), -EINVAL (garbled); other codes
 * are the caller's to stop on. @now_l: the census time (layout ms; a lease
 * below it has ended). Only a record leased at @now_l asks @alive_of (with
 * @arg) about its owner. Returns 0, or @alive_of's code (@w not counted).
 */
int fw_fleet_census_add(struct fw_fleet_census *c, const struct fw_fleet_reserve *res, uint32_t w,
			int read_rc, const struct fw_fleet_rec *rec, uint64_t now_l,
			fw_fleet_alive_fn alive_of, void *arg);

/*
 * The root's census record (ROOT/census, census.c): the last census a node
 * of the root took, which the others export as their gauges while it is
 * fresh, so that the root is counted about once per period, not once per
 * node. Its text:
 *
 *   "flakewire-census v1\nat=UNIX_MS\nby=IDENTITY\ntotal=N\nreserved=N\n
 *    free=N\nheld=N\nstranded=N\ngarbled=N\nnext_stranded=UNIX_MS\n"
 *
 * at: when it was taken (unix ms, its taker's clock, or the store's for a
 * census a claim's scan counted); next_stranded: when the first stranded
 * lease ends (unix ms, 0: none stranded). Gauges only: no claim, renewal
 * or proof reads it.
 */
struct fw_fleet_census_rec {
	uint64_t at;                    /* unix ms */
	char by[FW_FLEET_IDENTITY_MAX]; /* the identity that took it */
	struct fw_fleet_census c;       /* c.next_stranded: unix ms here, 0 when none */
};

/* Writes @cr's text; returns its length (< @cap) or -ENOSPC. */
int fw_fleet_census_format(char *buf, size_t cap, const struct fw_fleet_census_rec *cr);

/*
 * Parses a census record. Returns 0, or -EINVAL (garbled: the magic, a field
 * missing or out of range, counts that do not add up to total, an identity
 * that is not one): such a record is stale, counted again and replaced.
 */
int fw_fleet_census_parse(const char *buf, int len, struct fw_fleet_census_rec *cr);

/*
 * A set of identities (the live ones, from one alive_list): added one by
 * one, then looked up. Zero-initialise it; free it with fw_fleet_names_free.
 */
struct fw_fleet_names {
	char (*v)[FW_FLEET_IDENTITY_MAX];
	uint32_t n, cap;
	bool sorted;
};

/* Adds @identity (an alive_list callback: @arg is the set). 0 or -ENOMEM;
 * a name too long for an identity is left out (no record can name it). */
int fw_fleet_names_add(void *arg, const char *identity);

/* True when @identity is in @n (sorts it at the first lookup after an add). */
bool fw_fleet_names_has(struct fw_fleet_names *n, const char *identity);

/* Frees the set's memory (it can be reused, empty). */
void fw_fleet_names_free(struct fw_fleet_names *n);

/* True for 1-127 characters of [A-Za-z0-9._:-], not "." or "..". */
bool fw_fleet_identity_ok(const char *s);

/* Keys. Each returns the length written (truncated to @cap like snprintf). */
int fw_fleet_key_worker(char *buf, size_t cap, const char *root, uint32_t worker);
int fw_fleet_key_node(char *buf, size_t cap, const char *root, const char *identity);
int fw_fleet_key_sub(char *buf, size_t cap, const char *root, const char *sub);

/*
 * Parses a child name of ROOT/workers ("00042"). Returns the worker ID, or
 * -1 for a name that is not one below @total.
 */
int32_t fw_fleet_key_worker_parse(const char *name, uint32_t total);

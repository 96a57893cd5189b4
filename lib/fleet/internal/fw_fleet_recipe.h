/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The claiming recipe and the lease rule, written once against the
 * registry interface (fw_fleet_store.h); the proof is
 * doc/design/fleet-safety.md, whose steps name these functions.
 *
 * Claim order (fw_fleet_cand_cmp, by fw_fleet_cand.rank): IDs this process
 * proves it held (take back: a restart keeps its IDs), then released ones
 * that can issue at once (floor at or below the store's time), lowest worker
 * ID first, so a graceful stop's IDs are claimed again before any other;
 * then never-claimed ones (created with S1), lowest worker ID first; then
 * released ones whose floor is still ahead, lowest floor first; then
 * expired ones (lease_until before the store's time), lowest lease first.
 * A replacement after the clock stepped back (FW_FLEET_CLAIM_FRESH) takes,
 * among those that can issue at the local clock, the lowest floor first.
 *
 * Proof, not names: a record is taken back (its floor kept) only when its
 * token is this process's own (a claim whose reply was lost) or one the
 * recipe's @proven list holds (the cache of the previous run on this same
 * locked state, whose mark fences everything that run issued: see
 * fw_state_lock.h). A record with this identity and any other token is
 * another owner's, whoever wrote it (a twin behind a partition, a clone):
 * taken over only once its lease ended, like anyone's. Every claim is one
 * write:
 * create-if-absent (S1) or compare-and-set on the version read (S2):
 *   take back  floor kept, lease = max(old lease, now + lease_ms)
 *   new        floor 0
 *   free       floor = max(floor, lease_until) (a release already raised it)
 *   expired    floor = max(floor, old lease_until): the new owner issues only
 *              above anything the old one may issue (rule 2)
 *   lease = max(now, floor) + lease_ms, now the local clock (layout ms).
 * Renewal (rule 3) is a CAS on the version this process last wrote; when it
 * fails the record is read: this process's own token (a write whose reply
 * was lost) is adopted, anything else means the ID was taken over and the
 * slot keeps its confirmed lease as its final limit (lost). Retirement and
 * release write owner "" and lease = floor = max(floor, @last) by CAS.
 *
 * Pure logic over the store: no threads, no locks, no globals. Messages go
 * through r->log.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_store.h"

/* A worker ID this process holds (the registry thread's private copy). */
struct fw_fleet_held {
	int32_t worker;    /* FW_FLEET_WORKER_NONE: none */
	int64_t version;   /* of the last write confirmed (S2 compares it) */
	uint64_t lease;    /* layout ms, confirmed */
	uint64_t floor;    /* layout ms */
	bool lost;         /* taken over by another: lease is the final limit */
	bool cached;       /* from the cache file: not yet written by this process */
	uint64_t token;    /* the record's token as last confirmed (a cached one: its run's) */
	uint64_t root_gen; /* the root's generation when this process last wrote it (0: none) */
	bool verify;       /* read the record before the next write (a reconnection) */
};

/* What the recipe needs besides the store. */
struct fw_fleet_recipe {
	struct fw_fleet_store *store;
	struct fw_layout layout;
	const char *identity;
	uint64_t token;                /* random per process start */
	uint64_t lease_ms;             /* lease length */
	uint64_t (*now_ms)(void *arg); /* local unix ms (never NULL) */
	void *now_arg;
	struct fw_log log; /* {NULL, NULL}: silent */
	/* The previous run's records this process proves it continues (from its
	 * cache, on the same locked state): worker and token of each. */
	const struct fw_fleet_held *proven;
	uint32_t n_proven;
	/* The root record as last checked (NULL: none): its reserved worker IDs are
	 * never claimed, no claim's floor is below its fence, and its generation
	 * tells a restored store (a record of ours whose version went back) from a
	 * fenced one. */
	const struct fw_fleet_root *root;
	/* NULL: scans count nothing. Else every fw_fleet_scan also takes the
	 * root's census into it on the way (one alive_list more), and
	 * fw_fleet_claim_n counts its claims in, so a start needs no second
	 * read of every record for its gauges (census.c). */
	struct fw_fleet_scan_census *census;
};

/* The census a scan takes (fw_fleet_recipe.census). */
struct fw_fleet_scan_census {
	struct fw_fleet_census c; /* c.next_stranded: layout ms */
	uint64_t at;              /* layout ms: the store's time the scan counted at */
	bool valid;               /* the last scan counted every worker ID */
};

/*
 * The live identities, from one alive_list, into @n (emptied first).
 * Returns 0, a store code or -ENOMEM (@n then holds what came).
 */
int fw_fleet_live_names(struct fw_fleet_store *s, struct fw_fleet_names *n);

/* How fw_fleet_census_count counted a worker ID. */
enum fw_fleet_counted {
	FW_FLEET_COUNTED_NONE = 0, /* reserved, or garbled */
	FW_FLEET_COUNTED_FREE,
	FW_FLEET_COUNTED_HELD,
	FW_FLEET_COUNTED_STRANDED,
};

/*
 * fw_fleet_census_add with the liveness of @live (fw_fleet_live_names):
 * a record of this run (@r's identity and token) counts alive even when
 * @live lacks its identity (its liveness record being made again). *how
 * (may be NULL) says where @w went. Returns 0 (it asks the store nothing).
 */
int fw_fleet_census_count(const struct fw_fleet_recipe *r, struct fw_fleet_names *live,
			  struct fw_fleet_census *c, uint32_t w, int read_rc,
			  const struct fw_fleet_rec *rec, uint64_t now_l,
			  enum fw_fleet_counted *how);

/* True when worker @w's record with @token is this process's to take back. */
bool fw_fleet_proven(const struct fw_fleet_recipe *r, int32_t w, uint64_t token);

enum fw_fleet_kind { FW_FLEET_TAKEBACK = 0, FW_FLEET_NEW, FW_FLEET_FREE, FW_FLEET_EXPIRED };

/* A worker ID that can be claimed, and how. */
struct fw_fleet_cand {
	int32_t worker;
	int64_t version; /* read (not for FW_FLEET_NEW) */
	enum fw_fleet_kind kind;
	struct fw_fleet_rec rec; /* as read (zero for FW_FLEET_NEW) */
	uint32_t rank;           /* claim order (set by fw_fleet_scan): see above */
	uint8_t counted;         /* enum fw_fleet_counted: in the scan's census */
};

/* qsort order of candidates (claim order above). */
int fw_fleet_cand_cmp(const void *a, const void *b);

/* The record a claim of @c writes at local time @now_l (layout ms). */
void fw_fleet_claim_terms(const struct fw_fleet_recipe *r, const struct fw_fleet_cand *c,
			  uint64_t now_l, struct fw_fleet_rec *out);

/*
 * Reads every worker record and lists what can be claimed, in claim order,
 * leaving out workers with skip[w] (held by this process) and garbled
 * records. *n_owned counts live leases of others, *n_mine (may be NULL)
 * those among them with this identity that this process cannot prove its
 * own; @owners (may be NULL) lists them ("3 by node-b until 2026-...").
 * With r->census, it also counts the root's census at @server_unix into it
 * (a skipped worker counts held: this process holds it), valid only when
 * the scan and the alive_list before it both succeeded (a census that
 * cannot be taken never fails the scan).
 * Returns 0 with *out (free() it) and *n; a store code; -ENOMEM.
 */
int fw_fleet_scan(const struct fw_fleet_recipe *r, uint64_t server_unix, const bool *skip,
		  struct fw_fleet_cand **out, uint32_t *n, uint32_t *n_owned, uint32_t *n_mine,
		  char *owners, size_t owners_len);

/*
 * Writes the claim of @c. When the store answers -EEXIST or -ESTALE, reads
 * the record: one holding this run's token and identity is this claim's own
 * write that landed before the store sent it again (etcd's client resends a
 * request whose reply timed out) and the claim succeeds with the record as
 * read (its version, lease and floor), so no ID this run wrote is left
 * leased to nobody. Returns 0 with *h set; -EEXIST, -ESTALE, -ENOENT
 * (another writer came first: try the next candidate); -ENOTCONN (unknown:
 * a later scan sees the record as a take-back if it landed; also when the
 * read after -EEXIST/-ESTALE gets no answer); -EIO, -EACCES.
 */
int fw_fleet_claim_one(const struct fw_fleet_recipe *r, const struct fw_fleet_cand *c,
		       struct fw_fleet_held *h);

/* Flags of fw_fleet_claim_n. */
#define FW_FLEET_CLAIM_ALL 0x1u /* all of @n_need or none: what was got is given back */
#define FW_FLEET_CLAIM_FRESH                                        \
	0x2u /* replacements: only IDs that can issue now (floor at \
	      * or below the local clock; no take-back) */

/*
 * Claims @n_need worker IDs not in @skip, at the store's time @server_unix,
 * got[k] for the slot @slot_of[k] (only named in the log line).
 * Not enough candidates: writes nothing (*n_mine, may be NULL: how many of
 * the live leases are this identity's unproven ones, which end in time).
 * Returns 0 with got[0..n_need) and
 * kinds[]; FW_EFLEET_FULL (@err names the owners; *n_got may be > 0 without
 * FW_FLEET_CLAIM_ALL: those are kept); -ENOTCONN (*n_got as for FULL); -EIO.
 * Given back (FW_FLEET_CLAIM_ALL) means released with its own floor, never
 * a take-back (this identity's previous run may have issued up to its old
 * lease, which its floor does not cover).
 * With r->census, the scan's census counts each ID claimed as held (and one
 * given back as free).
 */
int fw_fleet_claim_n(const struct fw_fleet_recipe *r, uint64_t server_unix, const bool *skip,
		     uint32_t n_need, uint32_t flags, const uint32_t *slot_of,
		     struct fw_fleet_held *got, enum fw_fleet_kind *kinds, uint32_t *n_got,
		     uint32_t *n_mine, char *err, size_t errlen);

/* Outcomes of fw_fleet_renew. */
enum fw_fleet_renewed {
	FW_FLEET_RENEWED = 0,
	FW_FLEET_ADOPTED,
	FW_FLEET_LOST,
	FW_FLEET_BACK,
	FW_FLEET_GONE,
	FW_FLEET_UNDER,
};

/*
 * Renews @h (not lost): CAS with lease = max(h->lease, now + lease_ms).
 * When the CAS fails the record is read: this run's token (a write whose
 * reply was lost), or for a slot from the cache the token the cache holds
 * (its run's write the cache missed), is adopted; anything else is lost.
 * FW_FLEET_BACK: the record holds this run's token at a version below the
 * last one confirmed, under the same root generation: the store went back
 * (restored from a snapshot) and nothing was written (h unchanged).
 * FW_FLEET_GONE: under the same root generation, the record is missing, or
 * free with a floor below the lease this run confirmed: the store lost
 * this run's writes (restored from a copy taken before them, or records
 * deleted); h unchanged (it issues on within its confirmed lease: nobody
 * else holds the ID, and the stop that follows keeps it so).
 * FW_FLEET_UNDER: under the same root generation, another owner's record
 * (*owner names it) with a floor below the lease this run confirmed: no
 * claim made in that store's history could write it (a takeover's floor is
 * at or above the old lease), so the store lost this run's writes and that
 * owner issues under the same worker ID now: h is lost, its lease cut to
 * the local time now, so this run stops issuing under it at once.
 * Neither is possible for a slot started from the cache (no generation
 * known): those are lost as before.
 * Returns an enum fw_fleet_renewed (h updated: version and lease, or lost);
 * -ENOTCONN or -EIO (h unchanged: the write may have landed, the next
 * renewal adopts it). *local_mid and *mtime (server, 0: none) are set for
 * the clock check on FW_FLEET_RENEWED.
 */
int fw_fleet_renew(const struct fw_fleet_recipe *r, struct fw_fleet_held *h, uint64_t *local_mid,
		   uint64_t *mtime, char *owner, size_t owner_len);

/*
 * Releases @h, which issued nothing above @last (layout ms): owner "",
 * lease = floor = max(h->floor, @last), by CAS on h->version. Returns 0 or a
 * store code (-ESTALE: the version moved).
 */
int fw_fleet_release_held(const struct fw_fleet_recipe *r, const struct fw_fleet_held *h,
			  uint64_t last);

/* Outcomes of fw_fleet_retire_held. */
enum fw_fleet_retired {
	FW_FLEET_RETIRE_DONE = 0, /* released: the store confirmed the write */
	FW_FLEET_RETIRE_ABOVE,    /* another owner's record, its floor at or above @last */
	FW_FLEET_RETIRE_AGAIN,    /* not confirmed: keep it retiring and try again later */
};

/*
 * A retirement that is done only when the store confirms it: releases @h
 * (fw_fleet_release_held); when the version moved, reads the record: this
 * run's own write (a lost reply) is released again at its version, this very
 * release already in place (it landed before the store sent it again) is
 * done, another owner's record whose floor is at or above @last needs
 * nothing more.
 * Every other outcome (a store error of any kind, a record below @last, one
 * that is gone or garbled) is FW_FLEET_RETIRE_AGAIN, with the store's
 * error in *rc (0 when the record was read). h->version follows the reads.
 */
enum fw_fleet_retired fw_fleet_retire_held(const struct fw_fleet_recipe *r, struct fw_fleet_held *h,
					   uint64_t last, int *rc);

/*
 * Reads and parses worker @w's record. Returns 0; -EINVAL (garbled: *v is
 * set, *rec is not: never claim nor write it); -ENOENT; a store code.
 */
int fw_fleet_read(struct fw_fleet_store *s, uint32_t w, struct fw_fleet_rec *rec,
		  struct fw_fleet_ver *v);

/* Local time in layout ms. */
uint64_t fw_fleet_recipe_now(const struct fw_fleet_recipe *r);

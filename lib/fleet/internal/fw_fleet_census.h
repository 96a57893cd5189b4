/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The root's census, shared (issue 50): free, stranded and held worker IDs
 * counted about once per period for the whole root, not once per node.
 *
 * A full census is one list of the worker records, a read of each and one
 * alive_list (fw_fleet_census_take): about 2^worker_bits requests. Taken by
 * every node every minute that is O(nodes x IDs) for the store (measured:
 * 1,033.7 requests per node per minute with 256 nodes). So the last census
 * is kept at ROOT/census (fw_fleet_census_rec, fw_fleet_rec.h) and every
 * node, once per period, reads that one record (fw_fleet_census_shared):
 *
 *   fresh    its gauges are the record's figures, as they are;
 *   stale    (or absent, or garbled) it takes the census itself and writes
 *            it, S2 at the version read (S1 when absent); a write that loses
 *            means another node took one meanwhile: its record is read and
 *            exported instead (the node's own count when that read fails).
 *
 * Fresh (fw_fleet_census_fresh): a record this identity took is fresh for
 * 7/8 of a period, so its taker, which asks again a period after it took
 * it, counts again; anyone else's is fresh for a period plus a random part
 * of half a period, so the others read it and take over only when its
 * taker stops counting (stopped, partitioned, failing). One census per
 * period for the whole root, about, whatever the number of nodes; a
 * record's figures are at most about two periods old where they are
 * exported (flakewire_fleet_census_timestamp_seconds says how old).
 *
 * A claim's scan reads every record anyway: it takes a census on the way
 * (fw_fleet_recipe.census, one alive_list more), which a start publishes
 * (fw_fleet_census_publish) instead of reading the root a second time.
 *
 * Over the store of the calling thread (fw_fleet_store.h); no threads, no
 * clock but r->now_ms, never prints. The record is gauges only: nothing a
 * claim, renewal or proof decides reads it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fw_fleet_recipe.h"

/*
 * Takes the root's census at @now_l (layout ms; a lease below it has ended):
 * one list, a read of each worker record the root does not reserve, one
 * alive_list (a record of this run, r->token, counts alive). c->next_stranded
 * in layout ms. Returns 0; a store code; -ENOMEM.
 */
int fw_fleet_census_take(const struct fw_fleet_recipe *r, uint64_t now_l,
			 struct fw_fleet_census *c);

/*
 * Whether @cr is fresh for @identity at @now (unix ms, this node's clock),
 * for a node that asks every @period_ms: taken by @identity, for 7/8 of a
 * period; by another, for a period plus @rnd % (period / 2). A record taken
 * more than a period ahead of @now (a clock far ahead) is never fresh.
 */
bool fw_fleet_census_fresh(const struct fw_fleet_census_rec *cr, const char *identity, uint64_t now,
			   uint64_t period_ms, uint64_t rnd);

/* Where fw_fleet_census_shared's figures came from. */
enum fw_fleet_census_src {
	FW_FLEET_CENSUS_READ = 0, /* the record, fresh: one meta_get */
	FW_FLEET_CENSUS_TAKEN,    /* stale: taken here and written */
	FW_FLEET_CENSUS_WINNER,   /* taken here, another node's written first: its record */
	FW_FLEET_CENSUS_UNSHARED, /* taken here; not written (a store error): its own count */
};

/*
 * The root's census as the fleet shares it at @root's census record (see
 * above), into *out (next_stranded in unix ms, 0: none) and *src. @period_ms:
 * how often this node asks; @rnd: a random number (the jitter).
 * Returns 0; the code of the first read or of the census (a store code,
 * -ENOMEM): *out not set then.
 */
int fw_fleet_census_shared(const struct fw_fleet_recipe *r, const char *root, uint64_t period_ms,
			   uint64_t rnd, struct fw_fleet_census_rec *out,
			   enum fw_fleet_census_src *src);

/*
 * Writes @cr (a census this node took: a claim's scan, the census of a
 * shortage) at @root's census record unless the record there is as new or
 * newer: one meta_get, then S1 when absent or S2 at the version read; a
 * write that loses is not tried again (another node wrote meanwhile).
 * Returns 0 (written, or not needed); -ESTALE/-EEXIST (lost); a store code.
 */
int fw_fleet_census_publish(const struct fw_fleet_recipe *r, const char *root,
			    const struct fw_fleet_census_rec *cr);

/* @c (next_stranded in layout ms), taken at @at_l (layout ms) by r->identity, as a record. */
void fw_fleet_census_rec_of(const struct fw_fleet_recipe *r, const struct fw_fleet_census *c,
			    uint64_t at_l, struct fw_fleet_census_rec *out);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cache file: the claims and confirmed leases of the last run, so that
 * a node whose store is unreachable at start keeps issuing under them
 * (never above: they are leases the store confirmed, rule 1), and the
 * proof that lets a restart take its IDs back: each record's token, under
 * the stamp of the locked state the run issued from (fw_state_lock.h). Only
 * a run on the same locked state (same lock file, same boot) reads a cache
 * as its own; any other gets -ESTALE and proves nothing. Written atomically
 * (temp file, fsync, rename, directory fsync) by the registry thread after a
 * change; read by fw_fleet_start.
 *
 *   flakewire-fleet-cache v2
 *   root=ROOT
 *   identity=IDENTITY
 *   layout=EPOCH/DC/WORKER/SEQ
 *   state=STAMP
 *   slot=I worker=W version=V lease_until=MS floor=MS token=HEX16  (one per held slot)
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet_recipe.h"
#include "fw_layout.h"

/* Whose cache it is: a file for another root, identity, layout or state is refused. */
struct fw_fleet_cache_of {
	const char *root;
	const char *identity;
	struct fw_layout layout;
	const char *stamp; /* fw_state_lock_stamp; NULL or "": no state, no cache is ours */
};

/*
 * Writes the @n slots' held IDs (those with a worker) to @path, durably.
 * Returns 0 or -errno (the old file stays).
 */
int fw_fleet_cache_write(const char *path, const struct fw_fleet_cache_of *of,
			 const struct fw_fleet_held *slots, uint32_t n);

/*
 * Loads @path into slots[0..n) (each marked cached; slots the file does not
 * name are left alone; lines for slots >= n are ignored). Returns the
 * number of slots loaded; -ENOENT and other -errno (unreadable); -ESTALE
 * (for another root, identity, layout or state, or an older format: nothing
 * loaded); FW_ESTATE_CORRUPT
 * (garbled, or a worker outside the layout: every slot set to none).
 */
int fw_fleet_cache_read(const char *path, const struct fw_fleet_cache_of *of,
			struct fw_fleet_held *slots, uint32_t n);

/* Why fw_fleet_cache_read refused (@rc < 0), for the start's log line. */
const char *fw_fleet_cache_why(int rc);

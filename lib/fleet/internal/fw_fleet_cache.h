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
 *   flakewire-fleet-cache v3
 *   root=ROOT
 *   identity=IDENTITY
 *   layout=EPOCH/DC/WORKER/SEQ
 *   state=STAMP
 *   mark=UNIX_MS
 *   slot=I worker=W version=V lease_until=MS floor=MS token=HEX16  (one per held slot)
 *
 * mark: the mark (fw_mark.h) the state had persisted when the file was
 * written (0: none yet). Everything the run issued before that write is at
 * or below it, and the run's later marks are at or above it (its
 * reservations only grow, and its final mark at a stop is written before
 * the registry's last cache write: fw_fleet_stop). So a later start that
 * reads a mark below it, or none, is not on the mark this cache was written
 * beside (deleted, restored, set by hand): it proves no take-back. A v2 file
 * (written before the mark line) is read as before, without the check, and
 * the next write replaces it with a v3 one.
 */
#pragma once

#include <errno.h>
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

/* fw_fleet_cache_read's *mark_unix for a v2 file: no mark recorded. */
#define FW_FLEET_CACHE_NO_MARK    UINT64_MAX
/* Not a code of fw_fleet_cache_read: the registry's, when the state's mark is
 * missing or below the recorded one (fw_fleet_cache_why explains it). */
#define FW_FLEET_CACHE_MARK_BELOW (-ERANGE)

/*
 * Writes the @n slots' held IDs (those with a worker) to @path, durably:
 * temp file, fsync, rename, directory fsync; 0 only once all four are done.
 * @mark_unix: the mark the state has persisted now (0: none yet; not
 * FW_FLEET_CACHE_NO_MARK). Returns 0; -EINVAL (@n too large, @path too long,
 * @mark_unix FW_FLEET_CACHE_NO_MARK); -ENOSPC (too much text); another
 * -errno of the writes (the old file stays, unless only the directory
 * fsync failed: then the new file is in place but maybe not durable).
 */
int fw_fleet_cache_write(const char *path, const struct fw_fleet_cache_of *of, uint64_t mark_unix,
			 const struct fw_fleet_held *slots, uint32_t n);

/*
 * Loads @path into slots[0..n) (each marked cached; slots the file does not
 * name are left alone; lines for slots >= n are ignored) and, when
 * @mark_unix is not NULL, the mark it recorded into *mark_unix
 * (FW_FLEET_CACHE_NO_MARK for a v2 file, and on any error). Returns the
 * number of slots loaded; -ENOENT and other -errno (unreadable); -ESTALE
 * (for another root, identity, layout or state, or the v1 format: nothing
 * loaded); FW_ESTATE_CORRUPT
 * (garbled, a bad mark line, or a worker outside the layout: every slot set
 * to none).
 */
int fw_fleet_cache_read(const char *path, const struct fw_fleet_cache_of *of, uint64_t *mark_unix,
			struct fw_fleet_held *slots, uint32_t n);

/* Why fw_fleet_cache_read refused (@rc < 0), for the start's log line. */
const char *fw_fleet_cache_why(int rc);

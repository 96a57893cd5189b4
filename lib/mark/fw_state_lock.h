/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One state, one process. A responder's state (the mark, and in a fleet the
 * cache of its claims) proves what it may issue only if no other process
 * issues from it at the same time, so a responder locks it for its whole
 * life, and a second one on the same state refuses to start.
 *
 *  - The state lock: flock(LOCK_EX | LOCK_NB) on "STATE_FILE.lock", beside
 *    the mark in the state directory. That file is never renamed nor removed
 *    (the mark and the cache are replaced by rename, so a lock on them would
 *    be gone at their next write). The kernel drops the lock when the
 *    process ends, however it ends (SIGKILL included); the file keeps the
 *    holder's PID as text, for the refusal's message.
 *  - Static worker IDs (no fleet) are locked host-wide too, whatever the
 *    state files: one "dcD-workerW.lock" per worker ID in a directory every
 *    responder on the host can write ([state] lock_dir, /run/lock/flakewire
 *    by default, made by the packages' tmpfiles.d entry or here, mode 1777).
 *    Two responders with the same static worker ID on one host cannot both
 *    serve.
 *  - The stamp, "DEV:INO:BOOT_ID" (the state lock file's device and inode,
 *    the kernel's boot ID): what a fleet cache written under this lock
 *    records, so that a later run can prove from its own state that it
 *    continues the run that wrote it. A copied or restored state directory
 *    has another inode; a cloned VM or disk image boots with another boot
 *    ID: neither proves anything (doc/design/fleet-safety.md).
 *
 * Not thread-safe: one owner thread takes and frees. No logging: errors
 * come back as one line in @err.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"

#define FW_STATE_STAMP_LEN 96

struct fw_state_lock;

/*
 * Locks the state of @state_file (creating "STATE_FILE.lock", and its
 * directory, when missing) and writes this process's PID into it.
 * Returns 0 with *out set; -EWOULDBLOCK when another process holds it (@err:
 * "state FILE is locked by PID N ..."); another negated errno when the lock
 * file cannot be opened or locked (@err names it); -ENOMEM.
 */
FW_API int fw_state_lock_take(const char *state_file, struct fw_state_lock **out, char *err,
			      size_t errlen);

/*
 * Also locks the @n static worker IDs @values (worker field values: the
 * datacenter in the bits above @worker_bits) in @lock_dir, creating it
 * (mode 1777) when missing. All or none: on error the ones taken here are
 * released.
 * Returns 0; -EWOULDBLOCK (@err names the worker ID, the lock file and the
 * holder's PID); another negated errno (@err names the file and [state]
 * lock_dir); -EINVAL (@n above 1024).
 */
FW_API int fw_state_lock_workers(struct fw_state_lock *l, const char *lock_dir,
				 const uint32_t *values, uint32_t n, uint32_t worker_bits,
				 char *err, size_t errlen);

/* The stamp of @l ("DEV:INO:BOOT_ID"), valid until fw_state_lock_free. */
FW_API const char *fw_state_lock_stamp(const struct fw_state_lock *l);

/*
 * Whether another process holds the state lock of @state_file (for tools
 * that write the state, such as `flakectl mark --set`): returns 1 with *pid
 * (0 when the holder's PID is unknown), 0 when nobody holds it (or there is
 * no lock file), or a negated errno.
 */
FW_API int fw_state_lock_holder(const char *state_file, long *pid);

/* Releases every lock of @l and frees it (the files stay). NULL is fine. */
FW_API void fw_state_lock_free(struct fw_state_lock *l);

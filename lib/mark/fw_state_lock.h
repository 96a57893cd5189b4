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
 *    state files: one "nodeV-seqS.lock" per worker ID in a directory every
 *    responder on the host can write ([state] lock_dir, /run/lock/flakewire
 *    by default, made by the packages' tmpfiles.d entry or here, mode 1777).
 *    V is the node field's value as the ID space sees it (datacenter <<
 *    worker_bits | worker) and S the sequence width: two layouts whose IDs
 *    can be equal (the same node value below the same number of sequence
 *    bits) take the same lock, whatever their datacenter/worker split, and
 *    different node values do not. Two responders with the same static
 *    worker ID on one host cannot both serve. The lock holds only among
 *    processes that see the same directory: in containers, lock_dir must be
 *    a host directory mounted into each (fw_state_lock_dir_mounted).
 *  - The stamp, "DEV:INO:BOOT_ID" (the state lock file's device and inode,
 *    the kernel's boot ID): what a fleet cache written under this lock
 *    records, so that a later run can prove from its own state that it
 *    continues the run that wrote it. A copied or restored state directory
 *    has another inode; a cloned VM or disk image boots with another boot
 *    ID: neither proves anything (doc/design/fleet-safety.md). The boot ID
 *    is /proc/sys/kernel/random/boot_id; where /proc/sys is hidden (systemd's
 *    ProcSubset=pid mounts /proc with subset=pid), the environment variable
 *    FW_STATE_BOOT_ID_ENV, which the packaged units set to systemd's %b (the
 *    same ID, expanded by the service manager outside the sandbox: 32 hex
 *    digits, with or without dashes). With neither, the boot is unknown:
 *    the stamp's boot part is "unknown-" and 16 random hex digits, so the
 *    state proves nothing to a later run.
 *
 * Not thread-safe: one owner thread takes and frees. No logging: errors
 * come back as one line in @err.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"

#define FW_STATE_STAMP_LEN   96
/* The boot ID when /proc/sys/kernel/random/boot_id cannot be read (see above). */
#define FW_STATE_BOOT_ID_ENV "FLAKEWIRE_BOOT_ID"

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
 * Also locks the @n static worker IDs @values (node field values: the
 * datacenter in the bits above @worker_bits, the worker below) of a layout
 * with @seq_bits sequence bits in @lock_dir, creating it (mode 1777) when
 * missing; the files are named by fw_state_lock_worker_name. All or none:
 * on error the ones taken here are released.
 * Returns 0; -EWOULDBLOCK (@err names the worker ID, datacenter, node value,
 * the lock file and the holder's PID); another negated errno (@err names
 * the file and [state] lock_dir); -EINVAL (@n above 1024, @worker_bits
 * above 16, @seq_bits above 63, or called twice).
 */
FW_API int fw_state_lock_workers(struct fw_state_lock *l, const char *lock_dir,
				 const uint32_t *values, uint32_t n, uint32_t worker_bits,
				 uint32_t seq_bits, char *err, size_t errlen);

/*
 * The lock file's name for node field value @node under @seq_bits sequence
 * bits ("node33-seq12.lock") into @buf. Returns 0, -ENAMETOOLONG (@cap).
 */
FW_API int fw_state_lock_worker_name(char *buf, size_t cap, uint32_t node, uint32_t seq_bits);

/*
 * Whether directory @dir is itself a mount point (its own line in
 * @mountinfo, NULL: /proc/self/mountinfo), and not "/": in a container, a
 * volume mounted there (a host directory shared by every container on the
 * host) rather than a directory of the container's own file system.
 * Returns 1, 0, or a negated errno (@dir cannot be resolved: -ENOENT...;
 * @mountinfo unreadable).
 */
FW_API int fw_state_lock_dir_mounted(const char *dir, const char *mountinfo);

/* The stamp of @l ("DEV:INO:BOOT_ID"), valid until fw_state_lock_free. */
FW_API const char *fw_state_lock_stamp(const struct fw_state_lock *l);

/*
 * Whether another process holds the state lock of @state_file (for tools
 * that write the state, such as `flakectl mark --set`): returns 1 with *pid
 * (0 when the holder's PID is unknown), 0 when nobody holds it (or there is
 * no lock file), or a negated errno.
 */
FW_API int fw_state_lock_holder(const char *state_file, long *pid);

/*
 * Locks one more file of a state, @path (created when missing, never
 * removed; it keeps the holder's PID as text), the way the state lock is
 * taken: flock(LOCK_EX | LOCK_NB), dropped by the kernel when the process
 * ends. For a file two states must not share (a fleet's cache:
 * "CACHE_FILE.lock"). Returns the descriptor holding the lock (the caller
 * closes it to release); -EWOULDBLOCK with *holder the holder's PID (0:
 * unknown) when another process (or another descriptor of this one) holds
 * it; another negated errno when it cannot be opened or locked.
 */
FW_API int fw_state_lock_file(const char *path, long *holder);

/* Releases every lock of @l and frees it (the files stay). NULL is fine. */
FW_API void fw_state_lock_free(struct fw_state_lock *l);

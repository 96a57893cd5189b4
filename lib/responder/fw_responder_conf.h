/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The configuration as the components take it: the one place that maps
 * struct fw_conf (lib/conf) to the plain structs of the timekeeper
 * (lib/keeper), the source policy and rate limiter (lib/policy), the state
 * lock (lib/mark) and the worker-ID registry (lib/fleet). The components
 * themselves never include fw_conf.h; both responders (flakewire and
 * flakesock) and the responder core (fw_responder.h) call these.
 *
 * No DPDK, no printing: an error is a negative errno with one line in @err
 * that names the key, its value and the range allowed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_conf.h"
#include "fw_fleet.h"
#include "fw_fleet_store.h"
#include "fw_keeper.h"
#include "fw_keeper_driver.h"
#include "fw_policy.h"
#include "fw_state_lock.h"

/*
 * Fills *kc with the keeper defaults, then [clock] max_slew_ppm, reanchor_ms
 * (also the rate horizon), step_ms and [state] mark_ahead_ms, start_policy,
 * file from @c, and @epoch_ms; the layout the mark fences ([id]
 * datacenter_bits, worker_bits, sequence_bits, datacenter at @epoch_ms). The
 * caller sets n_workers, worker_ids, name and log.
 */
FW_API void fw_responder_keeper_config(struct fw_keeper_config *kc, const struct fw_conf *c,
				       uint64_t epoch_ms);

/*
 * The keeper driver's settings from @c: the keeper's (as above) for
 * @n_workers workers with the IDs at @ids (kept until
 * fw_keeper_driver_start returns) named @name, [clock] calibrate_ms and
 * [stats] interval_s. The caller sets dc->ops.
 * Returns 0, or -EINVAL when @n_workers is 0 or above FW_KEEPER_WORKERS_MAX
 * (one line in @err naming the count and the range).
 */
FW_API int fw_responder_driver_config(struct fw_keeper_driver_config *dc, const struct fw_conf *c,
				      uint64_t epoch_ms, uint32_t n_workers, const uint32_t *ids,
				      const char *name, char *err, size_t errlen);

/*
 * One state, one process (fw_state_lock.h), for both responders: locks
 * [state] file and, without a fleet, the @n_workers static worker IDs of
 * [id] (their node field values: [id] datacenter above the worker) in
 * [state] lock_dir. Call before reading the mark or claiming.
 * With [state] lock_dir_mount = yes (the container images) and no fleet,
 * lock_dir must be a mount point of its own (fw_state_lock_dir_mounted), else
 * -EPERM (-ENOENT: missing) with @err naming both keys.
 * Returns 0 with *out set (free it after the keeper's final mark), or a
 * negated errno with one line in @err (the caller refuses to start).
 */
FW_API int fw_responder_state_lock(const struct fw_conf *c, uint32_t n_workers,
				   struct fw_state_lock **out, char *err, size_t errlen);

/*
 * Initialises *p from [net] allow (both families), trusted (both families)
 * and reflector_ports of @c. *@outside and *@outside6 (either may be NULL)
 * get bit i set for each trusted prefix i (IPv4, IPv6) that no allowed
 * prefix covers: such a source is never answered, which the caller reports.
 * Returns 0, or -EINVAL when a list is longer than lib/policy holds (one
 * line in @err: "[net] allow = 17 IPv4 prefixes: at most 16").
 */
FW_API int fw_responder_policy(struct fw_policy *p, const struct fw_conf *c, uint32_t *outside,
			       uint32_t *outside6, char *err, size_t errlen);

/*
 * Fills *rc for one of @n_readers rate tables from [net] rate, rate_burst
 * (their share: fw_rate_share), rate_prefix, rate_prefix6 and rate_slip of
 * @c, with @tsc_hz and @entries. The caller sets the seed.
 * Returns true, or false when [net] rate is 0 (no limit: no table).
 */
FW_API bool fw_responder_rate_config(struct fw_rate_config *rc, const struct fw_conf *c,
				     uint32_t n_readers, uint64_t tsc_hz, uint32_t entries);

/*
 * The registry's settings ([fleet]) with the storage its pointers point
 * into: fc.etcd points at etcd and fc's strings at host and zk_auth or
 * into the configuration, so keep both alive while fc is used, and wipe it
 * (fw_responder_fleet_config_wipe) once the registry is created: it holds
 * the secrets read from [fleet] etcd_password_file and zookeeper_auth_file.
 */
/* [fleet] cache_file's default before the cache moved beside its state (issue 50) */
#define FW_RESPONDER_LEGACY_CACHE "/var/lib/flakewire/fleet"

struct fw_responder_fleet_config {
	struct fw_fleet_config fc;
	struct fw_fleet_etcd_opts etcd;
	char host[FW_FLEET_IDENTITY_MAX];
	char password[256];
	char zk_auth[512];
	char cache[FW_CONF_STR_LEN + 8]; /* [fleet] cache_file = auto: [state] file + ".fleet" */
	bool new_worker;                 /* [clock] backstep = new_worker (fw_fleet_app_create) */
};

/*
 * Fills *out from [fleet] and [clock] backstep of @c for a registry over
 * @layout, with @state_stamp (fw_state_lock_stamp). Identity: [fleet]
 * identity; env:VAR, that environment variable's value; empty, the host
 * name. Cache: [fleet] cache_file; auto, [state] file with ".fleet"
 * appended, and FW_RESPONDER_LEGACY_CACHE as out->fc.legacy_cache_file (read
 * once when the new one does not exist yet). The caller sets out->fc.log.
 * Returns 0; -EINVAL with one line in @err ([fleet] identity = env:VAR with
 * VAR unset or empty; [fleet] zookeeper_auth_file not USER:PASSWORD on its
 * first line); fw_secret_read's code with its line (a secret file that
 * cannot be read or is too open).
 */
FW_API int fw_responder_fleet_config(struct fw_responder_fleet_config *out, const struct fw_conf *c,
				     const struct fw_layout *layout, const char *state_stamp,
				     char *err, size_t errlen);

/* Zeroes the secrets *f holds (the store keeps its own copies). */
FW_API void fw_responder_fleet_config_wipe(struct fw_responder_fleet_config *f);

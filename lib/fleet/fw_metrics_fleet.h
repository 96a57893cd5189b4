/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fleet's families on /metrics (both responders, when [fleet] zookeeper
 * is set), registered with fw_metrics_add_collector(registry,
 * fw_metrics_fleet_collect, &src):
 *   flakewire_fleet_lease_remaining_seconds{worker}  confirmed lease end minus
 *                             the local clock (negative once it ended)
 *   flakewire_fleet_lease_end_timestamp_seconds{worker}  unix time it ends
 *   flakewire_fleet_lease_length_seconds       [fleet] lease_ms
 *   flakewire_fleet_no_lease{slot}             1 while the slot (lcore or thread
 *                             index) answers NO_LEASE: no worker ID, or its
 *                             lease ended
 *   flakewire_fleet_lease_lost{worker}         1 when another node took it over
 *   flakewire_fleet_connected                  1 while the registry session
 *                             (ZooKeeper or etcd) is up
 *   flakewire_fleet_clock_offset_seconds       local clock minus ZooKeeper's at
 *                             the last renewal (absent until measured; etcd
 *                             gives no clock to measure)
 *   flakewire_fleet_worker_ids                 the root's worker IDs (2^worker_bits)
 *   flakewire_fleet_free_worker_ids            the root's worker IDs a claim can
 *                             take now (never claimed, released, expired)
 *   flakewire_fleet_stranded_worker_ids        leased to owners with no live
 *                             session, lease running
 *   flakewire_fleet_next_stranded_return_timestamp_seconds  when the first
 *                             stranded one's lease ends (0: none); these three
 *                             from the node's first claim on (fw_fleet_status)
 *   flakewire_fleet_last_renewal_timestamp_seconds
 *   flakewire_fleet_renewals_total, _renewal_failures_total, _claims_total,
 *   _takebacks_total, _takeovers_total, _leases_lost_total, _releases_total
 *
 * Thread safety: the collector runs on the metrics thread and reads the
 * registry only through fw_fleet_slot() and fw_fleet_status(), copies taken
 * under the registry's mutex; @src itself is written before the collector
 * is added and never changes. Stop the metrics server before freeing the
 * registry.
 */
#pragma once

#include <stdint.h>

#include "fw_fleet.h"
#include "fw_metrics.h"

struct fw_metrics_fleet_src {
	struct fw_fleet *reg;  /* the running registry (fw_fleet_app_registry) */
	uint32_t n_slots;      /* the slots it was created with */
	uint64_t epoch_ms;     /* the layout's epoch: lease ms are layout ms */
	uint64_t lease_len_ms; /* [fleet] lease_ms */
	/* local unix ms now (NULL: CLOCK_REALTIME) */
	uint64_t (*now_ms)(void *arg);
	void *now_arg;
};

/* Collector (fw_metrics_collect_fn): @arg is a struct fw_metrics_fleet_src. */
FW_API void fw_metrics_fleet_collect(struct fw_metrics_writer *w, void *arg);

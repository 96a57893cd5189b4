/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>

#include "fw_metrics_fleet.h"
#include "fw_time.h"

void fw_metrics_fleet_collect(struct fw_metrics_writer *w, void *arg)
{
	const struct fw_metrics_fleet_src *src = arg;
	struct fw_fleet_slot s[FW_FLEET_SLOTS_MAX];
	char wname[FW_FLEET_SLOTS_MAX][12], sname[FW_FLEET_SLOTS_MAX][12];
	struct fw_fleet_status st;
	struct fw_metrics_label l[2];
	uint32_t n = src->n_slots < FW_FLEET_SLOTS_MAX ? src->n_slots : FW_FLEET_SLOTS_MAX;
	uint64_t now = src->now_ms ? src->now_ms(src->now_arg) : fw_wall_ms();

	for (uint32_t i = 0; i < n; i++) {
		if (fw_fleet_slot(src->reg, i, &s[i]) != 0)
			s[i].worker = FW_FLEET_WORKER_NONE;
		snprintf(sname[i], sizeof(sname[i]), "%u", i);
		if (s[i].worker >= 0)
			snprintf(wname[i], sizeof(wname[i]), "%d", (int)s[i].worker);
		else
			snprintf(wname[i], sizeof(wname[i]), "none");
	}
	fw_fleet_status(src->reg, &st);

	fw_metrics_family(w, "flakewire_fleet_lease_remaining_seconds", FW_METRICS_GAUGE,
			  "Confirmed lease end of the worker ID minus the local clock (negative "
			  "once ended: the worker answers NO_LEASE)");
	for (uint32_t i = 0; i < n; i++) {
		if (s[i].worker < 0)
			continue;
		l[0] = (struct fw_metrics_label){"worker", wname[i]};
		double end_ms = (double)(s[i].lease_ms + src->epoch_ms);
		fw_metrics_f64(w, l, 1, (end_ms - (double)now) / 1000.0);
	}
	fw_metrics_family(w, "flakewire_fleet_lease_end_timestamp_seconds", FW_METRICS_GAUGE,
			  "Unix time the worker ID's confirmed lease ends");
	for (uint32_t i = 0; i < n; i++) {
		if (s[i].worker < 0)
			continue;
		l[0] = (struct fw_metrics_label){"worker", wname[i]};
		fw_metrics_f64(w, l, 1, (double)(s[i].lease_ms + src->epoch_ms) / 1000.0);
	}
	fw_metrics_family(w, "flakewire_fleet_lease_lost", FW_METRICS_GAUGE,
			  "1 when another node took the worker ID over (its lease end is final)");
	for (uint32_t i = 0; i < n; i++) {
		if (s[i].worker < 0)
			continue;
		l[0] = (struct fw_metrics_label){"worker", wname[i]};
		fw_metrics_u64(w, l, 1, s[i].lost ? 1 : 0);
	}
	fw_metrics_family(w, "flakewire_fleet_no_lease", FW_METRICS_GAUGE,
			  "1 while the slot (lcore or thread index) answers NO_LEASE: no worker "
			  "ID, or its lease ended");
	for (uint32_t i = 0; i < n; i++) {
		l[0] = (struct fw_metrics_label){"slot", sname[i]};
		l[1] = (struct fw_metrics_label){"worker", wname[i]};
		bool none = s[i].worker < 0 || s[i].lease_ms == 0 ||
			    s[i].lease_ms + src->epoch_ms < now;
		fw_metrics_u64(w, l, 2, none ? 1 : 0);
	}
	fw_metrics_family(w, "flakewire_fleet_lease_length_seconds", FW_METRICS_GAUGE,
			  "Lease length ([fleet] lease_ms)");
	fw_metrics_f64(w, NULL, 0, (double)src->lease_len_ms / 1000.0);
	fw_metrics_family(w, "flakewire_fleet_connected", FW_METRICS_GAUGE,
			  "1 while the registry session (ZooKeeper or etcd) is up");
	fw_metrics_u64(w, NULL, 0, st.connected ? 1 : 0);
	fw_metrics_family(w, "flakewire_fleet_root_ok", FW_METRICS_GAUGE,
			  "0 while the fleet's root is missing, of another generation, or the "
			  "registry went back (restored): claims, takeovers and renewals stop "
			  "until 'flakectl fleet fence'");
	fw_metrics_u64(w, NULL, 0, st.root_stopped ? 0 : 1);
	fw_metrics_family(
		w, "flakewire_fleet_started_from_cache", FW_METRICS_GAUGE,
		"1 when the leases came from the cache file (the registry down at start)");
	fw_metrics_u64(w, NULL, 0, st.started_from_cache ? 1 : 0);
	if (st.offset_valid) {
		fw_metrics_family(w, "flakewire_fleet_clock_offset_seconds", FW_METRICS_GAUGE,
				  "Local clock minus ZooKeeper's (a znode mtime) at the last "
				  "renewal");
		fw_metrics_f64(w, NULL, 0, (double)st.offset_ms / 1000.0);
	}
	if (st.census_valid) {
		fw_metrics_family(w, "flakewire_fleet_worker_ids", FW_METRICS_GAUGE,
				  "Worker IDs a claim of the fleet's root may take (2^worker_bits, "
				  "less those "
				  "reserved for static nodes)");
		fw_metrics_u64(w, NULL, 0, st.total_ids);
		fw_metrics_family(w, "flakewire_fleet_free_worker_ids", FW_METRICS_GAUGE,
				  "Worker IDs of the fleet's root a claim can take now (never "
				  "claimed, released or expired), at the last census");
		fw_metrics_u64(w, NULL, 0, st.free_ids);
		fw_metrics_family(w, "flakewire_fleet_stranded_worker_ids", FW_METRICS_GAUGE,
				  "Worker IDs leased to owners with no live session (a crash "
				  "nothing proved): back when their leases end");
		fw_metrics_u64(w, NULL, 0, st.stranded_ids);
		fw_metrics_family(w, "flakewire_fleet_next_stranded_return_timestamp_seconds",
				  FW_METRICS_GAUGE,
				  "Unix time the first stranded worker ID's lease ends (0: none "
				  "stranded)");
		fw_metrics_f64(w, NULL, 0, (double)st.next_stranded_unix / 1000.0);
		fw_metrics_family(w, "flakewire_fleet_census_timestamp_seconds", FW_METRICS_GAUGE,
				  "Unix time the census these figures come from was taken (by "
				  "any node of the root: they share one)");
		fw_metrics_f64(w, NULL, 0, (double)st.census_unix / 1000.0);
	}
	fw_metrics_family(w, "flakewire_fleet_last_renewal_timestamp_seconds", FW_METRICS_GAUGE,
			  "Unix time of the last successful renewal round (0: none yet)");
	fw_metrics_f64(w, NULL, 0, (double)st.last_renew_unix / 1000.0);

#define COUNTER(name, help, field)                                    \
	do {                                                          \
		fw_metrics_family(w, name, FW_METRICS_COUNTER, help); \
		fw_metrics_u64(w, NULL, 0, st.field);                 \
	} while (0)
	COUNTER("flakewire_fleet_renewals_total", "Worker-ID leases renewed in the registry",
		renewals);
	COUNTER("flakewire_fleet_renewal_failures_total", "Renewal rounds that failed",
		renew_failures);
	COUNTER("flakewire_fleet_claims_total", "Worker IDs claimed (new or free)", claims);
	COUNTER("flakewire_fleet_takebacks_total", "Worker IDs taken back by identity", takebacks);
	COUNTER("flakewire_fleet_takeovers_total", "Expired worker IDs taken over", takeovers);
	COUNTER("flakewire_fleet_leases_lost_total",
		"Worker IDs another node took over while this one held them", lost);
	COUNTER("flakewire_fleet_releases_total", "Worker IDs retired or released", releases);
	COUNTER("flakewire_fleet_censuses_total",
		"Censuses of the root this node counted itself (read every worker record), "
		"not read from the one the root's nodes share",
		censuses);
#undef COUNTER
}

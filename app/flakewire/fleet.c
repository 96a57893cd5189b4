/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire in a fleet: worker IDs claimed through ZooKeeper. The shared
 * glue (lib/fleet/fw_fleet_app.h) claims before the lcores are set up and
 * runs on the control thread each keeper tick; lcores see worker swaps and
 * leases only in their keeper slot, once per burst (nothing changes on the
 * per-packet path). Telemetry: /flakewire/fleet.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "app.h"
#include "fleet.h"
#include "log.h"
#include "fw_err.h"

#ifdef FW_HAVE_FLEET
#include "fw_responder_fleet.h"
#include "fw_state_lock.h"

static struct fw_app *fleet_app;

static void log_cb(void *arg, enum fw_fleet_level lvl, const char *msg)
{
	(void)arg;
	if (lvl == FW_FLEET_ERR)
		FW_LOG(ERR, "%s", msg);
	else if (lvl == FW_FLEET_WARN)
		FW_LOG(WARNING, "%s", msg);
	else
		FW_LOG(INFO, "%s", msg);
}

static int cmd_fleet(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fw_fleet_status st;
	char buf[32];
	(void)cmd, (void)params;
	rte_tel_data_start_dict(d);
	if (fleet_app == NULL || fleet_app->fleet == NULL) {
		rte_tel_data_add_dict_u64(d, "enabled", 0);
		return 0;
	}
	struct fw_fleet *reg = fw_fleet_app_registry(fleet_app->fleet);
	fw_fleet_status(reg, &st);
	rte_tel_data_add_dict_u64(d, "enabled", 1);
	rte_tel_data_add_dict_string(d, "root", fleet_app->conf.fleet.root);
	rte_tel_data_add_dict_u64(d, "connected", st.connected);
	rte_tel_data_add_dict_u64(d, "started_from_cache", st.started_from_cache);
	rte_tel_data_add_dict_u64(d, "last_renew_unix_ms", st.last_renew_unix);
	rte_tel_data_add_dict_u64(d, "offset_valid", st.offset_valid);
	rte_tel_data_add_dict_string(d, "offset_ms",
				     (snprintf(buf, sizeof(buf), "%" PRId64, st.offset_ms), buf));
	rte_tel_data_add_dict_u64(d, "offset_over", st.offset_over);
	rte_tel_data_add_dict_u64(d, "renewals", st.renewals);
	rte_tel_data_add_dict_u64(d, "renew_failures", st.renew_failures);
	rte_tel_data_add_dict_u64(d, "claims", st.claims);
	rte_tel_data_add_dict_u64(d, "takebacks", st.takebacks);
	rte_tel_data_add_dict_u64(d, "takeovers", st.takeovers);
	rte_tel_data_add_dict_u64(d, "lost", st.lost);
	rte_tel_data_add_dict_u64(d, "releases", st.releases);
	/* per worker lcore: "wN" = worker ID (-1: none), "leaseN" = lease_until unix ms */
	for (uint32_t i = 0; i < fleet_app->n_lcores && i < 64; i++) {
		struct fw_fleet_slot s;
		char k[32];
		fw_fleet_slot(reg, i, &s);
		snprintf(k, sizeof(k), "w%u", i);
		rte_tel_data_add_dict_int(d, k, s.worker);
		snprintf(k, sizeof(k), "lease%u_unix_ms", i);
		rte_tel_data_add_dict_u64(
			d, k, s.worker < 0 ? 0 : s.lease_ms + fleet_app->layout.epoch_ms);
	}
	return 0;
}

int fw_fleet_wire_start(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	struct fw_layout layout;
	char err[4096];
	if (!fw_conf_fleet_on(c))
		return 0;
	/* before fw_lcores_init, which sets app->layout the same way */
	int rc = fw_layout_init(&layout, c->id.epoch_ms, c->id.datacenter_bits, c->id.worker_bits,
				c->id.sequence_bits, fw_keeper_realtime_ns() / 1000000);
	if (rc != 0) {
		FW_LOG(ERR, "config: [id] layout: %s", fw_strerror(rc));
		return -1;
	}
	/*
	 * The registry's thread and the ZooKeeper client's threads inherit the
	 * creating thread's affinity: this (main) thread is pinned to the main
	 * lcore, which busy-polls. Let them run on any CPU, as the control
	 * thread does.
	 */
	cpu_set_t saved, any;
	bool restore = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	CPU_ZERO(&any);
	for (long i = 0; i < ncpu && i < CPU_SETSIZE; i++)
		CPU_SET((int)i, &any);
	pthread_setaffinity_np(pthread_self(), sizeof(any), &any);
	rc = fw_responder_fleet_start(c, &layout, rte_lcore_count(), fw_state_lock_stamp(app->lock),
				log_cb, NULL, &app->fleet, err, sizeof(err));
	if (restore)
		pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (rc != 0) {
		FW_LOG(ERR, "%s", err);
		FW_LOG(ERR, "refusing to start (%s)", fw_strerror(rc));
		return -1;
	}
	fleet_app = app;
	if (app->fleet != NULL)
		app->worker_of = fw_fleet_wire_worker;
	if (rte_telemetry_register_cmd(
		    "/flakewire/fleet", cmd_fleet,
		    "flakewire fleet: ZooKeeper session, leases per lcore, clock "
		    "offset to ZooKeeper. No parameters")) {
		FW_LOG(ERR, "cannot register /flakewire/fleet");
		return -1;
	}
	return 0;
}

int64_t fw_fleet_wire_worker(const struct fw_app *app, uint32_t i)
{
	if (app->fleet != NULL)
		return fw_fleet_app_worker(app->fleet, i);
	return fw_conf_worker(&app->conf, i);
}

void fw_fleet_wire_attach(struct fw_app *app)
{
	if (app->fleet != NULL)
		fw_fleet_app_attach(app->fleet, app->keeper);
}

void fw_fleet_wire_tick(struct fw_app *app, uint32_t events, uint64_t tsc, uint64_t wall_ns)
{
	if (app->fleet == NULL)
		return;
	fw_fleet_app_tick(app->fleet, app->keeper, events, tsc, wall_ns);
	/* telemetry's per-lcore worker IDs follow the swaps */
	for (uint32_t i = 0; i < app->n_lcores; i++)
		app->lcore[i].worker_id = fw_fleet_app_worker(app->fleet, i);
}

void fw_fleet_wire_stop(struct fw_app *app)
{
	fw_fleet_app_free(app->fleet);
	app->fleet = NULL;
}

#else /* built without libzookeeper-mt-dev */
#include "fw_fleet_none.h"

int fw_fleet_wire_start(struct fw_app *app)
{
	char msg[256];

	if (fw_fleet_none_check(app->conf.fleet.zookeeper, app->conf.fleet.etcd, "flakewire", msg,
				sizeof(msg))) {
		FW_LOG(ERR, "%s", msg);
		return -1;
	}
	return 0;
}

int64_t fw_fleet_wire_worker(const struct fw_app *app, uint32_t i)
{
	return fw_conf_worker(&app->conf, i);
}

void fw_fleet_wire_attach(struct fw_app *app)
{
	(void)app;
}

void fw_fleet_wire_tick(struct fw_app *app, uint32_t events, uint64_t tsc, uint64_t wall_ns)
{
	(void)app, (void)events, (void)tsc, (void)wall_ns;
}

void fw_fleet_wire_stop(struct fw_app *app)
{
	(void)app;
}
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire's side of the responder core (lib/responder, fw_responder.h):
 * the core claims the worker IDs ([fleet]), drives the keeper and serves
 * /metrics; this file gives it the TSC as the tick source, the lcores, the
 * log (the flakewire log type), the stats line, the per-lcore families and
 * drop reasons of the packet path, and the DPDK threads: the control thread
 * runs the keeper's tick loop, and /metrics' server starts from a control
 * thread so it never runs on a worker lcore's CPU. Telemetry: /flakewire/fleet.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_telemetry.h>
#include <rte_thread.h>

#include "app.h"
#include "fw_err.h"
#include "fw_metrics_serve.h"
#include "fw_state_lock.h"
#include "log.h"
#include "responder.h"
#include "stats.h"
#include "telemetry.h"
#ifdef FW_HAVE_FLEET
#include "fw_fleet_app.h"
#include "fw_time.h"
#endif

/* The control thread's state (one flakewire per process). */
static struct {
	pthread_t thread;
	bool started;
	struct fwire_stats_line line; /* the totals at the last stats line */
} ctl;

static void log_line(void *arg, enum fw_log_level level, const char *line)
{
	(void)arg;
	switch (level) {
	case FW_LOG_ERR:
		FW_LOG(ERR, "%s", line);
		break;
	case FW_LOG_WARNING:
		FW_LOG(WARNING, "%s", line);
		break;
	default:
		FW_LOG(INFO, "%s", line);
		break;
	}
}

/* The keeper's samples: rte_rdtsc_precise (the lcores read rte_rdtsc). */
static uint64_t tsc_ticks_precise(void)
{
	return rte_rdtsc_precise();
}

static bool should_stop(void *arg)
{
	const struct fwire_app *app = arg;

	return *app->quit;
}

static bool serving(void *arg)
{
	const struct fwire_app *app = arg;

	return app->serving;
}

static void worker(void *arg, uint32_t i, struct fw_responder_worker *w)
{
	struct fwire_app *app = arg;
	struct fwire_lcore *lc = &app->lcore[i];

	*w = (struct fw_responder_worker){
		.key = lc->lcore_id, .slot = lc->kw.slot, .serve = &lc->serve};
}

/* telemetry's per-lcore worker IDs follow the fleet's swaps */
static void on_tick(void *arg)
{
	struct fwire_app *app = arg;

	if (!fw_responder_has_fleet(app->core))
		return;
	for (uint32_t i = 0; i < app->n_lcores; i++)
		app->lcore[i].worker_id = (uint32_t)fw_responder_worker(app->core, i);
}

static void stats(void *arg, double interval_s)
{
	fwire_stats_line(arg, &ctl.line, interval_s);
}

/*
 * The packet path's reasons; FW_DROP_WIRE is the sum of lib/serve's, which the core writes.
 * Every reason but wire, plus tx_full: FW_DROP_COUNT of them, all exported (the core took
 * 16 while there were 21: martian_multicast .. martian_mac and tx_full never reached /metrics).
 */
_Static_assert(FW_DROP_COUNT <= FW_RESPONDER_DROPS_MAX, "/metrics must export every reason");
static uint32_t drops(void *arg, uint32_t i, struct fw_responder_drop *out, uint32_t cap)
{
	const struct fwire_app *app = arg;
	struct fwire_lcore_stats st;
	uint32_t n = 0;

	fwire_stats_lcore(&app->lcore[i], &st);
	for (int d = 0; d < FW_DROP_COUNT && n < cap; d++)
		if (d != FW_DROP_WIRE)
			out[n++] = (struct fw_responder_drop){fwire_drop_names[d], st.drop[d]};
	if (n < cap)
		out[n++] = (struct fw_responder_drop){"tx_full", st.tx_dropped};
	return n;
}

static void collect(void *arg, struct fw_metrics_writer *w, const struct fw_metrics_worker *wk,
		    uint32_t n)
{
	const struct fwire_app *app = arg;
	static struct fwire_lcore_stats st[RTE_MAX_LCORE]; /* one scrape at a time (the lock) */

	for (uint32_t i = 0; i < n; i++)
		fwire_stats_lcore(&app->lcore[i], &st[i]);
#define PER_LCORE(name, help, field)                                     \
	do {                                                             \
		fw_metrics_family(w, name, FW_METRICS_COUNTER, help);    \
		for (uint32_t i = 0; i < n; i++)                         \
			fw_metrics_u64(w, wk[i].labels, 2, st[i].field); \
	} while (0)
	PER_LCORE("flakewire_rx_frames_total", "Frames received", rx);
	PER_LCORE("flakewire_tx_frames_total", "Frames sent", tx);
	PER_LCORE("flakewire_arp_replies_total", "ARP replies sent", arp);
	PER_LCORE("flakewire_icmp_replies_total", "ICMP echo replies sent", icmp);
	PER_LCORE("flakewire_rate_limited_total",
		  "Requests over [net] rate (dropped or answered RETRY_AFTER)", rate_limited);
	PER_LCORE("flakewire_rate_slipped_total",
		  "Rate-limited requests answered RETRY_AFTER instead of dropped", slipped);
#undef PER_LCORE
	if (app->pool) {
		fw_metrics_family(w, "flakewire_mbufs_in_use", FW_METRICS_GAUGE,
				  "Packet buffers out of the pool (flat when nothing leaks)");
		fw_metrics_u64(w, NULL, 0, rte_mempool_in_use_count(app->pool));
	}
}

struct on_thread {
	int (*fn)(void *);
	void *arg;
};

static void *thread_body(void *arg)
{
	struct on_thread *t = arg;

	return (void *)(intptr_t)t->fn(t->arg);
}

/* a control thread runs @fn: what it starts inherits the control CPUs */
static int call_on_thread(void *arg, int (*fn)(void *), void *fn_arg)
{
	struct on_thread t = {fn, fn_arg};
	pthread_t th;
	void *ret;

	(void)arg;
	if (rte_ctrl_thread_create(&th, "fw-metrics", NULL, thread_body, &t) ||
	    pthread_join(th, &ret))
		return -EAGAIN;
	return (int)(intptr_t)ret;
}

#ifdef FW_HAVE_FLEET
static struct fwire_app *fleet_app; /* for the telemetry callback */

#define FLEET_TEL_HELP                                                       \
	"flakewire fleet: registry session (ZooKeeper or etcd), leases per " \
	"lcore, clock offset (ZooKeeper). No parameters"
/* a longer help makes the registration fail, and flakewire refuse to start */
_Static_assert(sizeof(FLEET_TEL_HELP) <= RTE_TEL_MAX_STRING_LEN, "/flakewire/fleet help too long");

static int cmd_fleet(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fw_fleet_status st;
	char buf[32];
	(void)cmd, (void)params;
	rte_tel_data_start_dict(d);
	if (fleet_app == NULL || !fw_responder_has_fleet(fleet_app->core)) {
		rte_tel_data_add_dict_u64(d, "enabled", 0);
		return 0;
	}
	struct fw_fleet *reg = fw_fleet_app_registry(fw_responder_fleet(fleet_app->core));
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
#endif

int fwire_responder_create(struct fwire_app *app)
{
	const struct fw_conf *c = &app->conf;
	struct fw_responder_config rc = {
		.conf = c,
		.name = "flakewire",
		.n_workers = rte_lcore_count(),
		.worker_label = "lcore",
		.workers_help = "Worker lcores (worker IDs)",
		.drops_help = "Frames or requests dropped without a reply, by reason (tx_full: "
			      "replies the TX queue did not take)",
		.state_stamp = fw_state_lock_stamp(app->lock),
		.ticks_name = "TSC",
		.pause_holds = "lcores, telemetry and control",
		.ops =
			{
				.arg = app,
				.ticks = tsc_ticks_precise,
				.log = {log_line, NULL},
				.should_stop = should_stop,
				.worker = worker,
				.serving = serving,
				.on_tick = on_tick,
				.stats = stats,
				.drops = drops,
				.collect = collect,
				.call_on_thread = call_on_thread,
			},
	};
	/* before fwire_lcores_init, which sets app->layout the same way */
	int rc_l = fw_layout_init(&rc.layout, c->id.epoch_ms, c->id.datacenter_bits,
				  c->id.worker_bits, c->id.sequence_bits, fw_wall_ns() / 1000000);
	if (rc_l != 0) {
		FW_LOG(ERR, "%s: %s", fw_conf_fleet_on(c) ? "config: [id] layout" : "ID layout",
		       fw_strerror(rc_l));
		return -1;
	}
	/*
	 * The registry's thread and the store client's threads inherit the
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
	int rc_c = fw_responder_create(&rc, &app->core);
	if (restore)
		pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (rc_c != 0)
		return -1; /* logged */
#ifdef FW_HAVE_FLEET
	fleet_app = app;
	if (fwire_telemetry_register_cmd("/flakewire/fleet", cmd_fleet, FLEET_TEL_HELP))
		return -1; /* logged */
#endif
	return 0;
}

int fwire_responder_start_keeper(struct fwire_app *app)
{
	if (fw_responder_keeper_start(app->core))
		return -1; /* logged */
	app->keeper = fw_responder_keeper(app->core);
	struct fw_keeper_status st;
	fw_keeper_status(app->keeper, &st);
	double hz = fw_clock_hz(&st.cal);
	double nominal = (double)rte_get_tsc_hz();
	FW_LOG(INFO,
	       "clock: TSC %.0f Hz measured over %u ms against CLOCK_REALTIME; "
	       "rte_get_tsc_hz() %.0f Hz is %+.0f ppm off",
	       hz, app->conf.clock.calibrate_ms, nominal, (nominal - hz) / hz * 1e6);
	struct fw_keeper_slot *slots = fw_keeper_slots(app->keeper, NULL);
	for (uint32_t i = 0; i < app->n_lcores; i++)
		fw_keeper_worker_init(&app->lcore[i].kw, &slots[i], &app->lcore[i].serve.gen);
	return 0;
}

static void *control_main(void *arg)
{
	fw_responder_run(arg);
	return NULL;
}

int fwire_responder_start_control(struct fwire_app *app)
{
	int rc = rte_ctrl_thread_create(&ctl.thread, "fw-control", NULL, control_main, app->core);
	if (rc) {
		FW_LOG(ERR, "cannot start the control thread: %s", strerror(rc));
		return -1;
	}
	ctl.started = true;
	return 0;
}

int fwire_responder_stop_control(struct fwire_app *app)
{
	if (ctl.started)
		pthread_join(ctl.thread, NULL);
	ctl.started = false;
	/* the keeper stays allocated: telemetry may read its slots until EAL cleanup */
	if (app->core && app->keeper)
		return fw_responder_keeper_stop(app->core); /* a failure is logged by the keeper */
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire's Prometheus /metrics ([metrics] listen): the per-lcore counters
 * (read through fw_stats_lcore, as telemetry does), the clock and the mark.
 * libmicrohttpd's thread is started from a DPDK control thread so that it
 * inherits the control CPUs and never runs on a worker lcore's CPU.
 * Families shared with flakesock are in lib/metrics/fw_metrics_serve.h.
 */
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_thread.h>

#include "app.h"
#include "clock_pub.h"
#include "log.h"
#include "stats.h"
#include "fw_err.h"
#include "fw_metrics_serve.h"
#include "fw_version.h"
#include "metrics.h"
#ifdef FW_HAVE_FLEET
#include "fw_fleet_app.h"
#include "fw_metrics_fleet.h"
#endif

static struct fw_metrics *registry;
static struct fw_metrics_server *server;
static double start_s;
#ifdef FW_HAVE_FLEET
static struct fw_metrics_fleet_src fleet_src; /* written before its collector is added */
#endif

/* Every lcore's labels and state (fw_keeper_worker_state). */
static void worker_states(struct fw_app *app, struct fw_metrics_worker *wk,
			  struct fw_metrics_worker_names *names, enum fw_keeper_wstate *st)
{
	for (uint32_t i = 0; i < app->n_lcores; i++) {
		const struct fw_lcore *lc = &app->lcore[i];
		fw_metrics_worker_fill(&wk[i], &names[i], "lcore", lc->lcore_id, lc->kw.slot,
				       &lc->serve, app->layout.epoch_ms);
		st[i] = app->keeper ? fw_keeper_worker_state(app->keeper, i,
							     app->conf.id.max_backstep_ms)
				    : FW_KEEPER_W_WAITING;
	}
}

/* /healthz and /readyz (lib/metrics: fw_metrics_probe_answer says what they answer). */
static bool probe(void *arg, bool ready, char *body, size_t cap)
{
	struct fw_app *app = arg;
	static struct fw_metrics_worker wk[RTE_MAX_LCORE]; /* the server's thread only */
	static struct fw_metrics_worker_names names[RTE_MAX_LCORE];
	static enum fw_keeper_wstate st[RTE_MAX_LCORE];
	bool serving = app->serving && app->keeper && !*app->quit;
	if (serving)
		worker_states(app, wk, names, st);
	return fw_metrics_probe_answer(ready, serving, wk, st, serving ? app->n_lcores : 0, body,
				       cap);
}

static void collect(struct fw_metrics_writer *w, void *arg)
{
	struct fw_app *app = arg;
	uint32_t n = app->n_lcores;
	struct fw_metrics_worker wk[RTE_MAX_LCORE];
	struct fw_metrics_worker_names names[RTE_MAX_LCORE];
	struct fw_lcore_stats st[RTE_MAX_LCORE];
	struct fw_metrics_label l[3];

	fw_metrics_write_process(w, FW_VERSION, "flakewire", start_s, n,
				 "Worker lcores (worker IDs)");

	static enum fw_keeper_wstate wst[RTE_MAX_LCORE]; /* one scrape at a time (the lock) */
	worker_states(app, wk, names, wst);
	for (uint32_t i = 0; i < n; i++)
		fw_stats_lcore(&app->lcore[i], &st[i]);
	fw_metrics_write_workers(w, wk, n);
	fw_metrics_write_states(w, wk, wst, n);

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

	fw_metrics_family(w, "flakewire_drops_total", FW_METRICS_COUNTER,
			  "Frames or requests dropped without a reply, by reason (tx_full: "
			  "replies the TX queue did not take)");
	for (uint32_t i = 0; i < n; i++) {
		memcpy(l, wk[i].labels, 2 * sizeof(l[0]));
		l[2].name = "reason";
		/* FW_DROP_WIRE is the sum of lib/serve's reasons, written below instead */
		for (int d = 0; d < FW_DROP_COUNT; d++) {
			if (d == FW_DROP_WIRE)
				continue;
			l[2].value = fw_drop_names[d];
			fw_metrics_u64(w, l, 3, st[i].drop[d]);
		}
		for (unsigned d = 0; d < FW_SERVE_DROP_COUNT; d++) {
			l[2].value = fw_metrics_serve_drop_name(d);
			fw_metrics_u64(w, l, 3, app->lcore[i].serve.stats.drops[d]);
		}
		l[2].value = "tx_full";
		fw_metrics_u64(w, l, 3, st[i].tx_dropped);
	}

	struct fw_keeper_snap s; /* the seqlock snapshot the lcores read */
	if (!app->keeper)
		return;
	fw_keeper_read(&fw_keeper_slots(app->keeper, NULL)[0], &s);
	struct fw_keeper_status ks;
	fw_keeper_status(app->keeper, &ks);
	fw_metrics_write_clock(w, &s, ks.clock_events);

	struct fw_metrics_mark mk = {
		.mark_unix_ms = s.mark_ms + app->layout.epoch_ms,
		.now_unix_ms = (double)fw_realtime_ns() / 1e6,
		.failing = ks.mark_failing,
		.failures = ks.mark_failures,
		.writes = ks.mark_writes,
	};
	fw_metrics_write_mark(w, &mk);

	if (app->pool) {
		fw_metrics_family(w, "flakewire_mbufs_in_use", FW_METRICS_GAUGE,
				  "Packet buffers out of the pool (flat when nothing leaks)");
		fw_metrics_u64(w, NULL, 0, rte_mempool_in_use_count(app->pool));
	}
}

static void *start_server(void *arg)
{
	struct fw_app *app = arg;
	return (void *)(intptr_t)fw_metrics_serve(registry, app->conf.metrics.listen, &server);
}

int fw_app_metrics_start(struct fw_app *app)
{
	const char *listen = app->conf.metrics.listen;
	char addr[sizeof(struct sockaddr_in6)];
	size_t len;
	pthread_t t;
	void *ret;

	if (!listen[0])
		return 0;
	if (fw_metrics_parse_listen(listen, addr, sizeof(addr), &len)) {
		FW_LOG(ERR,
		       "config: [metrics] listen = %s: not ADDR:PORT (127.0.0.1:9842, [::1]:9842)",
		       listen);
		return -1;
	}
	start_s = (double)fw_realtime_ns() / 1e9;
	registry = fw_metrics_create();
	if (!registry || fw_metrics_add_collector(registry, collect, app))
		goto fail;
	fw_metrics_set_probe(registry, probe, app);
#ifdef FW_HAVE_FLEET
	/* [fleet]: lease families, read from the registry under its mutex
	 * (lib/metrics/fleet); the server stops before fw_fleet_wire_stop */
	if (app->fleet) {
		fleet_src = (struct fw_metrics_fleet_src){
			.reg = fw_fleet_app_registry(app->fleet),
			.n_slots = app->n_lcores,
			.epoch_ms = app->layout.epoch_ms,
			.lease_len_ms = app->conf.fleet.lease_ms,
		};
		if (fw_metrics_add_collector(registry, fw_metrics_fleet_collect, &fleet_src))
			goto fail;
	}
#endif
	/* a control thread starts the server: its thread inherits the control CPUs */
	if (rte_ctrl_thread_create(&t, "fw-metrics", NULL, start_server, app) ||
	    pthread_join(t, &ret))
		goto fail;
	if ((intptr_t)ret) {
		FW_LOG(ERR, "metrics: cannot serve on %s ([metrics] listen): %s", listen,
		       strerror(-(int)(intptr_t)ret));
		goto fail;
	}
	FW_LOG(INFO, "metrics: http://%s/metrics, probes /healthz /readyz%s", listen,
	       fw_metrics_listen_is_loopback(listen)
		       ? ""
		       : " (not loopback: reachable from the network)");
	return 0;
fail:
	fw_metrics_free(registry);
	registry = NULL;
	return -1;
}

void fw_app_metrics_stop(struct fw_app *app)
{
	(void)app;
	fw_metrics_server_stop(server);
	server = NULL;
	fw_metrics_free(registry);
	registry = NULL;
}

struct fw_metrics *fw_app_metrics_registry(void)
{
	return registry;
}

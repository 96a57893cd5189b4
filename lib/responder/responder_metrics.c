/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /metrics and the probes of both responders ([metrics] listen): the
 * families of lib/metrics/fw_metrics_serve.h labelled by worker (lcore or
 * thread), the drops by reason (the responder's own reasons, then lib/serve's),
 * the timekeeper's clock and mark and, with [fleet], the lease families
 * (lib/fleet, fw_metrics_fleet.h); then the responder's own families
 * (ops.collect). One dashboard and one set of alert rules cover both.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "fw_metrics_serve.h"
#include "fw_version.h"
#include "responder_impl.h"
#ifdef FW_RESPONDER_FLEET
#include "fw_fleet_app.h"
#include "fw_metrics_fleet.h"
#endif

/* Every worker's labels and state (fw_keeper_worker_state). */
static void worker_states(struct fw_responder *r, struct fw_metrics_worker *wk,
			  struct fw_metrics_worker_names *names, enum fw_keeper_wstate *st)
{
	for (uint32_t i = 0; i < r->cfg.n_workers; i++) {
		struct fw_responder_worker w;
		r->cfg.ops.worker(r->cfg.ops.arg, i, &w);
		fw_metrics_worker_fill(&wk[i], &names[i], r->cfg.worker_label, w.key, w.slot,
				       w.serve, r->cfg.layout.epoch_ms);
		st[i] = r->keeper ? fw_keeper_worker_state(r->keeper, i,
							   r->cfg.conf->id.max_backstep_ms)
				  : FW_KEEPER_W_WAITING;
	}
}

static bool slots_set(struct fw_responder *r)
{
	return r->keeper && (!r->cfg.ops.slots_set || r->cfg.ops.slots_set(r->cfg.ops.arg));
}

static bool serving(struct fw_responder *r)
{
	bool run = r->cfg.ops.serving ? r->cfg.ops.serving(r->cfg.ops.arg) : true;

	return run && slots_set(r) && !r->cfg.ops.should_stop(r->cfg.ops.arg);
}

/* The server's thread only (one scrape or probe at a time: the registry's lock). */
static struct fw_metrics_worker wk[FW_KEEPER_WORKERS_MAX];
static struct fw_metrics_worker_names names[FW_KEEPER_WORKERS_MAX];
static enum fw_keeper_wstate wst[FW_KEEPER_WORKERS_MAX];

/* /healthz and /readyz (lib/metrics: fw_metrics_probe_answer says what they answer). */
static bool probe(void *arg, bool ready, char *body, size_t cap)
{
	struct fw_responder *r = arg;
	bool on = serving(r);

	if (on)
		worker_states(r, wk, names, wst);
	return fw_metrics_probe_answer(ready, on, wk, wst, on ? r->cfg.n_workers : 0, body, cap);
}

static void write_drops(struct fw_responder *r, struct fw_metrics_writer *w)
{
	struct fw_responder_drop own[FW_RESPONDER_DROPS_MAX];
	struct fw_metrics_label l[3];

	fw_metrics_family(w, "flakewire_drops_total", FW_METRICS_COUNTER, r->cfg.drops_help);
	for (uint32_t i = 0; i < r->cfg.n_workers; i++) {
		struct fw_responder_worker wo;
		uint32_t n = r->cfg.ops.drops ? r->cfg.ops.drops(r->cfg.ops.arg, i, own,
								 FW_RESPONDER_DROPS_MAX)
					      : 0;
		r->cfg.ops.worker(r->cfg.ops.arg, i, &wo);
		memcpy(l, wk[i].labels, 2 * sizeof(l[0]));
		l[2].name = "reason";
		for (uint32_t d = 0; d < n && d < FW_RESPONDER_DROPS_MAX; d++) {
			l[2].value = own[d].reason;
			fw_metrics_u64(w, l, 3, own[d].count);
		}
		for (unsigned d = 0; d < FW_SERVE_DROP_COUNT; d++) {
			l[2].value = fw_metrics_serve_drop_name(d);
			fw_metrics_u64(w, l, 3, wo.serve->stats.drops[d]);
		}
	}
}

static void collect(struct fw_metrics_writer *w, void *arg)
{
	struct fw_responder *r = arg;
	uint32_t n = r->cfg.n_workers;

	fw_metrics_write_process(w, FW_VERSION, r->cfg.name, r->start_s, n, r->cfg.workers_help);
	/* the server may start before the keeper and the workers' slots exist */
	if (!slots_set(r))
		return;
	worker_states(r, wk, names, wst);
	fw_metrics_write_workers(w, wk, n);
	fw_metrics_write_states(w, wk, wst, n);
	write_drops(r, w);

	struct fw_keeper_snap ks; /* the seqlock snapshot every worker reads */
	fw_keeper_read(&fw_keeper_slots(r->keeper, NULL)[0], &ks);
	struct fw_keeper_status st; /* published by the keeper under its own seqlock */
	fw_keeper_status(r->keeper, &st);
	fw_metrics_write_clock(w, &ks, st.clock_events);
	struct fw_metrics_mark mk = {
		.mark_unix_ms = ks.mark_ms + r->cfg.layout.epoch_ms,
		.now_unix_ms = (double)fw_responder_unix_ns(r) / 1e6,
		.failing = st.mark_failing,
		.failures = st.mark_failures,
		.writes = st.mark_writes,
	};
	fw_metrics_write_mark(w, &mk);
	if (r->cfg.ops.collect)
		r->cfg.ops.collect(r->cfg.ops.arg, w, wk, n);
}

static int serve(void *arg)
{
	struct fw_responder *r = arg;

	return fw_metrics_serve(r->registry, r->cfg.conf->metrics.listen, &r->server);
}

FW_API int fw_responder_metrics_start(struct fw_responder *r)
{
	const struct fw_log *log = &r->cfg.ops.log;
	const char *listen = r->cfg.conf->metrics.listen;
	char addr[sizeof(struct sockaddr_in6)];
	size_t len;

	if (!listen[0])
		return 0;
	if (fw_metrics_parse_listen(listen, addr, sizeof(addr), &len)) {
		fw_log(log, FW_LOG_ERR,
		       "config: [metrics] listen = %s: not ADDR:PORT (127.0.0.1:9842, [::1]:9842)",
		       listen);
		return -1;
	}
	r->start_s = (double)fw_responder_unix_ns(r) / 1e9;
	r->registry = fw_metrics_create();
	int rc = r->registry ? fw_metrics_add_collector(r->registry, collect, r) : -ENOMEM;
	if (!rc)
		fw_metrics_set_probe(r->registry, probe, r);
#ifdef FW_RESPONDER_FLEET
	/* [fleet]: lease families, read from the registry under its mutex
	 * (lib/fleet, fw_metrics_fleet.h); the server stops before the fleet */
	static struct fw_metrics_fleet_src fleet_src; /* written before its collector is added */
	if (!rc && r->fleet) {
		fleet_src = (struct fw_metrics_fleet_src){
			.reg = fw_fleet_app_registry(r->fleet),
			.n_slots = r->cfg.n_workers,
			.epoch_ms = r->cfg.layout.epoch_ms,
			.lease_len_ms = r->cfg.conf->fleet.lease_ms,
		};
		r->fleet_src = &fleet_src;
		rc = fw_metrics_add_collector(r->registry, fw_metrics_fleet_collect, &fleet_src);
	}
#endif
	if (!rc)
		rc = r->cfg.ops.call_on_thread ? r->cfg.ops.call_on_thread(r->cfg.ops.arg, serve, r)
					       : serve(r);
	if (rc) {
		fw_log(log, FW_LOG_ERR, "metrics: cannot serve on %s ([metrics] listen): %s",
		       listen, strerror(-rc));
		fw_metrics_free(r->registry);
		r->registry = NULL;
		return -1;
	}
	fw_log(log, FW_LOG_INFO, "metrics: http://%s/metrics, probes /healthz /readyz%s", listen,
	       fw_metrics_listen_is_loopback(listen)
		       ? ""
		       : " (not loopback: reachable from the network)");
	return 0;
}

FW_API void fw_responder_metrics_stop(struct fw_responder *r)
{
	fw_metrics_server_stop(r->server);
	r->server = NULL;
	fw_metrics_free(r->registry);
	r->registry = NULL;
}

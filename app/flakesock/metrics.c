/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock's Prometheus /metrics ([metrics] listen): the same family names
 * as flakewire's (lib/metrics/fw_metrics_serve.h plus drops and the mark),
 * labelled thread/worker, so one dashboard and one set of alert rules cover
 * both responders, including the timekeeper's clock families (lib/keeper,
 * fw_metrics_write_clock) and, with [fleet], the lease families
 * (lib/metrics/fleet).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "flakesock.h"
#include "fw_metrics_serve.h"
#include "fw_version.h"
#ifdef FSOCK_HAVE_FLEET
#include "fw_fleet_app.h"
#include "fw_metrics_fleet.h"
#endif

static struct fw_metrics *registry;
static struct fw_metrics_server *server;
static double start_s;
#ifdef FSOCK_HAVE_FLEET
static struct fw_metrics_fleet_src fleet_src; /* written before its collector is added */

static uint64_t fleet_now_ms(void *arg)
{
	(void)arg;
	return fsock_unix_ms();
}
#endif

/* Every worker's labels and state (fw_keeper_worker_state). */
static void worker_states(struct fsock_ctx *ctx, struct fw_metrics_worker *wk,
			  struct fw_metrics_worker_names *names, enum fw_keeper_wstate *st)
{
	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		struct fsock_worker *t = &ctx->workers[i];
		fw_metrics_worker_fill(&wk[i], &names[i], "thread", i, t->kw.slot, &t->serve,
				       ctx->layout.epoch_ms);
		st[i] = fw_keeper_worker_state(ctx->keeper, i, ctx->conf.id.max_backstep_ms);
	}
}

/* /healthz and /readyz (lib/metrics: fw_metrics_probe_answer says what they answer). */
static bool probe(void *arg, bool ready, char *body, size_t cap)
{
	struct fsock_ctx *ctx = arg;
	struct fw_metrics_worker wk[FSOCK_MAX_WORKERS];
	struct fw_metrics_worker_names names[FSOCK_MAX_WORKERS];
	enum fw_keeper_wstate st[FSOCK_MAX_WORKERS];
	bool serving = atomic_load_explicit(&ctx->running, memory_order_acquire) && !*ctx->stop;
	if (serving)
		worker_states(ctx, wk, names, st);
	return fw_metrics_probe_answer(ready, serving, wk, st, serving ? ctx->n_workers : 0, body,
				       cap);
}

static void collect(struct fw_metrics_writer *w, void *arg)
{
	struct fsock_ctx *ctx = arg;
	uint32_t n = ctx->n_workers;
	struct fw_metrics_worker wk[FSOCK_MAX_WORKERS];
	struct fw_metrics_worker_names names[FSOCK_MAX_WORKERS];
	enum fw_keeper_wstate wst[FSOCK_MAX_WORKERS];
	struct fw_metrics_label l[3];

	fw_metrics_write_process(w, FW_VERSION, "flakesock", start_s, n,
				 "Worker threads (worker IDs)");
	/* the server starts before the keeper and the workers' slots exist */
	if (!atomic_load_explicit(&ctx->running, memory_order_acquire))
		return;

	worker_states(ctx, wk, names, wst);
	fw_metrics_write_workers(w, wk, n);
	fw_metrics_write_states(w, wk, wst, n);

	fw_metrics_family(w, "flakewire_drops_total", FW_METRICS_COUNTER,
			  "Datagrams dropped without a reply, by reason");
	for (uint32_t i = 0; i < n; i++) {
		const struct fsock_worker *t = &ctx->workers[i];
		memcpy(l, wk[i].labels, 2 * sizeof(l[0]));
		l[2].name = "reason";
		l[2].value = "source";
		fw_metrics_u64(w, l, 3, t->drop_source);
		l[2].value = "reflector_port";
		fw_metrics_u64(w, l, 3, t->drop_reflector);
		l[2].value = "martian";
		fw_metrics_u64(w, l, 3, t->drop_martian);
		for (unsigned d = 0; d < FW_SERVE_DROP_COUNT; d++) {
			l[2].value = fw_metrics_serve_drop_name(d);
			fw_metrics_u64(w, l, 3, t->serve.stats.drops[d]);
		}
	}

	struct fw_keeper_snap ks; /* the seqlock snapshot every worker reads */
	fw_keeper_read(&fw_keeper_slots(ctx->keeper, NULL)[0], &ks);
	struct fw_keeper_status st; /* published by the keeper under its own seqlock */
	fw_keeper_status(ctx->keeper, &st);
	fw_metrics_write_clock(w, &ks, st.clock_events);
	struct fw_metrics_mark mk = {
		.mark_unix_ms = ks.mark_ms + ctx->layout.epoch_ms,
		.now_unix_ms = (double)fsock_unix_ms(),
		.failing = st.mark_failing,
		.failures = st.mark_failures,
		.writes = st.mark_writes,
	};
	fw_metrics_write_mark(w, &mk);
}

int fsock_metrics_start(struct fsock_ctx *ctx)
{
	const char *listen = ctx->conf.metrics.listen;
	char addr[sizeof(struct sockaddr_in6)];
	size_t len;

	if (!listen[0])
		return 0;
	if (fw_metrics_parse_listen(listen, addr, sizeof(addr), &len)) {
		fprintf(stderr,
			"flakesock: config: [metrics] listen = %s: not ADDR:PORT (127.0.0.1:9842, "
			"[::1]:9842)\n",
			listen);
		return -1;
	}
	start_s = (double)fsock_unix_ms() / 1000.0;
	registry = fw_metrics_create();
	int rc = registry ? fw_metrics_add_collector(registry, collect, ctx) : -ENOMEM;
	if (!rc)
		fw_metrics_set_probe(registry, probe, ctx);
#ifdef FSOCK_HAVE_FLEET
	/* [fleet]: lease families, read from the registry under its mutex
	 * (lib/metrics/fleet); the server stops before fsock_fleet_stop */
	if (!rc && ctx->fleet) {
		fleet_src = (struct fw_metrics_fleet_src){
			.reg = fw_fleet_app_registry(ctx->fleet),
			.n_slots = ctx->n_workers,
			.epoch_ms = ctx->layout.epoch_ms,
			.lease_len_ms = ctx->conf.fleet.lease_ms,
			.now_ms = fleet_now_ms,
		};
		rc = fw_metrics_add_collector(registry, fw_metrics_fleet_collect, &fleet_src);
	}
#endif
	if (!rc)
		rc = fw_metrics_serve(registry, listen, &server);
	if (rc) {
		fprintf(stderr, "flakesock: metrics: cannot serve on %s ([metrics] listen): %s\n",
			listen, strerror(-rc));
		fw_metrics_free(registry);
		registry = NULL;
		return -1;
	}
	fprintf(stderr, "flakesock: metrics: http://%s/metrics, probes /healthz /readyz%s\n",
		listen,
		fw_metrics_listen_is_loopback(listen)
			? ""
			: " (not loopback: reachable from the network)");
	return 0;
}

void fsock_metrics_stop(void)
{
	fw_metrics_server_stop(server);
	server = NULL;
	fw_metrics_free(registry);
	registry = NULL;
}

struct fw_metrics *fsock_metrics_registry(void)
{
	return registry;
}

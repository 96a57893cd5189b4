/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-lcore state and the burst loop. */
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_random.h>

#include "fw_app.h"
#include "fw_err.h"
#include "fw_keeper_serve.h"
#include "power.h"

/* Prefixes each lcore's rate limiter holds (4096 x 16 bytes = 64 KiB). */
#define FW_RATE_ENTRIES 4096

void fw_lcores_rate_share(uint32_t rate, uint32_t burst, uint32_t n_lcores, uint32_t *lc_rate,
			  uint32_t *lc_burst)
{
	uint32_t n = n_lcores ? n_lcores : 1;

	/* rounded up and at least 1: 0 would mean "no limit" */
	*lc_rate = rate ? (uint32_t)(((uint64_t)rate + n - 1) / n) : 0;
	*lc_burst = (uint32_t)(((uint64_t)burst + n - 1) / n);
	if (*lc_burst == 0)
		*lc_burst = 1;
}

int fw_lcores_policy_init(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	struct fw_policy_prefix allow[FW_POLICY_PREFIXES_MAX];
	uint16_t ports[FW_CONF_LIST_MAX];

	RTE_BUILD_BUG_ON(FW_CONF_CIDRS_MAX > FW_POLICY_PREFIXES_MAX);
	for (uint32_t i = 0; i < c->net.allow.n; i++) {
		allow[i].addr = c->net.allow.v[i].addr;
		allow[i].mask = c->net.allow.v[i].mask;
	}
	for (uint32_t i = 0; i < c->net.reflector_ports.n; i++)
		ports[i] = (uint16_t)c->net.reflector_ports.v[i];
	if (fw_policy_init(&app->srcpol, allow, c->net.allow.n, ports, c->net.reflector_ports.n) ||
	    (fw_pkt6_policy_init && fw_pkt6_policy_init(app)))
		return -1;
	for (uint32_t t = 0; t < c->net.trusted.n; t++)
		if (!fw_policy_allowed(&app->srcpol, c->net.trusted.v[t].addr))
			FW_LOG(WARNING, "[net] trusted prefix %u is outside [net] allow: dropped",
			       t + 1);
	if (c->net.rate == 0) {
		FW_LOG(INFO, "policy: %u allowed prefixes, %u reflector ports, no rate limit",
		       c->net.allow.n, c->net.reflector_ports.n);
		return 0;
	}

	struct fw_rate_config rc;
	fw_rate_config_default(&rc);
	fw_lcores_rate_share(c->net.rate, c->net.rate_burst, app->n_lcores, &rc.rate, &rc.burst);
	rc.prefix_len = c->net.rate_prefix;
	rc.prefix_len6 = c->net.rate_prefix6;
	rc.slip = c->net.rate_slip;
	rc.tsc_hz = rte_get_tsc_hz();
	rc.entries = FW_RATE_ENTRIES;
	size_t size = fw_rate_memsize(&rc);
	for (uint32_t i = 0; i < app->n_lcores; i++) {
		struct fw_lcore *lc = &app->lcore[i];
		void *mem = rte_zmalloc_socket("fw_rate", size, RTE_CACHE_LINE_SIZE,
					       (int)rte_lcore_to_socket_id(lc->lcore_id));
		rc.seed = (uint32_t)rte_rand();
		lc->rate = mem ? fw_rate_init(mem, &rc) : NULL;
		if (!lc->rate) {
			FW_LOG(ERR, "lcore %u: no memory for the rate limiter (%zu bytes)",
			       lc->lcore_id, size);
			rte_free(mem);
			return -1;
		}
	}
	FW_LOG(INFO,
	       "policy: %u allowed prefixes, %u reflector ports, rate %u/s burst %u per /%u "
	       "for the responder: %u/s burst %u on each of %u lcore(s) (slip %u, %u entries "
	       "per lcore)",
	       c->net.allow.n, c->net.reflector_ports.n, c->net.rate, c->net.rate_burst,
	       c->net.rate_prefix, rc.rate, rc.burst, app->n_lcores, c->net.rate_slip,
	       FW_RATE_ENTRIES);
	return 0;
}

int fw_lcores_init(struct fw_app *app)
{
	const struct fw_conf *c = &app->conf;
	struct fw_serve_config scfg;
	unsigned lcore_id;
	int rc;

	rc = fw_layout_init(&app->layout, c->id.epoch_ms, c->id.datacenter_bits, c->id.worker_bits,
			    c->id.sequence_bits, 0);
	if (rc) {
		FW_LOG(ERR, "ID layout: %s", fw_strerror(rc));
		return -1;
	}
	app->n_lcores = rte_lcore_count();
	app->lcore = rte_zmalloc("fw_lcores", sizeof(struct fw_lcore) * app->n_lcores,
				 RTE_CACHE_LINE_SIZE);
	if (!app->lcore)
		return -1;
	for (unsigned i = 0; i < RTE_MAX_LCORE; i++)
		app->lcore_index[i] = -1;

	fw_serve_config_default(&scfg);
	scfg.list_max = (uint16_t)c->net.list_max;
	scfg.ranges_max = (uint16_t)c->net.ranges_max;
	scfg.mark_retry_us = c->id.retry_us;
	scfg.range_ids_max = c->net.max_ids_per_request;

	uint32_t i = 0;
	RTE_LCORE_FOREACH(lcore_id)
	{
		struct fw_lcore *lc = &app->lcore[i];
		struct fw_gen_config gcfg;
		/* a fleet's claimed IDs (fleet.c), or [id]'s */
		int64_t w = app->worker_of ? app->worker_of(app, i) : fw_conf_worker(c, i);

		if (w < 0) {
			FW_LOG(ERR, "[id] workers lists %u worker IDs for %u lcores",
			       c->id.workers.n, app->n_lcores);
			return -1;
		}
		fw_gen_config_default(&gcfg);
		gcfg.datacenter = c->id.datacenter;
		gcfg.worker = (uint32_t)w;
		gcfg.max_borrow_ms = c->id.max_borrow_ms;
		gcfg.max_backstep_ms = c->id.max_backstep_ms;
		rc = fw_serve_init(&lc->serve, &app->layout, &gcfg, &scfg);
		if (rc) {
			FW_LOG(ERR, "lcore %u: worker %u: %s", lcore_id, (unsigned)w,
			       fw_strerror(rc));
			return -1;
		}
		lc->lcore_id = lcore_id;
		lc->index = i;
		lc->queue = (uint16_t)i;
		lc->worker_id = (uint32_t)w;
		app->lcore_index[lcore_id] = (int16_t)i;
		FW_LOG(INFO, "lcore %u%s: queue %u, datacenter %u worker %u", lcore_id,
		       lcore_id == rte_get_main_lcore() ? " (main)" : "", lc->queue,
		       c->id.datacenter, lc->worker_id);
		i++;
	}
	FW_LOG(INFO, "layout: %u time / %u datacenter / %u worker / %u sequence bits, epoch %lu",
	       app->layout.time_bits, app->layout.dc_bits, app->layout.worker_bits,
	       app->layout.seq_bits, (unsigned long)app->layout.epoch_ms);
	return fw_lcores_policy_init(app);
}

uint64_t fw_lcore_clock(struct fw_app *app, struct fw_lcore *lc)
{
	struct fw_keeper_snap snap;

	(void)app;
	lc->tsc = rte_rdtsc();
	return fw_keeper_serve_burst(&lc->kw, &lc->serve, lc->tsc, &snap);
}

static void serve_burst(struct fw_app *app, struct fw_lcore *lc, const struct fw_port *port,
			struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_mbuf *tx[FW_BURST], *fr[FW_BURST];
	uint16_t nfr;
	uint64_t now = fw_lcore_clock(app, lc); /* one clock read for the whole burst */
	uint16_t ntx = fw_pkt_burst(app, lc, port, pkts, n, now, tx, fr, &nfr);

	if (nfr)
		rte_pktmbuf_free_bulk(fr, nfr);
	if (!ntx)
		return;
	uint16_t sent = rte_eth_tx_burst(port->port_id, lc->queue, tx, ntx);
	lc->st.tx += sent;
	if (sent < ntx) {
		lc->st.tx_dropped += ntx - sent;
		rte_pktmbuf_free_bulk(&tx[sent], ntx - sent);
	}
}

void fw_lcore_link_watch(struct fw_app *app, struct fw_lcore *lc)
{
	for (uint32_t p = 0; p < app->n_ports; p++) {
		struct rte_eth_link link;
		uint32_t bit = 1u << p;
		int rc = rte_eth_link_get_nowait(app->port[p].port_id, &link);
		bool down = rc == 0 && link.link_status == RTE_ETH_LINK_DOWN;

		if (down == !!(lc->ports_down & bit))
			continue;
		lc->ports_down ^= bit;
		FW_LOG(INFO, "port%u: link %s: lcore %u %s polling it", p, down ? "down" : "up",
		       lc->lcore_id, down ? "stops" : "resumes");
	}
}

int fw_lcore_main(void *arg)
{
	struct fw_app *app = arg;
	int idx = app->lcore_index[rte_lcore_id()];
	struct rte_mbuf *pkts[FW_BURST];

	if (idx < 0)
		return 0;
	struct fw_lcore *lc = &app->lcore[idx];
	const uint64_t link_every = rte_get_tsc_hz() / 1000 * FW_LINK_CHECK_MS;
	fw_lcore_link_watch(app, lc);
	lc->link_countdown = FW_LINK_CHECK_LOOPS;
	lc->link_next_tsc = rte_rdtsc() + link_every;
	while (!*app->quit) {
		uint16_t busy = 0;
		/* a TSC read every 1024 loops, a link read (maybe a syscall) every 10 ms */
		if (FW_UNLIKELY(--lc->link_countdown == 0)) {
			lc->link_countdown = FW_LINK_CHECK_LOOPS;
			uint64_t now = rte_rdtsc();
			if (now >= lc->link_next_tsc) {
				fw_lcore_link_watch(app, lc);
				lc->link_next_tsc = now + link_every;
			}
		}
		for (uint32_t p = 0; p < app->n_ports; p++) {
			const struct fw_port *port = &app->port[p];
			if (lc->ports_down & (1u << p))
				continue;
			uint16_t n = rte_eth_rx_burst(port->port_id, lc->queue, pkts, FW_BURST);
			if (n) {
				serve_burst(app, lc, port, pkts, n);
				busy += n;
			}
		}
		fw_power_poll(app, lc, busy, app->conf.power.idle);
	}
	return 0;
}

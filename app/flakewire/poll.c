/* SPDX-License-Identifier: BSD-3-Clause */
/* Every EAL lcore as a worker, and the burst loop (the contract is in poll.h). */
#include <pthread.h>
#include <signal.h>
#include <net/if.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "app.h"
#include "fw_err.h"
#include "log.h"
#include "poll.h"
#include "power.h"

int fwire_lcores_init(struct fwire_app *app)
{
	const struct fw_conf *c = &app->conf;
	uint32_t outside = 0, outside6 = 0;
	unsigned lcore_id;
	int rc;

	rc = fw_layout_init(&app->layout, c->id.epoch_ms, c->id.datacenter_bits, c->id.worker_bits,
			    c->id.sequence_bits, 0);
	if (rc) {
		FW_LOG(ERR, "ID layout: %s", fw_strerror(rc));
		return -1;
	}
	if (fwire_pkt_ctx_init(&app->px, c, &outside, &outside6)) {
		FW_LOG(ERR, "[net]: a prefix list is too long");
		return -1;
	}
	for (uint32_t t = 0; t < c->net.trusted.n; t++)
		if (outside & (1u << t))
			FW_LOG(WARNING, "[net] trusted prefix %u is outside [net] allow: dropped",
			       t + 1);
	for (uint32_t t = 0; t < c->net.trusted.n6; t++)
		if (outside6 & (1u << t))
			FW_LOG(WARNING,
			       "[net] trusted IPv6 prefix %u is outside [net] allow: dropped",
			       t + 1);
	FW_LOG(INFO,
	       "policy: %u + %u allowed prefixes (IPv4 + IPv6), %u + %u trusted, %u reflector "
	       "ports%s",
	       c->net.allow.n, c->net.allow.n6, c->net.trusted.n, c->net.trusted.n6,
	       c->net.reflector_ports.n, c->net.rate ? "" : ", no rate limit");

	app->n_lcores = rte_lcore_count();
	app->lcore = rte_zmalloc("fw_lcores", sizeof(struct fwire_lcore) * app->n_lcores,
				 RTE_CACHE_LINE_SIZE);
	if (!app->lcore)
		return -1;
	uint32_t i = 0;
	RTE_LCORE_FOREACH(lcore_id)
	{
		struct fwire_lcore *lc = &app->lcore[i];
		/* a fleet's claimed IDs, or [id]'s (the responder core's) */
		int64_t w = fw_responder_worker(app->core, i);

		if (w < 0) {
			FW_LOG(ERR, "[id] workers lists %u worker IDs for %u lcores",
			       c->id.workers.n, app->n_lcores);
			return -1;
		}
		if (fwire_lcore_init(lc, &app->px, c, &app->layout, i, lcore_id, (uint32_t)w) ||
		    fwire_lcore_rate_init(lc, c, app->n_lcores))
			return -1;
		FW_LOG(INFO, "lcore %u%s: queue %u, datacenter %u worker %u", lcore_id,
		       lcore_id == rte_get_main_lcore() ? " (main)" : "", lc->queue,
		       c->id.datacenter, lc->worker_id);
		i++;
	}
	FW_LOG(INFO, "layout: %u time / %u datacenter / %u worker / %u sequence bits, epoch %lu",
	       app->layout.time_bits, app->layout.dc_bits, app->layout.worker_bits,
	       app->layout.seq_bits, (unsigned long)app->layout.epoch_ms);
	return 0;
}

static void serve_burst(struct fwire_lcore *lc, const struct fwire_port *port,
			struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_mbuf *tx[FW_BURST], *fr[FW_BURST];
	uint16_t nfr;
	uint64_t now = fwire_lcore_clock(lc); /* one clock read for the whole burst */
	uint16_t ntx = fwire_pkt_burst(lc, port, pkts, n, now, tx, fr, &nfr);

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

/*
 * True when @p has a kernel interface that this process no longer sees
 * under the name and index it had at start (moved into another network
 * namespace, or renamed): its "down" may be nothing but a failed read.
 */
static bool link_unreadable(const struct fwire_port *p)
{
	return p->kif_index && if_nametoindex(p->kif_name) != p->kif_index;
}

void fwire_lcore_link_watch(struct fwire_app *app, struct fwire_lcore *lc)
{
	for (uint32_t p = 0; p < app->n_ports; p++) {
		const struct fwire_port *port = &app->port[p];
		struct rte_eth_link link;
		uint32_t bit = 1u << p;
		int rc = rte_eth_link_get_nowait(port->port_id, &link);
		bool down = rc == 0 && link.link_status == RTE_ETH_LINK_DOWN;
		bool unseen = down && link_unreadable(port);

		if (unseen != !!(lc->ports_unseen & bit)) {
			lc->ports_unseen ^= bit;
			if (unseen)
				FW_LOG(INFO,
				       "port%u: interface %s is not in this network namespace "
				       "(moved?): its link cannot be read; lcore %u keeps polling "
				       "it",
				       p, port->kif_name, lc->lcore_id);
			else
				FW_LOG(INFO,
				       "port%u: interface %s is back in this network namespace "
				       "(lcore %u)",
				       p, port->kif_name, lc->lcore_id);
		}
		if (unseen)
			down = false; /* unknown is not down */
		if (down == !!(lc->ports_down & bit))
			continue;
		lc->ports_down ^= bit;
		FW_LOG(INFO, "port%u: link %s: lcore %u %s polling it", p, down ? "down" : "up",
		       lc->lcore_id, down ? "stops" : "resumes");
	}
}

void fwire_lcore_signals(bool on)
{
	sigset_t rt;

	sigemptyset(&rt);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaddset(&rt, s);
	pthread_sigmask(on ? SIG_BLOCK : SIG_UNBLOCK, &rt, NULL);
}

int fwire_lcore_main(void *arg)
{
	struct fwire_app *app = arg;
	struct fwire_lcore *lc = NULL;
	struct rte_mbuf *pkts[FW_BURST];

	fwire_lcore_signals(false); /* this thread reads queues: net_tap's signal is for it */

	for (uint32_t i = 0; i < app->n_lcores; i++)
		if (app->lcore[i].lcore_id == rte_lcore_id())
			lc = &app->lcore[i];
	if (!lc)
		return 0;
	const uint64_t link_every = rte_get_tsc_hz() / 1000 * FW_LINK_CHECK_MS;
	fwire_lcore_link_watch(app, lc);
	lc->link_countdown = FW_LINK_CHECK_LOOPS;
	lc->link_next_tsc = rte_rdtsc() + link_every;
	while (!*app->quit) {
		uint16_t busy = 0;
		/* a TSC read every 1024 loops, a link read (maybe a syscall) every 10 ms */
		if (FW_UNLIKELY(--lc->link_countdown == 0)) {
			lc->link_countdown = FW_LINK_CHECK_LOOPS;
			uint64_t now = rte_rdtsc();
			if (now >= lc->link_next_tsc) {
				fwire_lcore_link_watch(app, lc);
				lc->link_next_tsc = now + link_every;
			}
		}
		for (uint32_t p = 0; p < app->n_ports; p++) {
			const struct fwire_port *port = &app->port[p];
			if (lc->ports_down & (1u << p))
				continue;
			uint16_t n = rte_eth_rx_burst(port->port_id, lc->queue, pkts, FW_BURST);
			if (n) {
				serve_burst(lc, port, pkts, n);
				busy += n;
			}
		}
		fwire_power_poll(app, lc, busy, app->conf.power.idle);
	}
	return 0;
}

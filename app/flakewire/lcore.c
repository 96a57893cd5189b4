/* SPDX-License-Identifier: BSD-3-Clause */
/* One lcore's set-up and its clock read per burst (the contract is in lcore.h). */
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "fw_err.h"
#include "fw_keeper_serve.h"
#include "fw_responder_conf.h"
#include "lcore.h"
#include "log.h"

/* Prefixes each lcore's rate limiter holds (4096 x 16 bytes = 64 KiB). */
#define FW_RATE_ENTRIES 4096

int fwire_lcore_init(struct fwire_lcore *lc, const struct fwire_pkt_ctx *px,
		     const struct fw_conf *c, const struct fw_layout *layout, uint32_t index,
		     uint32_t lcore_id, uint32_t worker)
{
	struct fw_serve_config scfg;
	struct fw_gen_config gcfg;

	fw_serve_config_default(&scfg);
	scfg.list_max = (uint16_t)c->net.list_max;
	scfg.ranges_max = (uint16_t)c->net.ranges_max;
	scfg.mark_retry_us = c->id.retry_us;
	scfg.range_ids_max = c->net.max_ids_per_request;
	fw_gen_config_default(&gcfg);
	gcfg.datacenter = c->id.datacenter;
	gcfg.worker = worker;
	gcfg.max_borrow_ms = c->id.max_borrow_ms;
	gcfg.max_backstep_ms = c->id.max_backstep_ms;
	int rc = fw_serve_init(&lc->serve, layout, &gcfg, &scfg);
	if (rc) {
		FW_LOG(ERR, "lcore %u: worker %u: %s", lcore_id, worker, fw_strerror(rc));
		return -1;
	}
	lc->px = px;
	lc->lcore_id = lcore_id;
	lc->index = index;
	lc->queue = (uint16_t)index;
	lc->worker_id = worker;
	return 0;
}

int fwire_lcore_rate_init(struct fwire_lcore *lc, const struct fw_conf *c, uint32_t n_lcores)
{
	struct fw_rate_config rc;

	if (!fw_responder_rate_config(&rc, c, n_lcores, rte_get_tsc_hz(), FW_RATE_ENTRIES))
		return 0;
	size_t size = fw_rate_memsize(&rc);
	void *mem = rte_zmalloc_socket("fw_rate", size, RTE_CACHE_LINE_SIZE,
				       (int)rte_lcore_to_socket_id(lc->lcore_id));
	rc.seed = (uint32_t)rte_rand();
	lc->rate = mem ? fw_rate_init(mem, &rc) : NULL;
	if (!lc->rate) {
		FW_LOG(ERR, "lcore %u: no memory for the rate limiter (%zu bytes)", lc->lcore_id,
		       size);
		rte_free(mem);
		return -1;
	}
	if (lc->index == 0)
		FW_LOG(INFO,
		       "policy: rate %u/s burst %u per /%u (IPv6 /%u) for the responder: %u/s "
		       "burst %u on each of %u lcore(s) (slip %u, %u entries per lcore)",
		       c->net.rate, c->net.rate_burst, c->net.rate_prefix, c->net.rate_prefix6,
		       rc.rate, rc.burst, n_lcores, c->net.rate_slip, FW_RATE_ENTRIES);
	return 0;
}

void fwire_lcore_rate_free(struct fwire_lcore *lc)
{
	rte_free(lc->rate);
	lc->rate = NULL;
}

uint64_t fwire_lcore_clock(struct fwire_lcore *lc)
{
	struct fw_keeper_snap snap;

	lc->tsc = rte_rdtsc();
	return fw_keeper_serve_burst(&lc->kw, &lc->serve, lc->tsc, &snap);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* A keeper for tools that run the packet path alone (the contract is in lcore.h). */
#include <errno.h>
#include <stdlib.h>

#include <rte_cycles.h>

#include "lcore.h"
#include "fw_time.h"

static int mem_read(void *arg, uint64_t *ms)
{
	(void)arg;
	(void)ms;
	return -ENOENT;
}

static int mem_write(void *arg, uint64_t ms)
{
	(void)arg;
	(void)ms;
	return 0;
}

struct fw_keeper *fwire_lcores_fixed_clock(struct fwire_lcore *lc, uint32_t n, uint64_t epoch_ms,
					   uint64_t ahead_ms)
{
	static const struct fw_keeper_io io = {mem_read, mem_write, NULL};
	struct fw_keeper_config cfg;
	struct fw_keeper *k;
	uint32_t *ids = calloc(n, sizeof(*ids));
	int rc;

	if (!ids)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		ids[i] = lc[i].worker_id;
	fw_keeper_config_default(&cfg);
	cfg.io = &io;
	cfg.mark_ahead_ms = (uint32_t)ahead_ms;
	cfg.epoch_ms = epoch_ms;
	cfg.n_workers = n;
	cfg.worker_ids = ids;
	rc = fw_keeper_create(&cfg, &k);
	free(ids);
	if (rc)
		return NULL;
	/* two samples 100 ms apart at the nominal rate: no waiting */
	uint64_t hz = rte_get_tsc_hz(), t1 = rte_rdtsc(), n1 = fw_wall_ns();
	if (fw_keeper_start(k, t1 - hz / 10, n1 - 100000000u, t1, n1, NULL)) {
		fw_keeper_free(k);
		return NULL;
	}
	struct fw_keeper_slot *slots = fw_keeper_slots(k, NULL);
	for (uint32_t i = 0; i < n; i++)
		fw_keeper_worker_init(&lc[i].kw, &slots[i], &lc[i].serve.gen);
	return k;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What flakewire hands the timekeeper (lib/keeper): the TSC as its tick
 * source and CLOCK_REALTIME (through the test-clock hook) as the system
 * clock; and a fixed keeper for the tools that run the packet path alone.
 */
#include <stdlib.h>
#include <time.h>

#include <rte_cycles.h>

#include "fw_app.h"
#include "fw_err.h"

uint64_t fw_tsc_ticks(void)
{
	return rte_rdtsc();
}

uint64_t fw_tsc_ticks_precise(void)
{
	return rte_rdtsc_precise();
}

uint64_t fw_realtime_ns(void)
{
	return fw_keeper_realtime_ns();
}

uint64_t fw_wall_ns(void)
{
	return fw_testclock_ns(fw_keeper_realtime_ns());
}

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

int fw_clock_fixed(struct fw_app *app, uint64_t ahead_ms)
{
	static const struct fw_keeper_io io = {mem_read, mem_write, NULL};
	struct fw_keeper_config cfg;
	uint32_t *ids = calloc(app->n_lcores, sizeof(*ids));
	int rc;

	if (!ids)
		return -1;
	for (uint32_t i = 0; i < app->n_lcores; i++)
		ids[i] = app->lcore[i].worker_id;
	fw_keeper_config_default(&cfg);
	cfg.io = &io;
	cfg.mark_ahead_ms = (uint32_t)ahead_ms;
	cfg.epoch_ms = app->layout.epoch_ms;
	cfg.n_workers = app->n_lcores;
	cfg.worker_ids = ids;
	rc = fw_keeper_create(&cfg, &app->keeper);
	free(ids);
	if (rc)
		return -1;
	/* two samples 100 ms apart at the nominal rate: no waiting */
	uint64_t hz = rte_get_tsc_hz(), t1 = rte_rdtsc(), n1 = fw_realtime_ns();
	if (fw_keeper_start(app->keeper, t1 - hz / 10, n1 - 100000000u, t1, n1, NULL))
		return -1;
	struct fw_keeper_slot *slots = fw_keeper_slots(app->keeper, NULL);
	for (uint32_t i = 0; i < app->n_lcores; i++)
		fw_keeper_worker_init(&app->lcore[i].kw, &slots[i], &app->lcore[i].serve.gen);
	return 0;
}

/*
 * The test-clock hooks do nothing in flakewire. They are weak so that
 * flakewire-testclock (these objects plus testclock.c) replaces them; no
 * setting or environment variable reaches them in the flakewire binary.
 */
__attribute__((weak)) int fw_testclock_init(struct fw_app *app)
{
	(void)app;
	return 0;
}

__attribute__((weak)) void fw_testclock_poll(struct fw_app *app)
{
	(void)app;
}

__attribute__((weak)) uint64_t fw_testclock_ns(uint64_t ns)
{
	return ns;
}

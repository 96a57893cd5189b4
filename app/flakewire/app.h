/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application: what main.c wires together and several parts read.
 * Each part's functions are in its own header (the map: README.md here);
 * a field owned by one file is private to that file (control.c's thread
 * and stats-line state sit behind struct fw_control). The globals are
 * main.c's force_quit (which app->quit points to) and the log type.
 *
 * Threads: the lcores read conf, layout, px, port[] and their own
 * lcore[i], all fixed once they run; the control thread drives the keeper;
 * telemetry and /metrics read the lcores' counters (plain loads of 64-bit
 * words one writer updates) and the keeper's status, which the keeper
 * publishes under its own seqlock (fw_keeper_status, any thread).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <rte_mempool.h>

#include "fw_conf.h"
#include "fw_keeper.h"
#include "fw_layout.h"
#include "lcore.h"
#include "pkt.h"
#include "port.h"

struct fw_control;
struct fw_fleet_app;

struct fw_app {
	volatile bool *quit;
	volatile bool
		serving; /* the lcores run (set before their launch, cleared after): /healthz */
	struct fw_conf conf;
	struct fw_layout layout;
	struct fw_pkt_ctx px; /* the packet context every lcore answers with */
	struct rte_mempool *pool;
	uint32_t n_ports;
	struct fw_port port[FW_CONF_PORTS_MAX];
	uint32_t n_lcores;
	struct fw_lcore *lcore; /* n_lcores, rte_zmalloc'd */
	/*
	 * The timekeeper (lib/keeper), driven by the control thread (control.c);
	 * lcores read their slot of it once per burst (fw_lcore_clock), the
	 * other threads its status (fw_keeper_status).
	 */
	struct fw_keeper *keeper;
	struct fw_control *control; /* control.c's, NULL before fw_control_start */
	struct fw_fleet_app *fleet; /* [fleet]: worker-ID registry glue (fleet.c), or NULL */
	struct fw_state_lock *lock; /* [state] file (and static worker IDs), held for life */
	/* lcore i's first worker ID when not [id]'s (fleet.c sets it), or NULL */
	int64_t (*worker_of)(const struct fw_app *app, uint32_t i);
};

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application: what main.c wires together and several parts read.
 * Each part's functions are in its own header (the map: README.md here);
 * a field owned by one file is private to that file (responder.c's control
 * thread and stats-line state). The globals are main.c's force_quit (which
 * app->quit points to) and the log type.
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
#include "fw_responder.h"
#include "lcore.h"
#include "pkt.h"
#include "port.h"

struct fwire_app {
	volatile bool *quit;
	volatile bool
		serving; /* the lcores run (set before their launch, cleared after): /healthz */
	struct fw_conf conf;
	struct fw_layout layout;
	struct fwire_pkt_ctx px; /* the packet context every lcore answers with */
	struct rte_mempool *pool;
	uint32_t n_ports;
	struct fwire_port port[FW_CONF_PORTS_MAX];
	uint32_t n_lcores;
	struct fwire_lcore *lcore; /* n_lcores, rte_zmalloc'd */
	/* the responder core (lib/responder): the fleet, the keeper, /metrics (responder.c) */
	struct fw_responder *core;
	/*
	 * The timekeeper (the core's), driven by the control thread
	 * (responder.c); lcores read their slot of it once per burst
	 * (fwire_lcore_clock), the other threads its status (fw_keeper_status).
	 */
	struct fw_keeper *keeper;
	struct fw_state_lock *lock; /* [state] file (and static worker IDs), held for life */
};

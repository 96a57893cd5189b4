/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fleet inside a responder: the one piece of glue flakewire's control
 * thread and flakesock's keeper thread share between the registry
 * (fw_fleet.h) and the timekeeper (fw_keeper.h). Over a registry started
 * from [fleet] (lib/responder: fw_responder_fleet_start, the one place that
 * reads the configuration), every keeper tick it hands the registry's
 * per-slot results to the keeper: a new worker ID or floor with
 * fw_keeper_set_worker (the worker swaps at its next burst), a renewed lease
 * with fw_keeper_set_lease. Workers never see ZooKeeper; they read their
 * keeper slot once per burst, as they read the mark.
 *
 * Order of use (owner's thread): fw_responder_fleet_start or
 * fw_fleet_app_create (before the keeper is created: it needs the worker
 * IDs), fw_fleet_app_worker (the keeper's and the generators' first IDs), fw_fleet_app_attach
 * (after fw_keeper_start), fw_fleet_app_tick (every keeper tick), fw_fleet_app_free (after the
 * workers stopped).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet.h"
#include "fw_keeper.h"
#include "fw_layout.h"
#include "fw_log.h"

struct fw_fleet_app;

/*
 * The glue over a registry already started (@reg, with @n_workers slots;
 * taken over: freed by fw_fleet_app_free, and here on error), for
 * fw_responder_fleet_start and for tests that run the registry over another
 * store.
 * @new_worker: [clock] backstep = new_worker. Returns 0, -EINVAL (@n_workers
 * above FW_FLEET_SLOTS_MAX), -ENOMEM.
 */
FW_API int fw_fleet_app_create(struct fw_fleet *reg, uint32_t n_workers, uint64_t epoch_ms,
			       bool new_worker, struct fw_log log, struct fw_fleet_app **out);

/* Slot @i's worker ID now (0 while it holds none: its lease is 0 then). */
FW_API uint32_t fw_fleet_app_worker(const struct fw_fleet_app *a, uint32_t i);

/*
 * Gives the keeper every slot's worker ID, floor (never below the mark the
 * keeper read at start) and lease (0 for a slot without a worker ID: NO_LEASE).
 */
FW_API void fw_fleet_app_attach(struct fw_fleet_app *a, struct fw_keeper *k);

/*
 * Every keeper tick, with the FW_KEEPER_EV_* bits fw_keeper_tick returned
 * for the sample (@tick, @wall_ns): applies new worker IDs, floors and
 * leases. On FW_KEEPER_EV_BACK_STEP with [clock] backstep = new_worker it
 * asks the registry for a fresh ID for every slot as one decision
 * (fw_fleet_replace_all); once all are published it swaps every slot and
 * steps the keeper's time back to the system clock (fw_keeper_step_to_wall)
 * in one tick, the workers held meanwhile (fw_keeper_hold), so IDs follow
 * the system clock at once and no worker reads a fresh ID with the old time
 * or an old ID with the new one. Until then the old IDs keep issuing (the
 * keeper slews). Retires each old ID at the last ms it issued once its
 * worker swapped. Logs a lease running out (NO_LEASE) and coming back.
 * Doc: doc/fleet.md ("[clock] backstep = new_worker").
 */
FW_API void fw_fleet_app_tick(struct fw_fleet_app *a, struct fw_keeper *k, uint32_t events,
			      uint64_t tick, uint64_t wall_ns);

/* The registry (status, slots) for telemetry. */
FW_API struct fw_fleet *fw_fleet_app_registry(struct fw_fleet_app *a);

/*
 * A graceful stop's release (fw_fleet_stop_release): the workers stopped
 * and the final mark persisted, gives every worker ID back within
 * @timeout_ms, logged. The registry is stopped after it (fw_fleet_app_free
 * still frees). Returns fw_fleet_stop_release's code; -EINVAL for NULL.
 */
FW_API int fw_fleet_app_release(struct fw_fleet_app *a, uint32_t timeout_ms);

/* Stops the registry (leases stay: a restart takes its IDs back) and frees. NULL is fine. */
FW_API void fw_fleet_app_free(struct fw_fleet_app *a);

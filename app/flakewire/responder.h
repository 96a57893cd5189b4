/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * responder.c: flakewire's side of the responder core (lib/responder,
 * fw_responder.h), app->core: the TSC as the keeper's tick source, the
 * lcores as its workers, the log, the stats line, the packet path's
 * /metrics families, the control thread and /flakewire/fleet.
 */
#pragma once

struct fwire_app;

/*
 * Creates the core (app->core) before fwire_lcores_init: with [fleet] it
 * claims one worker ID per lcore (the registry's threads may run on any
 * CPU) and registers /flakewire/fleet. Returns 0 or -1 (logged: refuse to
 * start).
 */
int fwire_responder_create(struct fwire_app *app);

/*
 * Starts the keeper (app->keeper) after fwire_lcores_init: calibrates the TSC
 * ([clock] calibrate_ms), applies the start policy against the persisted
 * mark, gives the fleet every slot and every lcore its keeper slot: before
 * the lcores run. Returns 0 or -1 (logged).
 */
int fwire_responder_start_keeper(struct fwire_app *app);

/* Starts the control thread, which runs the keeper's tick loop. Returns 0 or -1 (logged). */
int fwire_responder_start_control(struct fwire_app *app);

/*
 * Joins the control thread if it runs (app->quit set), then, once the keeper
 * started, persists the exact highest millisecond issued (the lcores stopped
 * or never launched). Returns 0 (also before the keeper started) or the
 * final mark's -errno (logged with the mark file). The keeper stays
 * allocated: telemetry may read it until EAL cleanup (fw_responder_free after).
 */
int fwire_responder_stop_control(struct fwire_app *app);

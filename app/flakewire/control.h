/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * control.c: the control thread, flakewire's driver of the timekeeper
 * (lib/keeper), the fleet glue's tick and the stats line. Its thread and
 * the stats line's state are private to control.c (struct fw_control).
 */
#pragma once

struct fw_app;

/*
 * Creates app->keeper, calibrates the TSC ([clock] calibrate_ms), applies
 * the start policy against the persisted mark and gives every lcore its
 * keeper slot: before the lcores run. Returns 0 or -1 (logged).
 */
int fw_control_start_state(struct fw_app *app);
/* Starts the control thread (app->control). Returns 0 or -1 (logged). */
int fw_control_start(struct fw_app *app);
/*
 * Joins the control thread (app->quit set), then persists the exact
 * highest millisecond issued (the lcores stopped). The keeper stays
 * allocated: telemetry may read it until EAL cleanup.
 */
void fw_control_stop(struct fw_app *app);

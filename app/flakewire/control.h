/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * control.c: the control thread, flakewire's side of the keeper driver
 * (lib/keeper/fw_keeper_driver.h): the TSC, the test-clock hooks, the fleet
 * glue's tick and the stats line. Its thread, driver and stats-line state
 * are private to control.c (struct fw_control).
 */
#pragma once

struct fw_app;

/*
 * Starts the keeper driver (app->control, app->keeper): creates the
 * keeper, calibrates the TSC ([clock] calibrate_ms), applies the start
 * policy against the persisted mark and gives every lcore its keeper slot:
 * before the lcores run. Returns 0 or -1 (logged).
 */
int fw_control_start_state(struct fw_app *app);
/* Starts the control thread, which runs the driver's tick loop. Returns 0 or -1 (logged). */
int fw_control_start(struct fw_app *app);
/*
 * Joins the control thread (app->quit set), then persists the exact
 * highest millisecond issued (the lcores stopped). The keeper stays
 * allocated: telemetry may read it until EAL cleanup.
 */
void fw_control_stop(struct fw_app *app);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fleet.c: worker IDs claimed through ZooKeeper ([fleet] zookeeper), the
 * glue between lib/fleet's fw_fleet_app and the responder. start: before
 * fw_lcores_init (claims; -1: refuse to start, logged); worker: lcore i's
 * first worker ID (fleet, or [id]; -1 when [id] workers is too short);
 * attach: after the keeper started; tick: every control tick with the
 * keeper's events; stop: after the lcores stopped.
 */
#pragma once

#include <stdint.h>

struct fw_app;

int fw_fleet_wire_start(struct fw_app *app);
int64_t fw_fleet_wire_worker(const struct fw_app *app, uint32_t i);
void fw_fleet_wire_attach(struct fw_app *app);
void fw_fleet_wire_tick(struct fw_app *app, uint32_t events, uint64_t tsc, uint64_t wall_ns);
void fw_fleet_wire_stop(struct fw_app *app);

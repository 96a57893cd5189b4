/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c: flakewire's Prometheus endpoint ([metrics] listen). */
#pragma once

struct fw_app;
struct fw_metrics;

/*
 * Starts the /metrics endpoint when [metrics] listen is set (after the
 * lcores and ports exist). Returns 0 (also when off) or -1 (logged: a bad
 * address, the port in use).
 */
int fw_app_metrics_start(struct fw_app *app);

/* Stops it; a no-op when it is not running. */
void fw_app_metrics_stop(struct fw_app *app);

/*
 * The registry while the endpoint runs (NULL when [metrics] listen is off):
 * another part adds its families with fw_metrics_add_collector() (the fleet
 * lease families, lib/metrics/fleet, are added by fw_app_metrics_start
 * itself when [fleet] is set).
 */
struct fw_metrics *fw_app_metrics_registry(void);

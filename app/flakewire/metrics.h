/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c: flakewire's Prometheus endpoint ([metrics] listen). */
#pragma once

struct fw_app;

/*
 * Starts the /metrics endpoint when [metrics] listen is set (after the
 * lcores and ports exist). Returns 0 (also when off) or -1 (logged: a bad
 * address, the port in use).
 */
int fw_app_metrics_start(struct fw_app *app);

/* Stops it; a no-op when it is not running. */
void fw_app_metrics_stop(struct fw_app *app);

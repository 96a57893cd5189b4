/* SPDX-License-Identifier: BSD-3-Clause */
/* telemetry.c: the /flakewire/... commands of DPDK telemetry. */
#pragma once

#include <rte_telemetry.h>

struct fwire_app;

/*
 * Registers them for @app, which they read until fwire_telemetry_close().
 * Returns 0 or -1 (logged).
 */
int fwire_telemetry_register(struct fwire_app *app);

/*
 * Registers another /flakewire command (responder.c's /flakewire/fleet)
 * behind the same gate: @fn runs only while the gate is open. @name and
 * @help must stay valid. Returns 0 or -1 (logged).
 */
int fwire_telemetry_register_cmd(const char *name, telemetry_cb fn, const char *help);

/*
 * Shuts the gate and waits for the commands inside: afterwards no
 * /flakewire command runs (each answers an error), so the caller may free
 * the lcores, the ports and the core. Call it at a stop before freeing any
 * of them: DPDK 22.11's telemetry threads outlive rte_eal_cleanup().
 */
void fwire_telemetry_close(void);

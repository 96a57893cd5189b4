/* SPDX-License-Identifier: BSD-3-Clause */
/* telemetry.c: the /flakewire/... commands of DPDK telemetry. */
#pragma once

struct fwire_app;

/* Registers them for @app (which must outlive EAL). Returns 0 or -1. */
int fwire_telemetry_register(struct fwire_app *app);

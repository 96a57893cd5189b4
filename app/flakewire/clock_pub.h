/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock_pub.c: the tick source and the system clock as the keeper reads
 * them; and the test-clock hooks the control thread calls, defined by
 * testclock_none.c in flakewire (no-ops) and by testclock.c in
 * flakewire-testclock (a fault file's clock offset, TSC rate error and
 * pauses, for tests/system/faults). Each binary links exactly one of the two.
 */
#pragma once

#include <stdint.h>

struct fw_app;

uint64_t fw_tsc_ticks(void);         /* rte_rdtsc(): the lcores' tick source */
uint64_t fw_tsc_ticks_precise(void); /* rte_rdtsc_precise(), for samples */
uint64_t fw_realtime_ns(void);       /* CLOCK_REALTIME */
uint64_t fw_wall_ns(void);           /* CLOCK_REALTIME through fw_testclock_ns */

/* Test-clock hooks, called by the control thread only. */
int fw_testclock_init(struct fw_app *app);  /* 0, or -1: do not start */
void fw_testclock_poll(struct fw_app *app); /* every control tick */
uint64_t fw_testclock_ns(uint64_t ns);      /* a CLOCK_REALTIME sample, faults applied */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What flakewire hands the timekeeper (lib/keeper): the TSC as its tick
 * source and CLOCK_REALTIME (through the test-clock hook) as the system
 * clock.
 */
#include <rte_cycles.h>

#include "clock_pub.h"
#include "fw_keeper.h"

uint64_t fw_tsc_ticks(void)
{
	return rte_rdtsc();
}

uint64_t fw_tsc_ticks_precise(void)
{
	return rte_rdtsc_precise();
}

uint64_t fw_realtime_ns(void)
{
	return fw_keeper_realtime_ns();
}

uint64_t fw_wall_ns(void)
{
	return fw_testclock_ns(fw_keeper_realtime_ns());
}

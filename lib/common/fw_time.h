/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The time helpers every component uses, written once: sleeps that finish
 * their whole interval even when a signal interrupts them, CLOCK_MONOTONIC in
 * ns and ms, and CLOCK_REALTIME in ms since the Unix epoch.
 * Header only (C11 + POSIX clock_gettime/clock_nanosleep), no DPDK.
 */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* Sleeps @ns nanoseconds on CLOCK_MONOTONIC, resuming after EINTR. */
static inline void fw_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* Sleeps @ms milliseconds on CLOCK_MONOTONIC, resuming after EINTR. */
static inline void fw_sleep_ms(uint32_t ms)
{
	fw_sleep_ns((uint64_t)ms * 1000000u);
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t fw_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t fw_mono_ms(void)
{
	return fw_mono_ns() / 1000000u;
}

/* CLOCK_REALTIME in milliseconds since the Unix epoch. */
static inline uint64_t fw_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The time helpers every component uses, written once: sleeps that finish
 * their whole interval even when a signal interrupts them, CLOCK_MONOTONIC in
 * ns and ms, CLOCK_REALTIME in ns and ms since the Unix epoch, and a
 * condition variable whose deadlines are CLOCK_MONOTONIC times (so a step of
 * the wall clock moves no wait).
 * Header only (C11 + POSIX clock_gettime/clock_nanosleep/pthreads), no DPDK.
 */
#pragma once

#include <errno.h>
#include <pthread.h>
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

/* CLOCK_REALTIME in nanoseconds since the Unix epoch. */
static inline uint64_t fw_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME in milliseconds since the Unix epoch. */
static inline uint64_t fw_wall_ms(void)
{
	return fw_wall_ns() / 1000000u;
}

/* @ns (any clock's nanoseconds) as a timespec. */
static inline struct timespec fw_timespec_of_ns(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				 .tv_nsec = (long)(ns % 1000000000u)};
}

/*
 * Initialises @cv so that pthread_cond_timedwait() takes CLOCK_MONOTONIC
 * deadlines (fw_timespec_of_ns(fw_mono_ns() + wait)). Returns 0 or a
 * positive errno, as pthread_cond_init().
 */
static inline int fw_cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return rc;
}

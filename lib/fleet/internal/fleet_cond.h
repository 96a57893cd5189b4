/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A condition variable on CLOCK_MONOTONIC, for lib/fleet's waits (the
 * registry thread, the ZooKeeper session, etcd's keep-alive): their
 * deadlines are fw_mono_ms() values (lib/common/fw_time.h), so a step of
 * the wall clock moves none of them. Internal to lib/fleet; header only.
 */
#pragma once

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Initialises @cv on CLOCK_MONOTONIC. */
static inline void fw_fleet_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* The absolute time of @ms (a fw_mono_ms() deadline) for pthread_cond_timedwait on @cv. */
static inline struct timespec fw_fleet_mono_deadline(uint64_t ms)
{
	return (struct timespec){.tv_sec = (time_t)(ms / 1000),
				 .tv_nsec = (long)(ms % 1000) * 1000000};
}

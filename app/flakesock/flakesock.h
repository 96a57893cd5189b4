/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock: the kernel-socket responder. Same protocol and ID core as the
 * DPDK responder, over plain UDP sockets: one thread per worker ID, each with
 * its own SO_REUSEPORT socket, recvmmsg/sendmmsg in batches. It is the
 * fallback for hosts without DPDK and the baseline flakewire is measured
 * against.
 *
 * Threads: the workers answer; the main thread ("keeper") reserves and
 * persists the mark ahead of the workers, prints the stats line and handles
 * shutdown. Workers read the published mark once per batch.
 */
#pragma once

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fw_common.h"
#include "fw_conf.h"

struct fw_fleet_app;
#include "fw_keeper.h"
#include "fw_policy.h"
#include "fw_serve.h"

#define FSOCK_BATCH       32
#define FSOCK_BUF_LEN     2048
#define FSOCK_MAX_WORKERS 64

struct fsock_worker {
	struct fw_serve serve; /* generator and counters, written by this thread only */
	struct fsock_ctx *ctx;
	pthread_t thread;
	int fd;
	uint32_t index;
	struct fw_keeper_worker kw;  /* its keeper slot: clock, mark, lease, worker swaps */
	uint64_t drop_source;        /* source outside [net] allow */
	uint64_t drop_reflector;     /* source port in [net] reflector_ports */
	uint64_t drop_martian;       /* forged v4-mapped or unspecified IPv6 source */
	struct fw_policy_cache srcc; /* verdicts of ctx->policy for recent sources */
} FW_CACHE_ALIGNED;

struct fw_keeper_driver;

struct fsock_ctx {
	struct fw_conf conf;
	struct fw_layout layout;
	struct fw_policy policy; /* [net] allow, trusted, reflector_ports, read-only */
	struct sockaddr_storage listen;
	socklen_t listen_len;
	uint32_t n_workers;
	struct fw_keeper_driver *driver; /* the keeper driver (keeper.c) */
	struct fw_keeper *keeper;        /* the driver's keeper; its status any thread */
	volatile sig_atomic_t *stop;     /* set by the signal handler */
	_Atomic bool running;            /* keeper and workers' slots set: /metrics reads them */
	struct fsock_worker *workers;
	struct fw_fleet_app *fleet; /* NULL without [fleet] zookeeper (fleet.c) */
	struct fw_state_lock *lock; /* [state] file (and static worker IDs), held for life */
};

/*
 * Fleet ([fleet] zookeeper set, app/flakesock/fleet.c): claims one worker ID
 * per worker thread before the keeper starts. Returns 0 (also with ZooKeeper
 * down: cache or NO_LEASE), or -1 with a message on stderr (refuse to start).
 */
int fsock_fleet_start(struct fsock_ctx *ctx);

/* Worker i's worker ID at start: the fleet's, or [id]'s without a fleet. */
uint32_t fsock_fleet_first_worker(const struct fsock_ctx *ctx, uint32_t i);

/* After fsock_keeper_start: gives the keeper each slot's floor and lease. */
void fsock_fleet_attach(struct fsock_ctx *ctx);

/*
 * Every keeper tick, with fw_keeper_tick's FW_KEEPER_EV_* bits and its sample: applies the
 * registry's slots to the keeper (worker swaps, leases), retires replaced
 * IDs, answers a backward step with new workers ([clock] backstep), logs.
 */
void fsock_fleet_tick(struct fsock_ctx *ctx, uint32_t events, uint64_t tick, uint64_t wall_ns);

/* Stops the registry thread (leases stay: a restart takes the IDs back). */
void fsock_fleet_stop(struct fsock_ctx *ctx);

/* Opens the worker's SO_REUSEPORT socket. Returns 0 or -errno. */
int fsock_worker_open(struct fsock_ctx *ctx, struct fsock_worker *w);

/* Builds ctx->policy from the configuration. Returns 0 or -1 (message on stderr). */
int fsock_policy_init(struct fsock_ctx *ctx);

/* Thread body: answers until *ctx->stop. */
void *fsock_worker_run(void *arg);

/*
 * Creates the timekeeper (lib/keeper: CLOCK_MONOTONIC_RAW ticks calibrated
 * against the system clock over [clock] calibrate_ms), reads the persisted
 * mark, applies the start policy and reserves the first mark. Returns 0, or
 * -1 with a message on stderr.
 */
int fsock_keeper_start(struct fsock_ctx *ctx);

/* Prepares worker @w's reader of its keeper slot (after fw_serve_init). */
void fsock_keeper_worker_init(struct fsock_ctx *ctx, struct fsock_worker *w);

/* Drives the keeper (re-anchor, mark) and prints stats until *ctx->stop. */
void fsock_keeper_run(struct fsock_ctx *ctx);

/* Persists the highest ms actually issued (so a restart need not wait). */
int fsock_keeper_stop(struct fsock_ctx *ctx);

/*
 * metrics.c: the /metrics endpoint when [metrics] listen is set. Returns 0
 * (also when off) or -1 with a message on stderr. Stop is a no-op when off.
 */
int fsock_metrics_start(struct fsock_ctx *ctx);
void fsock_metrics_stop(void);
struct fw_metrics;
/* The registry while it runs (NULL when off), for other parts' collectors (fleet leases). */
struct fw_metrics *fsock_metrics_registry(void);

/* Milliseconds since the unix epoch from CLOCK_REALTIME (log time stamps). */
uint64_t fsock_unix_ms(void);

/* The system clock as the keeper reads it: CLOCK_REALTIME through fsock_testclock_ns. */
uint64_t fsock_wall_ns(void);

/*
 * Test-clock hooks, called by the keeper thread only: no-ops in flakesock
 * (testclock_none.c); flakesock-testclock links testclock.c instead (a
 * fault file's clock offset, rate error and pauses, and a status file the
 * tests read), for tests/system/faults.
 */
int fsock_testclock_init(struct fsock_ctx *ctx);  /* 0, or -1: do not start */
void fsock_testclock_poll(struct fsock_ctx *ctx); /* every keeper tick */
uint64_t fsock_testclock_ns(uint64_t ns);         /* a CLOCK_REALTIME sample, faults applied */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakesock: the kernel-socket responder. Same protocol and ID core as the
 * DPDK responder, over plain UDP sockets: one thread per worker ID, each with
 * its own SO_REUSEPORT socket, recvmmsg/sendmmsg in batches. It is the
 * fallback for hosts without DPDK and the baseline flakewire is measured
 * against.
 *
 * Threads: the workers answer; the main thread ("keeper") runs the
 * responder core (lib/responder, fw_responder.h: the fleet, the keeper that
 * reserves and persists the mark ahead of the workers, /metrics), prints
 * the stats line and handles shutdown. Workers read the published mark once
 * per batch.
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

#include "fw_keeper.h"
#include "fw_policy.h"
#include "fw_responder.h"
#include "fw_serve.h"
#include "fw_state_lock.h"

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

struct fsock_ctx {
	struct fw_conf conf;
	struct fw_layout layout;
	struct fw_policy policy; /* [net] allow, trusted, reflector_ports, read-only */
	struct sockaddr_storage listen;
	socklen_t listen_len;
	uint32_t n_workers;
	struct fw_responder *core;   /* the fleet, the keeper, /metrics (responder.c) */
	struct fw_keeper *keeper;    /* the core's keeper; its status any thread */
	volatile sig_atomic_t *stop; /* set by the signal handler */
	_Atomic bool running;        /* keeper and workers' slots set: /metrics reads them */
	struct fsock_worker *workers;
	struct fw_state_lock *lock; /* [state] file (and static worker IDs), held for life */
};

/*
 * responder.c: creates the responder core (ctx->core) with flakesock's ticks
 * (CLOCK_MONOTONIC_RAW), workers, log (stderr) and stats line; with [fleet]
 * it claims one worker ID per worker thread. Returns 0, or -1 logged
 * (refuse to start).
 */
int fsock_responder_create(struct fsock_ctx *ctx);

/* Opens the worker's SO_REUSEPORT socket. Returns 0 or -errno. */
int fsock_worker_open(struct fsock_ctx *ctx, struct fsock_worker *w);

/* Builds ctx->policy from the configuration. Returns 0 or -1 (message on stderr). */
int fsock_policy_init(struct fsock_ctx *ctx);

/* Thread body: answers until *ctx->stop. */
void *fsock_worker_run(void *arg);

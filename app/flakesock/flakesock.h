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
	_Atomic uint64_t last_ms; /* highest ms issued, for the final mark */
	uint64_t drop_source;     /* IPv4 source outside [net] allow */
	uint64_t drop_reflector;  /* source port in [net] reflector_ports */
} FW_CACHE_ALIGNED;

struct fsock_ctx {
	struct fw_conf conf;
	struct fw_layout layout;
	struct fw_policy policy; /* [net] allow and reflector_ports, read-only */
	struct sockaddr_storage listen;
	socklen_t listen_len;
	uint32_t n_workers;
	uint64_t floor_ms;           /* persisted mark at start, ms since epoch */
	_Atomic uint64_t mark_ms;    /* reserved mark, ms since epoch, published by the keeper */
	volatile sig_atomic_t *stop; /* set by the signal handler */
	_Atomic uint64_t mark_failures; /* persists that failed (keeper), for /metrics */
	_Atomic bool mark_failing;      /* the last one failed */
	struct fsock_worker *workers;
};

/* Opens the worker's SO_REUSEPORT socket. Returns 0 or -errno. */
int fsock_worker_open(struct fsock_ctx *ctx, struct fsock_worker *w);

/* Builds ctx->policy from the configuration. Returns 0 or -1 (message on stderr). */
int fsock_policy_init(struct fsock_ctx *ctx);

/* Thread body: answers until *ctx->stop. */
void *fsock_worker_run(void *arg);

/*
 * Reads the persisted mark, applies the start policy and reserves the first
 * mark. Returns 0, or -1 with a message on stderr.
 */
int fsock_keeper_start(struct fsock_ctx *ctx);

/* Keeps the mark reserved ahead and prints stats until *ctx->stop. */
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

/* Milliseconds since the unix epoch from CLOCK_REALTIME. */
uint64_t fsock_unix_ms(void);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus metrics: a small registry of collectors, a writer of the text
 * exposition format (version 0.0.4) and an HTTP endpoint (libmicrohttpd)
 * serving GET /metrics from its own thread.
 *
 * A scrape runs every collector in registration order; each writes its
 * families through the writer: fw_metrics_family() once per family, then
 * its samples. The writer checks the conventions so that a mistake is an
 * error in a test, not a series Prometheus silently mangles: names match
 * [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* (not "__"),
 * a counter's name ends in "_total" and nothing else's does, a family is
 * written once, a sample follows its family. Label values and help text are
 * escaped. Errors stick: after the first one every call is a no-op and
 * fw_metrics_render() returns it.
 *
 * Collectors run on the server's thread, one scrape at a time (never two
 * at once); they read counters written by other threads without locks
 * (each counter has one writer; 64-bit loads are atomic on the targets).
 *
 * No function here prints or exits.
 *
 * Manual: doc/metrics.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"

enum fw_metrics_type {
	FW_METRICS_COUNTER = 0, /* monotonic; name ends in _total */
	FW_METRICS_GAUGE = 1,
};

struct fw_metrics_label {
	const char *name;
	const char *value;
};

struct fw_metrics;        /* registry: opaque */
struct fw_metrics_writer; /* one scrape's output: opaque */
struct fw_metrics_server; /* HTTP endpoint: opaque */

/* Writes this collector's families and samples. */
typedef void (*fw_metrics_collect_fn)(struct fw_metrics_writer *w, void *arg);

/* A new empty registry, or NULL with errno ENOMEM. */
FW_API struct fw_metrics *fw_metrics_create(void);

/* Frees the registry (stop its server first). NULL is a no-op. */
FW_API void fw_metrics_free(struct fw_metrics *m);

/*
 * Adds a collector called at every scrape with @arg; safe while the server
 * runs (a component that starts later, such as fleet leases, adds its own).
 * Returns 0, -EINVAL (NULL @m or @fn) or -ENOMEM.
 */
FW_API int fw_metrics_add_collector(struct fw_metrics *m, fw_metrics_collect_fn fn, void *arg);

/*
 * Starts a family: "# HELP" and "# TYPE" lines. @help may be NULL.
 * Errors (sticky): -EINVAL for a bad name, a counter not ending in _total
 * or a gauge ending in it, a family written twice in one scrape; -ENOMEM.
 */
FW_API void fw_metrics_family(struct fw_metrics_writer *w, const char *name,
			      enum fw_metrics_type type, const char *help);

/*
 * One sample of the current family with @n labels (@labels may be NULL
 * when @n is 0): an unsigned integer written exactly, a signed integer, or
 * a double (NaN and infinities as Prometheus spells them).
 * Errors (sticky): -EINVAL before any family, for a bad or reserved label
 * name; -ENOMEM.
 */
FW_API void fw_metrics_u64(struct fw_metrics_writer *w, const struct fw_metrics_label *labels,
			   size_t n, uint64_t v);
FW_API void fw_metrics_i64(struct fw_metrics_writer *w, const struct fw_metrics_label *labels,
			   size_t n, int64_t v);
FW_API void fw_metrics_f64(struct fw_metrics_writer *w, const struct fw_metrics_label *labels,
			   size_t n, double v);

/*
 * Runs every collector and returns the exposition text in *@text (malloc'd,
 * NUL-terminated; the caller frees it) and its length in *@len.
 * Returns 0, -EINVAL (NULL argument, or a collector broke a rule above: see
 * fw_metrics_family/fw_metrics_u64) or -ENOMEM; *@text is NULL on error.
 */
FW_API int fw_metrics_render(struct fw_metrics *m, char **text, size_t *len);

/*
 * Parses a listen address "IPV4:PORT" or "[IPV6]:PORT" (PORT 0-65535; 0: any free port) into
 * @sa (a struct sockaddr_in or sockaddr_in6) and *@salen.
 * Returns 0 or -EINVAL.
 */
FW_API int fw_metrics_parse_listen(const char *listen, void *sa, size_t cap, size_t *salen);

/*
 * True when @listen (already valid) is a loopback address (127.0.0.0/8, ::1).
 */
FW_API int fw_metrics_listen_is_loopback(const char *listen);

/*
 * The probes (Kubernetes' liveness and readiness, a load balancer's check):
 * GET /healthz calls @fn(@arg, false, ...), GET /readyz @fn(@arg, true, ...);
 * @fn writes a short text body into @body (@cap bytes, NUL-terminated; one
 * line per problem) and returns true for 200 (healthy / ready) or false for
 * 503. Called on the server's thread, one request at a time. Set before
 * fw_metrics_serve(); without it both paths are 404.
 */
typedef bool (*fw_metrics_probe_fn)(void *arg, bool ready, char *body, size_t cap);
FW_API void fw_metrics_set_probe(struct fw_metrics *m, fw_metrics_probe_fn fn, void *arg);

/*
 * Serves GET/HEAD /metrics of @m (and /healthz, /readyz when probes are
 * set) on @listen from a libmicrohttpd thread (anything else: 404 or 405). That thread inherits the
 * caller's CPU affinity: a DPDK process calls this from a control thread (rte_ctrl_thread_create),
 * so it never runs on a worker lcore's CPU. Returns 0 with *@out set; -EINVAL (bad @listen, NULL
 * argument), -EADDRINUSE or another -errno when the socket cannot be bound (the address is in use
 * or not local), -ENOMEM.
 */
FW_API int fw_metrics_serve(struct fw_metrics *m, const char *listen,
			    struct fw_metrics_server **out);

/* The TCP port actually bound (useful with port 0 in tests). */
FW_API uint16_t fw_metrics_server_port(const struct fw_metrics_server *s);

/* Stops the server and joins its thread. NULL is a no-op. */
FW_API void fw_metrics_server_stop(struct fw_metrics_server *s);

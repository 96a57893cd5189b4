/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/client's responder choice (issue 49; doc/clients.md, section
 * "Availability: deadlines, hedging, health"): which responder a request
 * goes to, when it is sent again or elsewhere, and when a call gives up.
 * Not installed; route.c is its only implementation.
 *
 * Contract of one call (fwc_route_call()):
 *   - It returns a reply or fails by its deadline, whatever the responders
 *     do: at most the deadline (plus one scheduling delay) after it started.
 *   - It sends the same request bytes (one tag) to the responders in the
 *     order: eligible ones (healthy, not held off) in configured order, then
 *     held-off ones (earliest hold first), then unhealthy ones in configured
 *     order, recomputed at each send; "the next" is the first of that order
 *     not yet asked in this round, and a new round starts when all were. A
 *     RETRY_AFTER takes its responder out of the round, and a held-off one
 *     counts as not asked: it is asked again when its hint ends (as the
 *     earliest hold, or once eligible again), before the unhealthy ones.
 *   - Events: a reply (done); refused, NO_LEASE, CLOCK_UNSAFE, REFUSED or
 *     RETRY_AFTER (sent to the next at once; a held-off next is waited for,
 *     never past the deadline); the hedge delay d since the last send with
 *     a budget token (a hedge, to a responder not yet asked in this call);
 *     T = max(4 d, 50 ms) since the last send, doubled after each send that
 *     was not a hedge (a resend to the next); the deadline (FW_ETIMEOUT and
 *     a text naming what each responder did).
 *   - Statuses (doc/clients.md, "Availability", Statuses): NO_LEASE and CLOCK_UNSAFE
 *     move on (the responder may issue later: with none other left it is
 *     asked every FW_ROUTE_REASK_US until the deadline, whose text says
 *     "answered NO_LEASE"); REFUSED moves on too, and ends the call with
 *     FW_ESTATUS once every responder of the client answered it in this
 *     call; BAD_REQUEST and BAD_VERSION end the call with FW_ESTATUS at
 *     once (any responder would say the same).
 * Health (shared by every call of the client):
 *   - unhealthy: refused (ECONNREFUSED), NO_LEASE, CLOCK_UNSAFE or REFUSED
 *     (each also held off FW_ROUTE_REASK_US, so a lone such responder is
 *     asked again every 10 ms), or no answer while another answered the
 *     call or before its deadline; never BAD_REQUEST or BAD_VERSION;
 *   - held off: RETRY_AFTER h holds the responder h µs (at most
 *     FW_CLIENT_RETRY_AFTER_MAX_US), without making it unhealthy;
 *   - healthy again: the probe thread's INFO (every FW_ROUTE_PROBE_MS to
 *     each unhealthy responder) had a valid reply; or a call's OK reply.
 *   - probed: a responder unhealthy for silence or a refusal (ECONNREFUSED)
 *     at once and every FW_ROUTE_PROBE_MS; one unhealthy for a status
 *     (NO_LEASE, CLOCK_UNSAFE, REFUSED) not before FW_ROUTE_STATUS_HOLD_MS
 *     after the last such status (probe_after_ns): an INFO reply proves
 *     only that it is up, which its status already proved, and would make
 *     it healthy again within a round trip. A probe reply that comes back
 *     after a newer status is ignored.
 * Hedging: d is the 99th percentile of the last FW_ROUTE_RTT_WINDOW
 * successful round trips (recomputed every FW_ROUTE_RTT_EVERY samples),
 * clamped to [opts.hedge_min_us, 100 ms]; 10 ms with fewer than 16 samples.
 * The budget is a bucket of 10 tokens, full at the start, each call adding
 * opts.hedge_budget_pct / 100 token, a hedge taking one; a budget of 0
 * starts empty (no hedging).
 *
 * Threading: every function may be called from any thread. The route's lock
 * is a leaf: it is never held across I/O or a wait, and nothing else is
 * taken under it (c->lock may be held when it is taken). The probe thread is
 * the route's own: started on demand (every signal blocked) when a responder
 * becomes unhealthy, it ends when none is left and at fwc_route_free(); it
 * never calls opts.cancel, never takes c->lock and never blocks a call.
 * Calls of one channel (struct fw_client_io) are sequential, as before.
 *
 * Calls run one way: exchange.c -> route.c -> addr.c; client.c and fork.c
 * -> route.c.
 */
#ifndef FW_CLIENT_ROUTE_H
#define FW_CLIENT_ROUTE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FW_ROUTE_RTT_WINDOW         256u
#define FW_ROUTE_RTT_EVERY          64u
#define FW_ROUTE_RTT_MIN_SAMPLE     16u
#define FW_ROUTE_D_DEFAULT_US       10000u /* d with fewer than FW_ROUTE_RTT_MIN_SAMPLE samples */
#define FW_ROUTE_D_MAX_US           100000u
#define FW_ROUTE_T_MIN_US           50000u
#define FW_ROUTE_PROBE_MS           100u
/* A responder unhealthy for a status is not probed before this (probe_after_ns). */
#define FW_ROUTE_STATUS_HOLD_MS     1000u
#define FW_ROUTE_T_MAX_MS           60000u /* T stops doubling here (FW_CLIENT_TIMEOUT_MS_MAX) */
/* A responder that refused (ECONNREFUSED), or answered NO_LEASE, CLOCK_UNSAFE
 * or REFUSED, is asked again in the same call after this. */
#define FW_ROUTE_REASK_US           10000u
#define FW_ROUTE_RETRY_AFTER_MIN_US 1000u  /* a smaller RETRY_AFTER hint holds this long */
#define FW_ROUTE_TOKENS_CAP         10000u /* milli-tokens: 10 hedges */
#define FW_ROUTE_ERR_LEN            512u

struct fw_client;
struct fw_client_io;
struct fw_client_server;

struct fwc_route_srv {
	bool healthy;
	uint64_t hold_until_ns;
	uint64_t probe_after_ns; /* not probed before (its last status + FW_ROUTE_STATUS_HOLD_MS) */
	int probe_fd;            /* the probe thread's socket, -1 until it probes */
	uint64_t probe_tag;      /* the tag of its last probe */
};

struct fwc_route {
	pthread_mutex_t lock;
	const struct fw_client_server *srv; /* the client's servers, @n of them */
	size_t n;
	struct fwc_route_srv *s;
	uint64_t hedge_min_ns;
	uint32_t budget_milli; /* tokens added per call, in thousandths */
	uint32_t tokens;       /* in thousandths */
	uint32_t rtt_us[FW_ROUTE_RTT_WINDOW];
	uint64_t rtt_count; /* samples recorded */
	uint64_t d_ns;      /* the hedge delay now */
	uint64_t hedges;    /* hedges sent (for tests and telemetry) */
	bool probe_started; /* a thread was created and not joined yet */
	bool probe_running; /* ... and has not finished */
	bool probe_stop;
	int probe_wake; /* eventfd that wakes the probe thread for a stop; -1 */
	pthread_t probe;
	char last_err[FW_ROUTE_ERR_LEN]; /* the text of the last call that timed out */
};

/*
 * Initialises @r for the @n servers @srv (kept by reference) with the
 * options' hedge floor and budget: every responder healthy, no RTT sample,
 * a full budget. Returns 0 or -ENOMEM / -errno (undone by fwc_route_free()).
 */
int fwc_route_init(struct fwc_route *r, const struct fw_client_server *srv, size_t n,
		   uint32_t hedge_min_us, uint32_t hedge_budget_pct);

/* Stops and joins the probe thread, closes its sockets, frees @r's memory. */
void fwc_route_free(struct fwc_route *r);

/*
 * One call: sends the @len request bytes in io->tx (op @op, tag @tag) as the
 * contract above says, until a reply or @deadline_ns (fw_mono_ns()). Runs
 * without c->lock held; the channel's sockets are opened on first use.
 * Returns 0 with a reply of status OK in io->reply; FW_ESTATUS with the
 * error status in io->reply (BAD_REQUEST or BAD_VERSION from one, or
 * REFUSED from every responder); FW_ETIMEOUT at the deadline
 * (fwc_route_last_error() names what each responder did); FW_ECLOSED;
 * -ECANCELED (opts.cancel); -errno (a socket could not be opened).
 */
int fwc_route_call(struct fw_client *c, struct fw_client_io *io, size_t len, uint8_t op,
		   uint64_t tag, uint64_t deadline_ns);

/* Copies the last timeout's text into @buf (@cap bytes, NUL-terminated). Returns its length. */
size_t fwc_route_last_error(struct fwc_route *r, char *buf, size_t cap);

/* Before a fork: takes @r's lock (after c->lock); released by fwc_route_unlock() in the
 * parent. */
void fwc_route_lock(struct fwc_route *r);
void fwc_route_unlock(struct fwc_route *r);

/*
 * In a forked child, with @r's lock taken by fwc_route_lock(): @r as a new
 * client's (no probe thread, every responder healthy, no RTT sample, a full
 * budget), its lock initialised again and the parent's probe sockets closed.
 */
void fwc_route_forked(struct fwc_route *r);

#endif /* FW_CLIENT_ROUTE_H */

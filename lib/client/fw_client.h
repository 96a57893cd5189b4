/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flakewire client: what a service links to get IDs from one or more
 * responders over kernel UDP sockets. libc and pthreads only.
 *
 * Each request carries a fresh random 64-bit tag (getrandom); a reply is
 * accepted only when its tag and its source address match, so stale,
 * duplicated, foreign and garbled datagrams are dropped and the client
 * keeps waiting.
 *
 * Availability (doc/clients.md, "Availability: deadlines, hedging, health";
 * the rules are route.h's): opts.timeout_ms is each call's deadline (one
 * fw_client_get*, one fw_client_info, one refill of fw_client_next): it
 * returns an ID or fails at most that long after it started, whatever the
 * responders do. A request goes to the responders in order: healthy ones in
 * configured order, then those holding off after RETRY_AFTER (earliest end
 * first), then unhealthy ones. If no reply came after the hedge delay (the
 * 99th percentile of the client's last 256 round trips, at least
 * opts.hedge_min_us, at most 100 ms; 10 ms until 16 are known), the same
 * request goes to the next responder not asked yet (a hedge), while the
 * hedge budget (10 tokens, opts.hedge_budget_pct % of a token per call)
 * allows; after max(4 x that delay, 50 ms), doubling, it is resent to the
 * next in the order (cycling, so a lone responder is asked again). A closed
 * port (ECONNREFUSED) or the statuses FW_WIRE_ST_NO_LEASE,
 * FW_WIRE_ST_CLOCK_UNSAFE and FW_WIRE_ST_REFUSED send it to the next at once
 * and make that responder unhealthy, as does losing a hedge race or staying
 * silent until the deadline; such a responder is asked again in the same
 * call only 10 ms later, so a lone one (or every one) that is refused or
 * answers NO_LEASE or CLOCK_UNSAFE is asked every 10 ms until the deadline,
 * whose FW_ETIMEOUT names what it did ("answered NO_LEASE", "refused").
 * FW_WIRE_ST_REFUSED ends the call at once with FW_ESTATUS only when every
 * responder of the client answered it in this call; FW_WIRE_ST_BAD_REQUEST
 * and FW_WIRE_ST_BAD_VERSION end it at once with FW_ESTATUS (another
 * responder would say the same) without making that responder unhealthy.
 * FW_WIRE_ST_RETRY_AFTER holds the responder off for its hint (1 ms to
 * FW_CLIENT_RETRY_AFTER_MAX_US), not unhealthy, and sends to the next at
 * once, waiting for the hint only when no other responder is left: a lone
 * responder answering RETRY_AFTER is retried until the deadline. An
 * unhealthy responder is probed with INFO every 100 ms by a thread of the
 * client's own (every signal blocked; started on demand, ended when none is
 * unhealthy and at close) and used first again as soon as it answers; one
 * made unhealthy by NO_LEASE, CLOCK_UNSAFE or REFUSED is first probed 1 s
 * after that status (it answers INFO while it cannot issue). All of this
 * holds for the one-shot calls and the refills alike.
 *
 * Every ID handed out has been validated: status OK, count no larger than
 * asked, IDs positive and strictly increasing within the reply, strictly
 * above the last ID seen from the same (datacenter, worker) pair in any
 * earlier reply on the same channel (see thread safety), and (once the
 * layout is known from an INFO exchange, done lazily before the first ID
 * request) carrying the datacenter and worker the reply header names. A
 * reply that fails any check yields FW_EINVALID and none of its IDs.
 *
 * Thread safety: every function may be called from several threads on the
 * same client. The one-shot calls (fw_client_get*, fw_client_info) are
 * serialised among themselves: one waits for the request in flight. The
 * prefetching calls (fw_client_next, fw_client_next_uuid7) never wait for
 * them: each prefetch buffer has its own sockets and at most one refill in
 * flight, run outside the client's lock (fw_client_next's by a thread of
 * the client's own), while other callers keep taking from the buffer
 * (they wait only when it is empty). No lock is ever held across a
 * network round trip except the one-shot calls' own. A reply's
 * IDs are checked against earlier replies on the same socket set, so the
 * cross-reply check below holds per channel (one-shot, ID prefetch, UUID
 * prefetch). fw_client_close() must not race with any other call.
 *
 * Fork: a process may fork() with clients open, from any thread, even
 * while other threads are in calls or a refill is in flight. The child's
 * clients start afresh, as if just opened: every ID and UUID buffered
 * before the fork (the pool and every thread's share) stays the parent's
 * alone and is never handed out in the child; the child gets its own
 * sockets (opened on first use), locks and refiller thread (started by its
 * first fw_client_next()), and the layout learnt from INFO is kept; its
 * responder choice starts as a new client's (no probe thread, every
 * responder healthy, no round trip known, a full hedge budget). So a
 * parent and its children (pre-fork servers, multiprocessing) never hand
 * out one ID twice. The handlers (pthread_atfork(), registered by the
 * first fw_client_open()) take each client's lock for the fork itself;
 * they run for fork(), not for vfork(), posix_spawn() or a raw clone(),
 * whose child must exec (or _exit) without calling the client. A fork
 * from opts.cancel, which may run with the client's lock held, deadlocks.
 *
 * Errors: 0 on success or a negative code (fw_err.h; fw_strerror()).
 * Common to the request functions:
 *   FW_ETIMEOUT  the deadline passed without a reply that could be used,
 *                also when the responders only answered NO_LEASE,
 *                CLOCK_UNSAFE or RETRY_AFTER (fw_client_last_error() says
 *                what each responder did, fw_client_last_status() the
 *                last status received);
 *   FW_ESTATUS   a responder answered BAD_REQUEST or BAD_VERSION, or every
 *                responder answered REFUSED (see fw_client_last_status());
 *   FW_EINVALID  a reply failed validation (its IDs are discarded);
 *   FW_ECLOSED   fw_client_shutdown() was called;
 *   -EOPNOTSUPP  (UUID calls) the responder's INFO says it has no UUID7;
 *   -ECANCELED   opts.cancel returned true during a wait;
 *   -EINVAL      a bad argument;
 *   other -errno from the socket calls or getrandom().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_uuid.h"
#include "fw_wire.h"

/* Longest RETRY_AFTER hold-off honoured; a larger retry_after_us is cut to this. */
#define FW_CLIENT_RETRY_AFTER_MAX_US   1000000u
/* Bounds checked by fw_client_open(). */
#define FW_CLIENT_TIMEOUT_MS_MAX       60000u
#define FW_CLIENT_RETRIES_MAX          10u /* no longer checked nor used */
#define FW_CLIENT_HEDGE_MIN_US_MAX     100000u
#define FW_CLIENT_HEDGE_BUDGET_PCT_MAX 100u
#define FW_CLIENT_PREFETCH_MAX         (1u << 20)
#define FW_CLIENT_MAX_AGE_MS_MIN       10u
#define FW_CLIENT_MAX_AGE_MS_MAX       3600000u
/* Longest a wait sleeps between two calls of opts.cancel. */
#define FW_CLIENT_CANCEL_SLICE_MS      10u
/* Distinct (datacenter, worker) pairs whose last ID is remembered; the
 * oldest entry is recycled beyond this, losing only its cross-reply check. */
#define FW_CLIENT_WORKERS_TRACKED      64

struct fw_client;

/*
 * Client options. Always start from fw_client_opts_init(): it sets @size,
 * so fields added later keep their defaults for callers built against an
 * older header.
 */
struct fw_client_opts {
	size_t size;         /* sizeof(struct fw_client_opts), set by fw_client_opts_init() */
	uint32_t timeout_ms; /* each call's deadline, 1..FW_CLIENT_TIMEOUT_MS_MAX; default 1000 */
	uint32_t retries;    /* no longer used: the deadline bounds a call (accepted, ignored) */
	uint32_t prefetch;   /* IDs fetched per refill by fw_client_next(); default 1024 */
	uint32_t low_water;  /* fw_client_next() refills below this many; default 256 */
	bool trusted;        /* do not pad requests (loopback, trusted source); default false */
	bool use_range;      /* prefetch with RANGE requests, else LIST; default true */
	/*
	 * NULL (the default), or asked at least every FW_CLIENT_CANCEL_SLICE_MS
	 * while a call waits (for a reply, a RETRY_AFTER pause, another
	 * thread's refill), and after a signal interrupts the wait: returning
	 * true abandons the wait and the call fails with -ECANCELED. Nothing is
	 * lost or reused: IDs that arrived stay buffered, a reply that comes
	 * later is dropped (its IDs are wasted), and no refill hold-off follows.
	 * For hosts that must stay interruptible (a PostgreSQL backend polls
	 * its pending interrupts here). Called with @cancel_arg, possibly with
	 * the client's lock held: it must be quick and must not call into the
	 * client.
	 */
	bool (*cancel)(void *cancel_arg);
	void *cancel_arg;
	/*
	 * Longest fw_client_next() keeps a prefetched ID before handing it out,
	 * FW_CLIENT_MAX_AGE_MS_MIN..FW_CLIENT_MAX_AGE_MS_MAX; default 1000. An
	 * ID's time is when the responder issued it: a buffer filled long ago
	 * would hand out old times (rows look older than they are, and IDs of
	 * several callers are only k-sorted within this bound). Older IDs are
	 * dropped (wasted, never reused) and fresh ones fetched. The bound is
	 * kept to within the scheduling delay of the client's refiller thread.
	 */
	uint32_t max_age_ms;
	/* Floor of the hedge delay, 0..FW_CLIENT_HEDGE_MIN_US_MAX µs; default 2000. */
	uint32_t hedge_min_us;
	/* Hedges allowed, in % of calls (plus 10 at the start), 0..100; 0: no
	 * hedging at all (not even at the start); default 5. */
	uint32_t hedge_budget_pct;
};

/* Fills *o with the defaults and sets o->size. */
FW_API void fw_client_opts_init(struct fw_client_opts *o);

/*
 * Creates a client for @n responders, tried in the order given.
 *
 * @servers  "HOST:PORT", "HOST", "[IPV6]:PORT", "[IPV6]" or a bare IPv6
 *           address; HOST is a numeric IPv4 address or a host name (its
 *           first address is used; resolving a name may block). The port
 *           defaults to FW_WIRE_DEFAULT_PORT.
 * @opts     NULL for the defaults. opts->size may be smaller than this
 *           header's struct (missing fields take their defaults) or larger
 *           (the unknown tail must be zero).
 * @out      receives the client; untouched on error.
 * Returns 0; -EINVAL (NULL @servers or @out, @n 0, opts->size below
 * sizeof(size_t), an option out of range); -E2BIG (non-zero bytes beyond
 * the fields this library knows); FW_ERESOLVE (an address or port that
 * cannot be parsed or resolved); -ENOMEM (also: the fork handlers could
 * not be registered); -errno from socket().
 */
FW_API int fw_client_open(const char *const *servers, size_t n, const struct fw_client_opts *opts,
			  struct fw_client **out);

/*
 * Ends hand-outs, from any thread, while other threads may still be in
 * calls: every later call returns FW_ECLOSED, buffered IDs included (they
 * are dropped), and calls waiting for a reply or a refill return
 * FW_ECLOSED at once (their sockets are shut down for reading). The other
 * languages' close() is this. NULL or a second call is a no-op.
 */
FW_API void fw_client_shutdown(struct fw_client *c);

/* Stops the client's refiller thread, closes the sockets and frees @c
 * (with every calling thread's buffer). NULL is a no-op. Buffered IDs are
 * lost. No call may be in flight: fw_client_shutdown() first, join the
 * callers; threads that called fw_client_next() may outlive @c. */
FW_API void fw_client_close(struct fw_client *c);

/*
 * Gets one ID with an ID request (no buffering: one round trip).
 * Returns 0 with *id set, or a common error (*id untouched).
 */
FW_API int fw_client_get(struct fw_client *c, uint64_t *id);

/*
 * Gets @n IDs with LIST requests of at most FW_WIRE_LIST_MAX IDs each,
 * asking again while a responder answers with fewer (FW_WIRE_F_PARTIAL).
 * IDs are written in the order received: increasing per responder worker.
 *
 * @got  receives how many IDs were written to @ids, also on error: the
 *       first *got IDs are valid even when the call fails part way.
 * Returns 0 with *got == @n (@n 0 is a no-op), or a common error.
 */
FW_API int fw_client_get_n(struct fw_client *c, uint64_t *ids, size_t n, size_t *got);

/*
 * Gets up to @want IDs (1..FW_WIRE_RANGE_IDS_MAX) as ranges of consecutive
 * IDs (first, first + 1, ..., first + n - 1) with one RANGE request. The
 * responder may answer with fewer IDs (FW_WIRE_F_PARTIAL).
 *
 * @ranges   receives up to @max ranges, in increasing order;
 * @max      at least 1; ranges beyond @max in the reply are dropped (those
 *           IDs are wasted, never reused), so pass FW_WIRE_RANGES_MAX to
 *           keep them all;
 * @nranges  receives the number of ranges written.
 * Returns 0, or a common error (*nranges 0).
 */
FW_API int fw_client_get_range(struct fw_client *c, uint32_t want, struct fw_wire_range *ranges,
			       size_t max, size_t *nranges);

/*
 * Asks the current responder for its INFO (layout, epoch, clock state) and,
 * if the client had no layout yet, adopts a valid one for the ID checks.
 *
 * @info     receives the body;
 * @hdr_out  NULL, or receives the reply header (worker, flags).
 * Returns 0, or a common error (FW_EINVALID is not returned: the body is
 * passed through as sent).
 */
FW_API int fw_client_info(struct fw_client *c, struct fw_wire_info *info,
			  struct fw_wire_hdr *hdr_out);

/*
 * Hands out one ID from the calling thread's own buffer: no lock, no write
 * to memory another thread writes. When it is empty or older than
 * opts.max_age_ms, the thread takes its next share (an eighth of a refill)
 * from the client's pool under the client's lock. A refiller thread, started
 * by the first call, tops the pool up in the background with opts.prefetch
 * IDs (RANGE requests, or LIST without opts.use_range) when fewer than
 * opts.low_water remain; both double (up to 64x; with RANGE up to 1024x,
 * at most 2^20 IDs and 16 ms of a worker's IDs, in whole RANGE requests)
 * while callers drain the
 * pool faster than one refill per round trip, and shrink back when they
 * slow down. Callers wait (on a condition, woken as each reply arrives)
 * only when the pool is empty. RANGE requests are padded for the
 * responder's 2^seq_bits IDs per range (from INFO). A refill is one call
 * (one deadline of timeout_ms, hedging and health as above). If a refill
 * fails while IDs remain, they are still handed out and the next refill may
 * start 10 ms later (health memory makes it fast); a caller waiting on an
 * empty pool waits at most its own timeout_ms (then FW_ETIMEOUT), and one
 * that waited on a refill that failed and left nothing gets that refill's
 * error. The refiller never calls opts.cancel and runs
 * with every signal blocked; it sleeps once no ID has been taken for two
 * maximum ages.
 *
 * Order: per calling thread the IDs are increasing while its refills are
 * answered by one responder worker (a hedged or failed-over refill may come
 * from another worker, and step down); they are unique in any case. Across threads they are
 * not ordered: each holds its own share, so one thread may hand out an ID
 * lower than one another thread handed out earlier (both at most
 * opts.max_age_ms old).
 * Returns 0 with *id set, or (only when the pool is empty and the refill
 * failed) a common error; -EAGAIN or -ENOMEM if the refiller thread cannot
 * be started.
 */
FW_API int fw_client_next(struct fw_client *c, uint64_t *id);

/*
 * Gets @n UUIDv7 (RFC 9562, flakewire's layout: PROTOCOL.md) with UUID7
 * requests of at most FW_WIRE_UUID7_MAX each (one round trip for up to 90),
 * asking again while a responder answers with fewer. Each UUID is 16 bytes
 * in RFC byte order; fw_uuid_format() (fw_uuid.h) writes the canonical
 * 36-character text. UUIDs are checked as IDs are: version 7, variant 10,
 * strictly increasing within a reply and per worker, and (with the layout
 * from INFO) carrying the header's datacenter and worker.
 *
 * @got  receives how many UUIDs were written, also on error.
 * Returns 0 with *got == @n (@n 0 is a no-op), or a common error.
 */
FW_API int fw_client_get_uuid7(struct fw_client *c, uint8_t (*uuids)[FW_UUID_LEN], size_t n,
			       size_t *got);

/*
 * fw_client_next() for UUIDv7: hands out one UUID from a local buffer
 * refilled with opts.prefetch UUIDs (UUID7 requests of up to 90) when fewer
 * than opts.low_water remain, with the same locking, hold-off and errors.
 * The buffer (16 bytes per UUID) is allocated on the first call.
 * Returns 0 with @uuid set, or a common error (-ENOMEM on the first call).
 */
FW_API int fw_client_next_uuid7(struct fw_client *c, uint8_t uuid[FW_UUID_LEN]);

/*
 * Copies into @buf (@cap bytes, NUL-terminated, truncated) what each
 * responder did in the last call that failed with FW_ETIMEOUT, in configured
 * order, e.g. "127.0.0.1:4243: no reply in 80 ms; 127.0.0.1:4244:
 * RETRY_AFTER 900 ms; 127.0.0.1:4245: refused; 127.0.0.1:4246: answered
 * NO_LEASE" ("not asked" for one the call never reached; the last thing
 * each did). Shared by all threads using @c. Returns the text's
 * full length (0 before any timeout).
 */
FW_API size_t fw_client_last_error(struct fw_client *c, char *buf, size_t cap);

/*
 * Status (FW_WIRE_ST_*) of the last reply accepted, FW_WIRE_ST_OK before
 * any: after FW_ESTATUS it says why. Shared by all threads using @c.
 */
FW_API uint8_t fw_client_last_status(struct fw_client *c);

/*
 * Copies the header of the last reply accepted (worker that answered,
 * clock-state flags) to *hdr. Returns 0, or -ENOENT before any reply.
 */
FW_API int fw_client_last_hdr(struct fw_client *c, struct fw_wire_hdr *hdr);

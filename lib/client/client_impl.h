/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/client's private header: the client's structures and the functions
 * its files call in one another (hidden: the library is built with
 * gnu_symbol_visibility 'hidden', so only fw_client.h's FW_API functions
 * are exported; the shared object exports none of them). Their prefix is
 * fwc_, not client_: the static libflakewire-client.a keeps them global, so
 * the name must not clash with a program's own. Not installed.
 *
 * The files and who calls whom (no cycle):
 *   client.c    options, open, shutdown, close -> addr.c, fork.c, prefetch.c,
 *                                                  route.c
 *   fork.c      a forked child's clients start afresh (pthread_atfork)
 *                                               -> prefetch.c, route.c
 *   prefetch.c  fw_client_next(), fw_client_next_uuid7(): slots, pool,
 *               refiller, maximum age           -> exchange.c
 *   exchange.c  requests, INFO layout, the one-shot calls
 *                                               -> route.c, validate.c
 *   route.c     the responder choice: health, hedging, the deadline, the
 *               RTT window, the budget, the probe thread (route.h)
 *                                               -> addr.c
 *   validate.c  checks of an OK reply's IDs and UUIDs
 *   addr.c      address parsing, the per-server socket
 */
#ifndef FW_CLIENT_IMPL_H
#define FW_CLIENT_IMPL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"
#include "fw_time.h"
#include "fw_uuid.h"
#include "route.h"

/* Room for any valid reply (at most FW_WIRE_MTU_PAYLOAD) and some slack, so
 * an oversized datagram is recognised by MSG_TRUNC instead of misparsed. */
#define FW_CLIENT_RX_LEN 2048
#define FW_CLIENT_TX_LEN 2048

#define NS_PER_MS 1000000ull
#define NS_PER_US 1000ull

/*
 * Maximum age: the refiller thread advances c->hot.epoch every
 * max_age / FW_CLIENT_AGE_TICKS while IDs are being taken; IDs fetched at
 * epoch e are handed out while the epoch is below e + FW_CLIENT_AGE_TICKS.
 */
#define FW_CLIENT_AGE_TICKS   4u
/* Ranges a caller's own buffer holds. */
#define FW_CLIENT_SLOT_RANGES 8u

struct fw_client_server {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int fd;
};

struct fw_client_seen {
	uint32_t key; /* datacenter << 16 | worker */
	bool used;
	bool have_uuid;
	uint64_t last_id;
	uint8_t last_uuid[FW_UUID_LEN];
};

/*
 * One request channel: sockets, buffers and the per-worker "last seen"
 * table. Requests on one channel are sequential (its owner holds call_lock
 * or the prefetch buffer's busy flag), so replies on it arrive in issue
 * order and the cross-reply check holds per channel. Channels never share
 * a socket, so no channel reads another's replies.
 */
struct fw_client_io {
	int *fds;        /* per server, opened on first use; NULL: the servers' own fd */
	bool background; /* the refiller thread's: never asks opts.cancel */
	/* background: a wait sleeps at most slice_ns, then calls on_slice(on_slice_arg)
	 * (the refiller ages the slots while it waits for a reply) */
	uint64_t slice_ns;
	void (*on_slice)(void *arg);
	void *on_slice_arg;
	struct fw_client_seen seen[FW_CLIENT_WORKERS_TRACKED];
	unsigned seen_next;
	struct fw_wire_reply reply;
	uint8_t tx[FW_CLIENT_TX_LEN];
	uint8_t rx[FW_CLIENT_RX_LEN];
};

/* IDs in the shared pool: a range and when it was fetched. */
struct fw_client_pr {
	uint64_t first;
	uint64_t n;
	uint64_t epoch; /* c->hot.epoch when it arrived */
	uint64_t at_ns; /* fw_mono_ns() when it arrived */
};

/*
 * One calling thread's own IDs (fw_client_next()'s fast path): written by
 * that thread alone, on cache lines of its own. Lives until the thread
 * exits (the key's destructor) or the client is closed.
 */
struct fw_client_slot {
	alignas(64) struct fw_wire_range r[FW_CLIENT_SLOT_RANGES];
	unsigned head;
	unsigned len;
	uint64_t epoch; /* the oldest range's */
	struct fw_client *c;
	pthread_t owner;
	struct fw_client_slot *next;
};

/* A prefetch buffer with at most one refill in flight, run outside c->lock. */
struct fw_client_pf {
	bool busy;              /* a refill is in flight */
	int last_rc;            /* outcome of the last refill */
	uint64_t gen;           /* refills finished */
	uint64_t hold_until_ns; /* no refill below low_water before this, after a failure */
	uint64_t avail;         /* IDs or UUIDs buffered */
	pthread_cond_t cond;    /* broadcast when IDs arrive or a refill ends */
	struct fw_client_io *io;
	/* IDs (the pool): pr[head .. head + len) of cap, grown as needed */
	struct fw_client_pr *pr;
	/* UUIDs: uuids[head .. head + avail) of pf_cap */
	uint8_t (*uuids)[FW_UUID_LEN];
	size_t cap;
	size_t head;
	size_t len;
};

struct fw_client {
	/* Read by every fw_client_next(), written rarely: a cache line of their own. */
	struct {
		/* fw_client_shutdown() was called: every call returns FW_ECLOSED. */
		alignas(64) atomic_bool closed;
		/* advanced by the refiller every max_age / FW_CLIENT_AGE_TICKS */
		_Atomic uint64_t epoch;
		/* the per-thread slots' key; without one (PTHREAD_KEYS_MAX
		 * reached) fw_client_next() takes from the pool under the lock */
		bool have_key;
		pthread_key_t key;
		uint64_t serial; /* this client among all opened in the process */
	} hot;
	/* Guards everything below but the channels; never held across I/O. */
	alignas(64) pthread_mutex_t lock;
	/* Serialises the one-shot calls, which use @call. */
	pthread_mutex_t call_lock;
	struct fw_client_opts opts;

	struct fw_client_server *srv;
	size_t nsrv;
	/* Which responder each request goes to (its own lock, a leaf). */
	struct fwc_route route;
	/* a server is IPv6: padded requests and replies must fit 1452 bytes (LIST 178) */
	bool ipv6;

	bool have_layout;
	bool info_done;
	uint32_t features; /* INFO features of the responder that gave the layout */
	struct fw_layout layout;

	bool have_hdr;
	struct fw_wire_hdr last_hdr;

	struct fw_client_pf pf; /* fw_client_next(): the pool the slots take from */
	/* The refiller thread (started by the first fw_client_next()). */
	bool refiller_started;
	bool refiller_stop;
	pthread_t refiller;
	pthread_cond_t refiller_cond; /* wakes the refiller (CLOCK_MONOTONIC) */
	bool ticking;                 /* the epoch advances */
	uint64_t next_tick_ns;
	uint64_t tick_ns;     /* max_age / FW_CLIENT_AGE_TICKS */
	unsigned idle_ticks;  /* ticks without a take from the pool */
	uint64_t takes;       /* takes from the pool */
	uint64_t takes_seen;  /* at the last tick */
	uint64_t asks;        /* callers that found the pool empty and asked */
	uint64_t asks_served; /* asks when the last refill started */
	unsigned waiters;     /* callers waiting for an empty pool */
	bool starved;         /* a caller found the pool empty since the last refill */
	uint64_t last_refill_ns;
	uint64_t refill_deadline_ns; /* the deadline of the refill in flight, or the last */
	uint64_t pf_want;            /* IDs per refill now: opts.prefetch, grown while drained */
	uint64_t pf_low;             /* refill below this many: pf_want scaled like low_water */
	/* Every per-thread slot (under slots_lock). */
	struct fw_client_slot *slots;
	struct fw_client *next_client; /* in fw_client_live */
	struct fw_client_pf upf;       /* fw_client_next_uuid7() */

	struct fw_client_io call;
	struct fw_client_io pf_io;
	struct fw_client_io upf_io;
};

/* opts.cancel says to abandon the wait (never asked on the refiller's channel). */
static inline bool cancelled(const struct fw_client *c, const struct fw_client_io *io)
{
	return c->opts.cancel && !(io && io->background) && c->opts.cancel(c->opts.cancel_arg);
}

/* How long one wait may sleep before asking opts.cancel (or, for the
 * refiller, whether the client was closed) again. */
static inline uint64_t wait_slice_ns(const struct fw_client *c, const struct fw_client_io *io,
				     uint64_t ns)
{
	if (io && io->background)
		return FW_MIN(ns, io->slice_ns);
	return c->opts.cancel ? FW_MIN(ns, FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS) : ns;
}

/* The background channel's hook, once per wait slice. */
static inline void wait_slice_done(const struct fw_client_io *io)
{
	if (io && io->on_slice)
		io->on_slice(io->on_slice_arg);
}

/* ---- addr.c ---- */

/*
 * Parses @s ("HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare "V6"; the
 * port defaults to FW_WIRE_DEFAULT_PORT) into srv->addr and srv->addrlen,
 * numeric first, then by name. Returns 0 or FW_ERESOLVE.
 */
int fwc_resolve(const char *s, struct fw_client_server *srv);

/* True when @a is @srv's address and port (IPv4 or IPv6). */
bool fwc_same_addr(const struct sockaddr_storage *a, const struct fw_client_server *srv);

/*
 * A non-blocking UDP socket connected to @srv (an ICMP port unreachable
 * then reads as ECONNREFUSED). Returns the descriptor or -errno.
 */
int fwc_server_socket(const struct fw_client_server *srv);

/* ---- validate.c ---- */

/*
 * Checks the IDs of an OK reply with header @h, given as @n ranges @r,
 * against @asked and the worker the header names (with a known layout),
 * and against what was seen before on @io; records the highest ID on
 * success. Returns 0 or FW_EINVALID.
 */
int fwc_validate(struct fw_client *c, struct fw_client_io *io, const struct fw_wire_hdr *h,
		 const struct fw_wire_range *r, size_t n, uint64_t asked);

/*
 * Checks the @n UUIDs @u of an OK UUID7 reply with header @h (version 7,
 * variant 10, strictly increasing, above the last seen on @io from the same
 * worker; with the layout, the tag and the header's worker) and records the
 * last one on success. Returns 0 or FW_EINVALID.
 */
int fwc_validate_uuids(struct fw_client *c, struct fw_client_io *io, const struct fw_wire_hdr *h,
		       const uint8_t (*u)[FW_UUID_LEN], size_t n, size_t asked);

/* ---- exchange.c ---- */

/*
 * Fetches up to @want IDs on @io with one LIST (@use_range false, @want at
 * most FW_WIRE_LIST_MAX) or RANGE request, learning the layout first, and
 * validates them: on success they are in @r as *n ranges (LIST IDs as
 * ranges of one). @deadline_ns (fw_mono_ns()) is the call's: the INFO and
 * the request share it. Runs without c->lock held. Returns 0, FW_ESTATUS,
 * FW_ETIMEOUT, FW_EINVALID, FW_ECLOSED, -ECANCELED or -errno.
 */
int fwc_fetch(struct fw_client *c, struct fw_client_io *io, bool use_range, uint16_t want,
	      struct fw_wire_range *r, size_t *n, uint64_t deadline_ns);

/* The deadline of a call starting now: now + opts.timeout_ms. */
static inline uint64_t fwc_deadline(const struct fw_client *c)
{
	return fw_mono_ns() + (uint64_t)c->opts.timeout_ms * NS_PER_MS;
}

/*
 * Fetches up to @want (1..FW_WIRE_UUID7_MAX) UUIDs on @io with one UUID7
 * request and validates them: on success they are in io->reply.body.uuids,
 * *n of them. Returns as fwc_fetch(), or -EOPNOTSUPP when the responder
 * says it has no UUID7.
 */
int fwc_fetch_uuids(struct fw_client *c, struct fw_client_io *io, uint16_t want, size_t *n,
		    uint64_t deadline_ns);

/* ---- prefetch.c ---- */

/*
 * Initialises prefetch buffer @p over channel @io for @nsrv servers (the
 * channel's sockets are opened on first use). Returns 0 or -errno; undone
 * by fwc_pf_free() either way.
 */
int fwc_pf_init(struct fw_client_pf *p, struct fw_client_io *io, size_t nsrv);

/*
 * Makes c->pf_io the refiller's channel: it never asks opts.cancel, and it
 * goes on ageing the slots (the epoch's ticks) while it waits for a reply,
 * so a slow refill never lets a slot outlive the maximum age. Needs
 * c->tick_ns.
 */
void fwc_pf_refiller_io(struct fw_client *c);

/* Closes the channel's sockets and frees @p's buffers (@nsrv as given to fwc_pf_init()). */
void fwc_pf_free(struct fw_client_pf *p, size_t nsrv);

/*
 * Makes @c's per-thread slot key and lists @c among the live clients (with
 * its serial), so fw_client_next() can hand out IDs per thread. Without a
 * key (PTHREAD_KEYS_MAX reached) it takes from the pool under the lock.
 */
void fwc_slots_add(struct fw_client *c);

/*
 * Unlists @c and frees its slots: their threads never touch them again (no
 * call may be in flight; the key is deleted, so no destructor runs).
 */
void fwc_slots_free(struct fw_client *c);

/*
 * Takes the client list's lock, then every live client's lock (in that
 * order, the one every path takes them in): before a fork, so that the
 * child copies no half-done update. fwc_clients_unlock() releases them.
 */
void fwc_clients_lock(void);
void fwc_clients_unlock(void);

/* The first live client (->next_client for the next); under fwc_clients_lock(). */
struct fw_client *fwc_clients_live(void);

/*
 * In a forked child, under fwc_clients_lock(): drops @c's pool, UUID buffer
 * and every thread's share (the forking thread keeps its slot, emptied),
 * forgets the parent's refiller, closes the prefetch channels' sockets
 * (opened again on first use) and initialises their conditions again.
 */
void fwc_pf_forked(struct fw_client *c);

/* ---- fork.c ---- */

/*
 * Registers, once per process, the fork handlers that start a child's
 * clients afresh. Returns 0 or -ENOMEM (pthread_atfork() failed).
 */
int fwc_fork_register(void);

#endif /* FW_CLIENT_IMPL_H */

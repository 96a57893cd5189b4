/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"
#include "fw_uuid.h"

/* Room for any valid reply (at most FW_WIRE_MTU_PAYLOAD) and some slack, so
 * an oversized datagram is recognised by MSG_TRUNC instead of misparsed. */
#define FW_CLIENT_RX_LEN 2048
#define FW_CLIENT_TX_LEN 2048

/* UDP payload of one unfragmented IPv6 datagram in a 1500-byte MTU */
static const size_t FW_CLIENT_IPV6_PAYLOAD_MAX = 1452;

#define NS_PER_MS 1000000ull
#define NS_PER_US 1000ull

/*
 * Maximum age: the refiller thread advances c->hot.epoch every
 * max_age / FW_CLIENT_AGE_TICKS while IDs are being taken; IDs fetched at
 * epoch e are handed out while the epoch is below e + FW_CLIENT_AGE_TICKS.
 */
#define FW_CLIENT_AGE_TICKS      4u
/* Ticks without a caller taking from the pool before the refiller stops
 * ticking (every ID buffered is expired by then). */
#define FW_CLIENT_IDLE_TICKS     (2u * FW_CLIENT_AGE_TICKS)
/* Ranges a caller's own buffer holds. */
#define FW_CLIENT_SLOT_RANGES    8u
/* The refill grows up to this many times opts.prefetch (at most
 * FW_CLIENT_PREFETCH_MAX) while callers drain it: FW_CLIENT_GROW_MAX, and
 * with RANGE requests FW_CLIENT_GROW_MAX_RANGE, so that fewer, larger
 * refills leave the CPU to callers taking hundreds of millions a second. */
#define FW_CLIENT_GROW_MAX       64u
#define FW_CLIENT_GROW_MAX_RANGE 1024u
/* Beyond FW_CLIENT_GROW_MAX x opts.prefetch, a refill asks at most this many
 * milliseconds of one worker's IDs (2^seq_bits a millisecond): with the
 * default 12 sequence bits no more than before, so one client never holds a
 * worker's whole ID space for long. */
#define FW_CLIENT_GROW_SEQ_MS    16u

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
	uint64_t at_ns; /* now_ns() when it arrived */
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
	size_t cur;
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
	uint64_t pf_want; /* IDs per refill now: opts.prefetch, grown while drained */
	uint64_t pf_low;  /* refill below this many: pf_want scaled like low_water */
	/* Every per-thread slot (under slots_lock). */
	struct fw_client_slot *slots;
	struct fw_client *next_client; /* in fw_client_live */
	struct fw_client_pf upf;       /* fw_client_next_uuid7() */

	struct fw_client_io call;
	struct fw_client_io pf_io;
	struct fw_client_io upf_io;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_ts(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ull),
		.tv_nsec = (long)(ns % 1000000000ull),
	};
	return ts;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = ns_to_ts(ns);

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* opts.cancel says to abandon the wait (never asked on the refiller's channel). */
static bool cancelled(const struct fw_client *c, const struct fw_client_io *io)
{
	return c->opts.cancel && !(io && io->background) && c->opts.cancel(c->opts.cancel_arg);
}

/* How long one wait may sleep before asking opts.cancel (or, for the
 * refiller, whether the client was closed) again. */
static uint64_t wait_slice_ns(const struct fw_client *c, const struct fw_client_io *io, uint64_t ns)
{
	return c->opts.cancel || (io && io->background)
		       ? FW_MIN(ns, FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS)
		       : ns;
}

/* sleep_ns() in slices that ask opts.cancel. Returns 0, -ECANCELED or FW_ECLOSED. */
static int pause_ns(const struct fw_client *c, const struct fw_client_io *io, uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	for (uint64_t now = now_ns(); now < end; now = now_ns()) {
		if (cancelled(c, io))
			return -ECANCELED;
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		sleep_ns(wait_slice_ns(c, io, end - now));
	}
	return 0;
}

static int new_tag(uint64_t *tag)
{
	ssize_t r;

	do {
		r = getrandom(tag, sizeof(*tag), 0);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	/* getrandom() never returns a short read for 8 bytes. */
	return 0;
}

void fw_client_opts_init(struct fw_client_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->timeout_ms = 200;
	o->retries = 3;
	o->prefetch = 1024;
	o->low_water = 256;
	o->trusted = false;
	o->use_range = true;
	o->max_age_ms = 1000;
}

static int opts_copy(struct fw_client_opts *dst, const struct fw_client_opts *src)
{
	fw_client_opts_init(dst);
	if (!src)
		return 0;
	if (src->size < sizeof(src->size))
		return -EINVAL;
	if (src->size > sizeof(*dst)) {
		const uint8_t *tail = (const uint8_t *)src + sizeof(*dst);

		for (size_t i = 0; i < src->size - sizeof(*dst); i++)
			if (tail[i])
				return -E2BIG;
	}
	memcpy(dst, src, FW_MIN(src->size, sizeof(*dst)));
	dst->size = sizeof(*dst);

	if (dst->timeout_ms < 1 || dst->timeout_ms > FW_CLIENT_TIMEOUT_MS_MAX ||
	    dst->retries > FW_CLIENT_RETRIES_MAX || dst->prefetch < 1 ||
	    dst->prefetch > FW_CLIENT_PREFETCH_MAX || dst->low_water > FW_CLIENT_PREFETCH_MAX ||
	    dst->max_age_ms < FW_CLIENT_MAX_AGE_MS_MIN ||
	    dst->max_age_ms > FW_CLIENT_MAX_AGE_MS_MAX)
		return -EINVAL;
	return 0;
}

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return FW_ERESOLVE;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return FW_ERESOLVE;
	*port = (uint16_t)v;
	return 0;
}

/* Splits "HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare "V6" into @host and @port. */
static int split_host_port(const char *s, char *host, size_t cap, uint16_t *port)
{
	const char *h = s, *p = NULL;
	size_t hlen;

	*port = FW_WIRE_DEFAULT_PORT;
	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return FW_ERESOLVE;
		h = s + 1;
		hlen = (size_t)(close - h);
		if (close[1] == ':')
			p = close + 2;
		else if (close[1])
			return FW_ERESOLVE;
	} else {
		const char *colon = strchr(s, ':');

		/* More than one colon: an IPv6 address without brackets, no port. */
		if (colon && !strchr(colon + 1, ':')) {
			hlen = (size_t)(colon - s);
			p = colon + 1;
		} else {
			hlen = strlen(s);
		}
	}
	if (hlen == 0 || hlen >= cap)
		return FW_ERESOLVE;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	return p ? parse_port(p, port) : 0;
}

static int resolve(const char *s, struct fw_client_server *srv)
{
	char host[256];
	uint16_t port;
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST};
	struct addrinfo *res = NULL;
	int rc;

	if (!s)
		return FW_ERESOLVE;
	rc = split_host_port(s, host, sizeof(host), &port);
	if (rc < 0)
		return rc;
	/* Numeric first, so an address never goes near DNS. */
	if (getaddrinfo(host, NULL, &hints, &res) != 0) {
		hints.ai_flags = 0;
		if (getaddrinfo(host, NULL, &hints, &res) != 0)
			return FW_ERESOLVE;
	}
	rc = FW_ERESOLVE;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&srv->addr;

			memcpy(sin, ai->ai_addr, sizeof(*sin));
			sin->sin_port = htons(port);
			srv->addrlen = sizeof(*sin);
		} else if (ai->ai_family == AF_INET6) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&srv->addr;

			memcpy(sin6, ai->ai_addr, sizeof(*sin6));
			sin6->sin6_port = htons(port);
			srv->addrlen = sizeof(*sin6);
		} else {
			continue;
		}
		rc = 0;
		break;
	}
	freeaddrinfo(res);
	return rc;
}

static bool same_addr(const struct sockaddr_storage *a, const struct fw_client_server *srv)
{
	if (a->ss_family != srv->addr.ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)&srv->addr;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)&srv->addr;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

static int pf_init(struct fw_client_pf *p, struct fw_client_io *io, size_t nsrv)
{
	memset(p, 0, sizeof(*p));
	p->io = io;
	io->fds = malloc(nsrv * sizeof(*io->fds));
	if (!io->fds)
		return -ENOMEM;
	for (size_t i = 0; i < nsrv; i++)
		io->fds[i] = -1;
	return -pthread_cond_init(&p->cond, NULL);
}

static void pf_free(struct fw_client_pf *p, size_t nsrv)
{
	if (p->io && p->io->fds) {
		for (size_t i = 0; i < nsrv; i++)
			if (p->io->fds[i] >= 0)
				close(p->io->fds[i]);
		free(p->io->fds);
		pthread_cond_destroy(&p->cond);
	}
	free(p->pr);
	free(p->uuids);
}

/*
 * Per-thread slots. Their owners take IDs from them without a lock; the
 * lists below are walked only when a thread exits or a client closes.
 * slots_lock guards every client's @slots list and live_clients.
 */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fw_client *live_clients;
static uint64_t clients_opened; /* under slots_lock */

/*
 * The calling thread's last slot, a cache in front of the key: used only
 * when both the client's address and its serial match, so a client opened
 * later at a freed client's address never sees the old slot.
 */
static __thread struct {
	const struct fw_client *c;
	uint64_t serial;
	struct fw_client_slot *s;
} tls_slot;

/*
 * The key's destructor, in an exiting thread. The slot may have been freed
 * by fw_client_close() meanwhile, so it is looked for (by address and
 * owner) in the live clients' lists before it is touched.
 */
static void slot_exit(void *arg)
{
	pthread_mutex_lock(&slots_lock);
	for (struct fw_client *c = live_clients; c; c = c->next_client)
		for (struct fw_client_slot **pp = &c->slots; *pp; pp = &(*pp)->next) {
			struct fw_client_slot *s = *pp;

			if ((void *)s == arg && pthread_equal(s->owner, pthread_self())) {
				*pp = s->next;
				free(s);
				goto out;
			}
		}
out:
	pthread_mutex_unlock(&slots_lock);
}

/* The calling thread's slot of @c, made on first use; NULL without memory or a key. */
static struct fw_client_slot *slot_new(struct fw_client *c)
{
	struct fw_client_slot *s;

	if (!c->hot.have_key)
		return NULL;
	s = aligned_alloc(alignof(struct fw_client_slot), sizeof(*s));
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->owner = pthread_self();
	if (pthread_setspecific(c->hot.key, s) != 0) {
		free(s);
		return NULL;
	}
	pthread_mutex_lock(&slots_lock);
	s->next = c->slots;
	c->slots = s;
	pthread_mutex_unlock(&slots_lock);
	return s;
}

/* Unlists @c and frees its slots: their threads never touch them again
 * (no call may be in flight; the key is deleted, so no destructor runs). */
static void slots_free(struct fw_client *c)
{
	pthread_mutex_lock(&slots_lock);
	for (struct fw_client **pp = &live_clients; *pp; pp = &(*pp)->next_client)
		if (*pp == c) {
			*pp = c->next_client;
			break;
		}
	if (c->hot.have_key)
		pthread_key_delete(c->hot.key);
	while (c->slots) {
		struct fw_client_slot *s = c->slots;

		c->slots = s->next;
		free(s);
	}
	pthread_mutex_unlock(&slots_lock);
}

/*
 * A socket connected to @srv: the kernel then reports an ICMP port
 * unreachable as ECONNREFUSED (a closed port fails over at once, not after
 * the timeouts). One socket per server keeps waits independent of the
 * others; replies are still matched by source address too.
 * Returns the descriptor or -errno.
 */
static int server_socket(const struct fw_client_server *srv)
{
	int fd = socket(srv->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&srv->addr, srv->addrlen) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int fw_client_open(const char *const *servers, size_t n, const struct fw_client_opts *opts,
		   struct fw_client **out)
{
	struct fw_client *c;
	int rc;

	if (!servers || !n || !out)
		return -EINVAL;
	/* sizeof(*c) is a multiple of its 64-byte alignment */
	c = aligned_alloc(alignof(struct fw_client), sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	rc = opts_copy(&c->opts, opts);
	if (rc < 0)
		goto err_free;
	c->srv = calloc(n, sizeof(*c->srv));
	if (!c->srv) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (size_t i = 0; i < n; i++)
		c->srv[i].fd = -1;
	c->nsrv = n;
	for (size_t i = 0; i < n; i++) {
		rc = resolve(servers[i], &c->srv[i]);
		if (rc < 0)
			goto err_close;
		c->ipv6 |= c->srv[i].addr.ss_family == AF_INET6;
		rc = server_socket(&c->srv[i]);
		if (rc < 0)
			goto err_close;
		c->srv[i].fd = rc;
	}

	/*
	 * Refills start below low_water (each range holds at least one ID)
	 * and add at most prefetch IDs, plus one reply's worth of ranges.
	 * The UUID buffer is allocated on first use.
	 */
	rc = pf_init(&c->pf, &c->pf_io, n);
	if (rc == 0)
		rc = pf_init(&c->upf, &c->upf_io, n);
	if (rc < 0)
		goto err_close;
	c->pf.cap = 64;
	c->pf.pr = calloc(c->pf.cap, sizeof(*c->pf.pr));
	if (!c->pf.pr) {
		rc = -ENOMEM;
		goto err_close;
	}
	c->pf_io.background = true;
	c->pf_want = c->opts.prefetch;
	c->pf_low = c->opts.low_water;
	c->tick_ns = (uint64_t)c->opts.max_age_ms * NS_PER_MS / FW_CLIENT_AGE_TICKS;
	rc = -pthread_mutex_init(&c->lock, NULL);
	if (rc == 0) {
		rc = -pthread_mutex_init(&c->call_lock, NULL);
		if (rc < 0)
			pthread_mutex_destroy(&c->lock);
	}
	if (rc == 0) {
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		rc = -pthread_cond_init(&c->refiller_cond, &ca);
		pthread_condattr_destroy(&ca);
		if (rc < 0) {
			pthread_mutex_destroy(&c->call_lock);
			pthread_mutex_destroy(&c->lock);
		}
	}
	if (rc < 0)
		goto err_close;
	/* Without a key (PTHREAD_KEYS_MAX reached) fw_client_next() takes from
	 * the pool under the lock: slower, the same IDs. */
	c->hot.have_key = pthread_key_create(&c->hot.key, slot_exit) == 0;
	pthread_mutex_lock(&slots_lock);
	c->hot.serial = ++clients_opened;
	c->next_client = live_clients;
	live_clients = c;
	pthread_mutex_unlock(&slots_lock);
	*out = c;
	return 0;

err_close:
	pf_free(&c->pf, n);
	pf_free(&c->upf, n);
	for (size_t i = 0; i < n; i++)
		if (c->srv[i].fd >= 0)
			close(c->srv[i].fd);
err_free:
	free(c->srv);
	free(c);
	return rc;
}

void fw_client_close(struct fw_client *c)
{
	if (!c)
		return;
	fw_client_shutdown(c);
	pthread_mutex_lock(&c->lock);
	c->refiller_stop = true;
	pthread_cond_signal(&c->refiller_cond);
	pthread_mutex_unlock(&c->lock);
	if (c->refiller_started)
		pthread_join(c->refiller, NULL);
	slots_free(c);
	for (size_t i = 0; i < c->nsrv; i++)
		close(c->srv[i].fd);
	pf_free(&c->pf, c->nsrv);
	pf_free(&c->upf, c->nsrv);
	pthread_cond_destroy(&c->refiller_cond);
	pthread_mutex_destroy(&c->call_lock);
	pthread_mutex_destroy(&c->lock);
	free(c->srv);
	free(c);
}

/* The channel's socket to server @s, opened on first use (under c->lock,
 * which fw_client_shutdown() reads them under). Returns it or -errno. */
static int io_fd(struct fw_client *c, struct fw_client_io *io, size_t s)
{
	int fd;

	if (!io->fds)
		return c->srv[s].fd;
	pthread_mutex_lock(&c->lock);
	if (io->fds[s] < 0) {
		fd = server_socket(&c->srv[s]);
		if (fd >= 0)
			io->fds[s] = fd;
	}
	fd = io->fds[s] >= 0 ? io->fds[s] : fd;
	pthread_mutex_unlock(&c->lock);
	return fd;
}

/* Ends every wait on @fd (poll reports it readable, reads return 0). */
static void wake_fd(int fd)
{
	if (fd >= 0)
		shutdown(fd, SHUT_RD);
}

void fw_client_shutdown(struct fw_client *c)
{
	if (!c || atomic_exchange(&c->hot.closed, true))
		return;
	pthread_mutex_lock(&c->lock);
	c->pf.avail = c->pf.head = c->pf.len = 0;
	c->upf.avail = c->upf.head = 0;
	pthread_cond_signal(&c->refiller_cond);
	pthread_cond_broadcast(&c->pf.cond);
	pthread_cond_broadcast(&c->upf.cond);
	for (size_t i = 0; i < c->nsrv; i++) {
		wake_fd(c->srv[i].fd);
		wake_fd(c->pf_io.fds ? c->pf_io.fds[i] : -1);
		wake_fd(c->upf_io.fds ? c->upf_io.fds[i] : -1);
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * Waits until @deadline for the reply to (@op, @tag) from @srv on @fd into
 * io->reply, in slices that ask opts.cancel. Returns 0, FW_ETIMEOUT,
 * -ECONNREFUSED (ICMP port unreachable), FW_ECLOSED (the client was shut
 * down), -ECANCELED (opts.cancel said so) or -errno.
 */
static int await_reply(const struct fw_client *c, struct fw_client_io *io, int fd,
		       const struct fw_client_server *srv, uint8_t op, uint64_t tag,
		       uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns();
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct timespec ts;
		int n;

		if (cancelled(c, io))
			return -ECANCELED;
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		if (now >= deadline)
			return FW_ETIMEOUT;
		ts = ns_to_ts(wait_slice_ns(c, io, deadline - now));
		n = ppoll(&pfd, 1, &ts, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			continue; /* the slice or the deadline passed: checked above */

		for (;;) {
			struct sockaddr_storage from;
			socklen_t fromlen = sizeof(from);
			ssize_t len;
			int rc;

			if (atomic_load(&c->hot.closed))
				return FW_ECLOSED;
			len = recvfrom(fd, io->rx, sizeof(io->rx), MSG_TRUNC,
				       (struct sockaddr *)&from, &fromlen);
			if (len < 0 && errno == EINTR)
				continue;
			if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (len < 0)
				return -errno;
			if ((size_t)len > sizeof(io->rx) || !same_addr(&from, srv))
				continue;
			rc = fw_wire_parse_reply(io->rx, (size_t)len, &io->reply);
			if (rc == FW_EWIRE_VERSION && io->reply.hdr.tag == tag) {
				/* A responder speaking another version says so in
				 * its own: surface it as the status it means. */
				io->reply.hdr.status = FW_WIRE_ST_BAD_VERSION;
				return 0;
			}
			if (rc < 0 || io->reply.hdr.tag != tag ||
			    (io->reply.hdr.op & ~FW_WIRE_OP_REPLY) != op)
				continue;
			return 0;
		}
	}
}

/* A status that says "this responder cannot issue now; another may". */
static bool ask_another(uint8_t status)
{
	return status == FW_WIRE_ST_CLOCK_UNSAFE || status == FW_WIRE_ST_NO_LEASE;
}

/*
 * One request/reply exchange on channel @io with retries, RETRY_AFTER and
 * failover: on a timeout after the retries, on RETRY_AFTER at every
 * attempt, and at once on CLOCK_UNSAFE or NO_LEASE, the next responder is
 * asked. Runs without c->lock held (it takes it briefly).
 * Returns 0 with an OK reply of @op in io->reply, FW_ESTATUS (io->reply
 * holds the error status: the last one received when every responder was
 * asked), FW_ETIMEOUT or -errno.
 */
static int exchange(struct fw_client *c, struct fw_client_io *io, uint8_t op, uint16_t count)
{
	bool answered = false; /* some responder sent a status that moved us on */
	struct fw_wire_hdr last_status = {0};
	unsigned seq_bits = 12;
	uint64_t tag;
	size_t cur;
	int len, rc;

	if (atomic_load(&c->hot.closed))
		return FW_ECLOSED;
	/* Fewer IDs, never a fragment, when a server is IPv6 (the reply says how many
	 * came). A RANGE's count is IDs; its reply is at most FW_WIRE_RANGES_MAX ranges
	 * (216 bytes), which fits: only lists of IDs or UUIDs shrink. */
	while (c->ipv6 && count > 1 && op != FW_WIRE_OP_RANGE &&
	       fw_wire_reply_size(op, count) > FW_CLIENT_IPV6_PAYLOAD_MAX)
		count--;
	/* One tag for all attempts: a late reply to an earlier attempt of
	 * this request is as good as the latest one. */
	rc = new_tag(&tag);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	cur = c->cur;
	if (c->have_layout)
		seq_bits = c->layout.seq_bits;
	pthread_mutex_unlock(&c->lock);
	/* RANGE pads for 2^seq_bits IDs per range once INFO told us the layout. */
	len = fw_wire_write_request_len(
		io->tx, sizeof(io->tx), op, count, tag,
		c->opts.trusted ? 0 : fw_wire_request_size_seq(op, count, seq_bits));
	if (len < 0)
		return len;

	for (size_t s = 0; s < c->nsrv; s++) {
		const struct fw_client_server *srv = &c->srv[cur];
		int fd = io_fd(c, io, cur);

		if (fd < 0)
			return fd;
		for (uint32_t a = 0; a <= c->opts.retries; a++) {
			uint64_t wait = (uint64_t)c->opts.timeout_ms * NS_PER_MS << a;
			ssize_t sent;

			do {
				sent = send(fd, io->tx, (size_t)len, 0);
			} while (sent < 0 && errno == EINTR);
			/* Refused, unreachable or unroutable: the next server may do better. */
			if (sent < 0 && atomic_load(&c->hot.closed))
				return FW_ECLOSED;
			if (sent < 0)
				break;

			rc = await_reply(c, io, fd, srv, op, tag, now_ns() + wait);
			if (rc == FW_ETIMEOUT)
				continue;
			/* Port closed (ICMP port unreachable): no resend, fail over. */
			if (rc == -ECONNREFUSED)
				break;
			if (rc < 0)
				return rc;

			pthread_mutex_lock(&c->lock);
			c->last_hdr = io->reply.hdr;
			c->have_hdr = true;
			pthread_mutex_unlock(&c->lock);
			if (io->reply.hdr.status == FW_WIRE_ST_OK)
				return 0;
			if (ask_another(io->reply.hdr.status) ||
			    io->reply.hdr.status == FW_WIRE_ST_RETRY_AFTER) {
				answered = true;
				last_status = io->reply.hdr;
			}
			/* No resend: this responder said it cannot issue; the next may. */
			if (ask_another(io->reply.hdr.status))
				break;
			if (io->reply.hdr.status != FW_WIRE_ST_RETRY_AFTER)
				return FW_ESTATUS;
			rc = pause_ns(c, io,
				      (uint64_t)FW_MIN(io->reply.hdr.retry_after_us,
						       FW_CLIENT_RETRY_AFTER_MAX_US) *
					      NS_PER_US);
			if (rc < 0)
				return rc;
		}
		/* Fail over, unless another channel already moved on from @cur. */
		pthread_mutex_lock(&c->lock);
		if (c->cur == cur)
			c->cur = (cur + 1) % c->nsrv;
		cur = c->cur;
		pthread_mutex_unlock(&c->lock);
	}
	if (!answered)
		return FW_ETIMEOUT;
	/* io->reply may since hold a stray datagram that failed the match. */
	io->reply.hdr = last_status;
	return FW_ESTATUS;
}

/* Adopts the layout and features of an INFO body if the client has none. Under c->lock. */
static void adopt_info(struct fw_client *c, const struct fw_wire_info *in)
{
	struct fw_layout l = {
		.epoch_ms = in->epoch_ms,
		.time_bits = in->time_bits,
		.dc_bits = in->dc_bits,
		.worker_bits = in->worker_bits,
		.seq_bits = in->seq_bits,
	};

	if (!c->have_layout && fw_layout_validate(&l, 0) == 0) {
		c->layout = l;
		c->features = in->features;
		c->have_layout = true;
		c->info_done = true;
	}
}

/*
 * Learns the layout before the first ID request so IDs can be checked
 * against the worker the header names. A responder that cannot answer
 * INFO only costs that check; one that is silent fails the caller too.
 */
static int ensure_layout(struct fw_client *c, struct fw_client_io *io)
{
	bool done;
	int rc;

	pthread_mutex_lock(&c->lock);
	done = c->info_done;
	pthread_mutex_unlock(&c->lock);
	if (done)
		return 0;
	rc = exchange(c, io, FW_WIRE_OP_INFO, 0);
	/* Busy or unable to issue everywhere: the layout may still come later. */
	if (rc < 0 && (rc != FW_ESTATUS || io->reply.hdr.status == FW_WIRE_ST_RETRY_AFTER ||
		       ask_another(io->reply.hdr.status)))
		return rc;
	pthread_mutex_lock(&c->lock);
	if (rc == 0)
		adopt_info(c, &io->reply.body.info);
	c->info_done = true;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* A copy of the layout, taken under the lock; false when none is known. */
static bool get_layout(struct fw_client *c, struct fw_layout *l)
{
	bool have;

	pthread_mutex_lock(&c->lock);
	have = c->have_layout;
	*l = c->layout;
	pthread_mutex_unlock(&c->lock);
	return have;
}

static struct fw_client_seen *seen_get(struct fw_client_io *io, uint32_t key, bool *fresh)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(io->seen); i++)
		if (io->seen[i].used && io->seen[i].key == key) {
			*fresh = false;
			return &io->seen[i];
		}
	*fresh = true;
	return &io->seen[io->seen_next];
}

static void seen_commit(struct fw_client_io *io, struct fw_client_seen *s, uint32_t key, bool fresh)
{
	if (fresh) {
		io->seen_next = (io->seen_next + 1) % FW_ARRAY_SIZE(io->seen);
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->key = key;
	}
}

static bool id_from_worker(const struct fw_layout *l, uint64_t id, const struct fw_wire_hdr *h)
{
	struct fw_id_parts p;

	if (!l)
		return true;
	if (fw_layout_decode(l, id, &p) < 0)
		return false;
	return p.datacenter == h->datacenter && p.worker == h->worker;
}

/*
 * Checks the IDs of an OK reply, given as @n ranges, against what was
 * asked and what was seen before on @io, and records the highest ID on
 * success. Returns 0 or FW_EINVALID.
 */
static int validate(struct fw_client *c, struct fw_client_io *io, const struct fw_wire_hdr *h,
		    const struct fw_wire_range *r, size_t n, uint64_t asked)
{
	uint32_t key = (uint32_t)h->datacenter << 16 | h->worker;
	struct fw_layout layout;
	const struct fw_layout *l = get_layout(c, &layout) ? &layout : NULL;
	struct fw_client_seen *seen;
	uint64_t total = 0, prev = 0;
	bool fresh;

	if (n == 0)
		return FW_EINVALID;
	for (size_t i = 0; i < n; i++) {
		uint64_t last;

		if (r[i].n == 0 || r[i].first == 0 || r[i].first > INT64_MAX ||
		    r[i].n - 1 > INT64_MAX - r[i].first)
			return FW_EINVALID;
		last = r[i].first + r[i].n - 1;
		if (i > 0 && r[i].first <= prev)
			return FW_EINVALID;
		if (!id_from_worker(l, r[i].first, h) || !id_from_worker(l, last, h))
			return FW_EINVALID;
		prev = last;
		total += r[i].n;
	}
	if (total > asked)
		return FW_EINVALID;

	seen = seen_get(io, key, &fresh);
	if (!fresh && seen->last_id != 0 && r[0].first <= seen->last_id)
		return FW_EINVALID;
	seen_commit(io, seen, key, fresh);
	seen->last_id = prev;
	return 0;
}

/*
 * Checks the @n UUIDs of an OK UUID7 reply: version 7, variant 10, strictly
 * increasing, above the last one seen on @io from the same worker, and,
 * with the layout, carrying the tag and the worker the header names.
 * Returns 0 or FW_EINVALID.
 */
static int validate_uuids(struct fw_client *c, struct fw_client_io *io, const struct fw_wire_hdr *h,
			  const uint8_t (*u)[FW_UUID_LEN], size_t n, size_t asked)
{
	uint32_t key = (uint32_t)h->datacenter << 16 | h->worker;
	struct fw_layout layout;
	bool have = get_layout(c, &layout);
	struct fw_client_seen *seen;
	bool fresh;

	if (n == 0 || n > asked)
		return FW_EINVALID;
	for (size_t i = 0; i < n; i++) {
		struct fw_uuid7_parts p;

		fw_uuid7_decode(have ? &layout : NULL, u[i], &p);
		if (!p.is_v7)
			return FW_EINVALID;
		if (have &&
		    (!p.flakewire || p.datacenter != h->datacenter || p.worker != h->worker))
			return FW_EINVALID;
		if (i > 0 && fw_uuid_cmp(u[i - 1], u[i]) >= 0)
			return FW_EINVALID;
	}
	seen = seen_get(io, key, &fresh);
	if (!fresh && seen->have_uuid && fw_uuid_cmp(seen->last_uuid, u[0]) >= 0)
		return FW_EINVALID;
	seen_commit(io, seen, key, fresh);
	memcpy(seen->last_uuid, u[n - 1], FW_UUID_LEN);
	seen->have_uuid = true;
	return 0;
}

/*
 * Fetches up to @want IDs on @io with one LIST (@use_range false, @want at
 * most FW_WIRE_LIST_MAX) or RANGE request and validates them. On success
 * the IDs are in @r as *n ranges (LIST IDs as ranges of one).
 */
static int fetch(struct fw_client *c, struct fw_client_io *io, bool use_range, uint16_t want,
		 struct fw_wire_range *r, size_t *n)
{
	const struct fw_wire_reply *rep = &io->reply;
	int rc;

	*n = 0;
	rc = ensure_layout(c, io);
	if (rc < 0)
		return rc;
	rc = exchange(c, io, use_range ? FW_WIRE_OP_RANGE : FW_WIRE_OP_LIST, want);
	if (rc < 0)
		return rc;
	if (use_range) {
		if (rep->hdr.count > FW_WIRE_RANGES_MAX)
			return FW_EINVALID;
		memcpy(r, rep->body.ranges, rep->hdr.count * sizeof(*r));
	} else {
		if (rep->hdr.count > FW_WIRE_LIST_MAX)
			return FW_EINVALID;
		for (size_t i = 0; i < rep->hdr.count; i++) {
			r[i].first = rep->body.ids[i];
			r[i].n = 1;
		}
	}
	rc = validate(c, io, &rep->hdr, r, rep->hdr.count, want);
	if (rc < 0)
		return rc;
	*n = rep->hdr.count;
	return 0;
}

/*
 * Fetches up to @want (1..FW_WIRE_UUID7_MAX) UUIDs on @io with one UUID7
 * request; on success they are in io->reply.body.uuids, *n of them.
 */
static int fetch_uuids(struct fw_client *c, struct fw_client_io *io, uint16_t want, size_t *n)
{
	const struct fw_wire_reply *rep = &io->reply;
	bool known, lacks;
	int rc;

	*n = 0;
	rc = ensure_layout(c, io);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	known = c->have_layout;
	lacks = known && !(c->features & FW_WIRE_INFO_F_UUID7);
	pthread_mutex_unlock(&c->lock);
	if (lacks)
		return -EOPNOTSUPP;
	rc = exchange(c, io, FW_WIRE_OP_UUID7, want);
	if (rc < 0)
		return rc;
	rc = validate_uuids(c, io, &rep->hdr, (const uint8_t(*)[FW_UUID_LEN])rep->body.uuids,
			    rep->hdr.count, want);
	if (rc < 0)
		return rc;
	*n = rep->hdr.count;
	return 0;
}

int fw_client_get(struct fw_client *c, uint64_t *id)
{
	struct fw_wire_range r;
	int rc;

	if (!c || !id)
		return -EINVAL;
	pthread_mutex_lock(&c->call_lock);
	rc = ensure_layout(c, &c->call);
	if (rc == 0)
		rc = exchange(c, &c->call, FW_WIRE_OP_ID, 1);
	if (rc == 0) {
		if (c->call.reply.hdr.count != 1) {
			rc = FW_EINVALID;
		} else {
			r.first = c->call.reply.body.ids[0];
			r.n = 1;
			rc = validate(c, &c->call, &c->call.reply.hdr, &r, 1, 1);
		}
	}
	if (rc == 0)
		*id = r.first;
	pthread_mutex_unlock(&c->call_lock);
	return rc;
}

int fw_client_get_n(struct fw_client *c, uint64_t *ids, size_t n, size_t *got)
{
	struct fw_wire_range r[FW_WIRE_LIST_MAX];
	size_t done = 0;
	int rc = 0;

	if (got)
		*got = 0;
	if (!c || !got || (!ids && n))
		return -EINVAL;
	pthread_mutex_lock(&c->call_lock);
	while (done < n) {
		size_t nr;

		rc = fetch(c, &c->call, false, (uint16_t)FW_MIN(n - done, FW_WIRE_LIST_MAX), r,
			   &nr);
		if (rc < 0)
			break;
		for (size_t i = 0; i < nr; i++)
			ids[done++] = r[i].first;
	}
	pthread_mutex_unlock(&c->call_lock);
	*got = done;
	return rc;
}

int fw_client_get_range(struct fw_client *c, uint32_t want, struct fw_wire_range *ranges,
			size_t max, size_t *nranges)
{
	struct fw_wire_range r[FW_WIRE_RANGES_MAX];
	size_t n = 0;
	int rc;

	if (nranges)
		*nranges = 0;
	if (!c || !ranges || !nranges || max == 0 || want == 0 || want > FW_WIRE_RANGE_IDS_MAX)
		return -EINVAL;
	pthread_mutex_lock(&c->call_lock);
	rc = fetch(c, &c->call, true, (uint16_t)want, r, &n);
	pthread_mutex_unlock(&c->call_lock);
	if (rc < 0)
		return rc;
	n = FW_MIN(n, max);
	memcpy(ranges, r, n * sizeof(*r));
	*nranges = n;
	return 0;
}

int fw_client_get_uuid7(struct fw_client *c, uint8_t (*uuids)[FW_UUID_LEN], size_t n, size_t *got)
{
	size_t done = 0;
	int rc = 0;

	if (got)
		*got = 0;
	if (!c || !got || (!uuids && n))
		return -EINVAL;
	pthread_mutex_lock(&c->call_lock);
	while (done < n) {
		size_t nr;

		rc = fetch_uuids(c, &c->call, (uint16_t)FW_MIN(n - done, FW_WIRE_UUID7_MAX), &nr);
		if (rc < 0)
			break;
		memcpy(uuids + done, c->call.reply.body.uuids, nr * FW_UUID_LEN);
		done += nr;
	}
	pthread_mutex_unlock(&c->call_lock);
	*got = done;
	return rc;
}

int fw_client_info(struct fw_client *c, struct fw_wire_info *info, struct fw_wire_hdr *hdr_out)
{
	int rc;

	if (!c || !info)
		return -EINVAL;
	pthread_mutex_lock(&c->call_lock);
	rc = exchange(c, &c->call, FW_WIRE_OP_INFO, 0);
	if (rc == 0) {
		*info = c->call.reply.body.info;
		if (hdr_out)
			*hdr_out = c->call.reply.hdr;
		pthread_mutex_lock(&c->lock);
		adopt_info(c, info);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->call_lock);
	return rc;
}

/* The UUID counterpart of refill_ids(). */
static int refill_uuids(struct fw_client *c, struct fw_client_pf *p)
{
	const struct fw_wire_reply *rep = &p->io->reply;
	uint64_t fetched = 0;

	while (fetched < c->opts.prefetch) {
		uint64_t want = FW_MIN(c->opts.prefetch - fetched, FW_WIRE_UUID7_MAX);
		size_t n;
		int rc;

		rc = fetch_uuids(c, p->io, (uint16_t)want, &n);
		if (rc < 0)
			return rc;
		fetched += n;
		pthread_mutex_lock(&c->lock);
		if (atomic_load(&c->hot.closed)) {
			pthread_mutex_unlock(&c->lock);
			return FW_ECLOSED;
		}
		if (p->head + p->avail + n > p->cap) {
			memmove(p->uuids, p->uuids + p->head, p->avail * FW_UUID_LEN);
			p->head = 0;
		}
		n = FW_MIN(n, p->cap - p->head - p->avail); /* capacity holds: a no-op */
		memcpy(p->uuids + p->head + p->avail, rep->body.uuids, n * FW_UUID_LEN);
		p->avail += n;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&c->lock);
	}
	return 0;
}

/*
 * The prefetching loop shared by fw_client_next() and fw_client_next_uuid7():
 * takes one item into @out, refilling outside c->lock when the buffer runs
 * low. One refill is in flight at a time; other callers keep taking from
 * the buffer, and wait on p->cond only when it is empty. Called and
 * returns with c->lock held.
 */
static int pf_next(struct fw_client *c, struct fw_client_pf *p,
		   int (*refill)(struct fw_client *, struct fw_client_pf *),
		   void (*take)(struct fw_client_pf *, void *), void *out)
{
	uint64_t gen0 = p->gen;

	for (;;) {
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		bool low = p->avail == 0 ||
			   (p->avail < c->opts.low_water && now_ns() >= p->hold_until_ns);

		if (low && !p->busy) {
			int rc;

			/* A refill finished while this caller waited and left nothing: its error.
			 */
			if (p->avail == 0 && p->gen != gen0 && p->last_rc < 0)
				return p->last_rc;
			p->busy = true;
			pthread_mutex_unlock(&c->lock);
			rc = refill(c, p);
			pthread_mutex_lock(&c->lock);
			p->busy = false;
			p->gen++;
			p->last_rc = rc;
			gen0 = p->gen;
			/* A cancelled wait says nothing about the responders: no hold-off. */
			if (rc < 0 && rc != -ECANCELED)
				p->hold_until_ns =
					now_ns() + ((uint64_t)c->opts.timeout_ms * NS_PER_MS
						    << c->opts.retries);
			pthread_cond_broadcast(&p->cond);
			if (p->avail == 0 && rc < 0)
				return rc;
		}
		if (p->avail > 0) {
			take(p, out);
			return 0;
		}
		if (p->busy && !c->opts.cancel) {
			pthread_cond_wait(&p->cond, &c->lock);
		} else if (p->busy) {
			struct timespec ts;

			if (cancelled(c, NULL))
				return -ECANCELED;
			/* p->cond runs on CLOCK_REALTIME (default attributes) */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p->cond, &c->lock, &ts);
		}
	}
}

static void take_uuid(struct fw_client_pf *p, void *out)
{
	memcpy(out, p->uuids[p->head], FW_UUID_LEN);
	p->head++;
	p->avail--;
}

/* ---- fw_client_next(): per-thread slots over a pool refilled in the background ---- */

/* Room for @n more ranges at the pool's tail: compacts, then grows. Under c->lock. */
static bool pool_room(struct fw_client_pf *p, size_t n)
{
	struct fw_client_pr *q;
	size_t cap;

	if (p->head + p->len + n <= p->cap)
		return true;
	if (p->head) {
		memmove(p->pr, p->pr + p->head, p->len * sizeof(*p->pr));
		p->head = 0;
	}
	if (p->len + n <= p->cap)
		return true;
	cap = p->cap * 2 > p->len + n ? p->cap * 2 : p->len + n;
	q = realloc(p->pr, cap * sizeof(*p->pr));
	if (!q)
		return false;
	p->pr = q;
	p->cap = cap;
	return true;
}

/* Appends @n validated ranges to the pool, stamped with the epoch and the
 * time. Under c->lock. */
static void pool_put(struct fw_client *c, const struct fw_wire_range *r, size_t n)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t epoch = atomic_load(&c->hot.epoch), now = now_ns();

	if (!pool_room(p, n))
		return; /* no memory: these IDs are wasted, never reused */
	for (size_t i = 0; i < n; i++) {
		struct fw_client_pr *tail = p->len ? &p->pr[p->head + p->len - 1] : NULL;

		/* LIST replies are mostly consecutive IDs: store them as runs. */
		if (tail && tail->epoch == epoch && tail->first + tail->n == r[i].first)
			tail->n += r[i].n;
		else
			p->pr[p->head + p->len++] = (struct fw_client_pr){
				.first = r[i].first, .n = r[i].n, .epoch = epoch, .at_ns = now};
		p->avail += r[i].n;
	}
}

/* Drops the pool's IDs older than max_age (by the epoch or the clock). Under c->lock. */
static void pool_drop_expired(struct fw_client *c, uint64_t now)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t epoch = atomic_load(&c->hot.epoch);
	uint64_t max_ns = (uint64_t)c->opts.max_age_ms * NS_PER_MS;

	while (p->len) {
		const struct fw_client_pr *h = &p->pr[p->head];

		if (h->epoch + FW_CLIENT_AGE_TICKS > epoch && now - h->at_ns < max_ns)
			break;
		p->avail -= h->n;
		p->head++;
		p->len--;
	}
}

/* Moves up to pf_want / 8 IDs (one caller's share) from the pool to @s. Under c->lock. */
static void slot_fill(struct fw_client *c, struct fw_client_slot *s)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t want = FW_MIN(c->pf_want / 8, FW_WIRE_RANGE_IDS_MAX);

	if (want == 0)
		want = 1;
	s->head = s->len = 0;
	s->epoch = UINT64_MAX;
	while (want && p->len && s->len < FW_CLIENT_SLOT_RANGES) {
		struct fw_client_pr *h = &p->pr[p->head];
		uint64_t k = FW_MIN(want, h->n);

		s->r[s->len++] = (struct fw_wire_range){.first = h->first, .n = (uint32_t)k};
		s->epoch = FW_MIN(s->epoch, h->epoch);
		h->first += k;
		h->n -= k;
		p->avail -= k;
		want -= k;
		if (h->n == 0) {
			p->head++;
			p->len--;
		}
	}
}

static inline uint64_t slot_take(struct fw_client_slot *s)
{
	struct fw_wire_range *r = &s->r[s->head];
	uint64_t id = r->first++;

	if (--r->n == 0) {
		s->head++;
		s->len--;
	}
	return id;
}

/*
 * Fetches @want IDs into the pool on the refiller's channel, without
 * c->lock: each reply's IDs join the pool (and waiters are woken) as it
 * arrives, and stay there if a later request of the refill fails.
 */
static int refill_ids(struct fw_client *c, uint64_t want)
{
	struct fw_wire_range r[FW_WIRE_LIST_MAX];
	bool use_range = c->opts.use_range;
	uint32_t per_req = use_range ? FW_WIRE_RANGE_IDS_MAX : FW_WIRE_LIST_MAX;
	uint64_t fetched = 0;

	while (fetched < want) {
		size_t n;
		int rc;

		rc = fetch(c, &c->pf_io, use_range, (uint16_t)FW_MIN(want - fetched, per_req), r,
			   &n);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < n; i++)
			fetched += r[i].n;
		pthread_mutex_lock(&c->lock);
		if (atomic_load(&c->hot.closed)) {
			pthread_mutex_unlock(&c->lock);
			return FW_ECLOSED;
		}
		pool_put(c, r, n);
		pthread_cond_broadcast(&c->pf.cond);
		pthread_mutex_unlock(&c->lock);
	}
	return 0;
}

/*
 * One refill of pf_want IDs, run by the refiller. Called and returns with
 * c->lock held; drops it for the round trips. The size adapts as Leaf's
 * segments do: doubled (up to FW_CLIENT_GROW_MAX x opts.prefetch, or with
 * RANGE and a known layout up to FW_CLIENT_GROW_MAX_RANGE x opts.prefetch
 * and FW_CLIENT_GROW_SEQ_MS of a worker's IDs; never over
 * FW_CLIENT_PREFETCH_MAX) when a caller found the pool empty since the last refill, halved (down to
 * opts.prefetch) when the last one lasted more than half the maximum age;
 * at the largest size, the low-water mark doubles instead (up to two
 * refills), so that one refill is always in flight while callers drain.
 */
static void refill_once(struct fw_client *c)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t start = now_ns();
	uint64_t cap = (uint64_t)c->opts.prefetch * FW_CLIENT_GROW_MAX;
	uint64_t want;
	int rc;

	if (c->opts.use_range && c->have_layout)
		cap = FW_MAX(cap, FW_MIN((uint64_t)c->opts.prefetch * FW_CLIENT_GROW_MAX_RANGE,
					 (1ull << c->layout.seq_bits) * FW_CLIENT_GROW_SEQ_MS));
	cap = FW_MIN(cap, FW_CLIENT_PREFETCH_MAX);
	cap = FW_MAX(cap, c->opts.prefetch);
	if (p->gen > 0 && c->starved && c->pf_want < cap) {
		c->pf_want = FW_MIN(c->pf_want * 2, cap);
		c->pf_low = c->pf_want * c->opts.low_water / c->opts.prefetch;
	} else if (p->gen > 0 && c->starved) {
		/* At the largest refill: start earlier, up to one refill always in flight. */
		c->pf_low = FW_MIN(FW_MAX(c->pf_low * 2, 1), 2 * c->pf_want);
	} else if (p->gen > 0 &&
		   start - c->last_refill_ns > (uint64_t)c->opts.max_age_ms * NS_PER_MS / 2) {
		c->pf_want = FW_MAX(c->pf_want / 2, c->opts.prefetch);
		c->pf_low = c->pf_want * c->opts.low_water / c->opts.prefetch;
	}
	c->last_refill_ns = start;
	c->starved = false;
	c->asks_served = c->asks;
	p->busy = true;
	/* Whole RANGE requests: 65,536 IDs would take a second round trip for one. */
	want = c->pf_want;
	if (c->opts.use_range && want > FW_WIRE_RANGE_IDS_MAX)
		want -= want % FW_WIRE_RANGE_IDS_MAX;
	pthread_mutex_unlock(&c->lock);
	rc = refill_ids(c, want);
	pthread_mutex_lock(&c->lock);
	p->busy = false;
	p->gen++;
	p->last_rc = rc;
	/* Callers that asked meanwhile take from this refill, or get its error. */
	c->asks_served = c->asks;
	/* A failed refill holds the next one off (callers with nothing left still ask). */
	p->hold_until_ns =
		rc < 0 ? now_ns() + ((uint64_t)c->opts.timeout_ms * NS_PER_MS << c->opts.retries)
		       : 0;
	pthread_cond_broadcast(&p->cond);
}

/* The absolute CLOCK_MONOTONIC time @ns as a timespec, for refiller_cond. */
static void refiller_wait(struct fw_client *c, uint64_t until_ns)
{
	struct timespec ts;

	if (until_ns == UINT64_MAX) {
		pthread_cond_wait(&c->refiller_cond, &c->lock);
		return;
	}
	ts = ns_to_ts(until_ns);
	pthread_cond_timedwait(&c->refiller_cond, &c->lock, &ts);
}

/*
 * The refiller thread: advances the epoch while callers take IDs, drops
 * expired IDs from the pool, and refills it when a caller asks (the pool
 * is empty) or when it falls below pf_low (not during a hold-off). Stops
 * ticking after FW_CLIENT_IDLE_TICKS ticks without a take: every buffered
 * ID has expired by then, and an idle client costs no wake-ups.
 */
static void *refiller_run(void *arg)
{
	struct fw_client *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->refiller_stop) {
		uint64_t now = now_ns(), until = UINT64_MAX;
		bool low;

		if (atomic_load(&c->hot.closed)) {
			refiller_wait(c, until);
			continue;
		}
		if (c->ticking && now >= c->next_tick_ns) {
			atomic_fetch_add(&c->hot.epoch, 1);
			c->next_tick_ns = now + c->tick_ns;
			if (c->takes == c->takes_seen && c->waiters == 0)
				c->ticking = ++c->idle_ticks < FW_CLIENT_IDLE_TICKS;
			else
				c->idle_ticks = 0;
			c->takes_seen = c->takes;
			pool_drop_expired(c, now);
			continue;
		}
		low = c->ticking && c->pf.avail < c->pf_low;
		if (c->asks != c->asks_served || (low && now >= c->pf.hold_until_ns)) {
			refill_once(c);
			continue;
		}
		if (c->ticking)
			until = c->next_tick_ns;
		if (low)
			until = FW_MIN(until, c->pf.hold_until_ns);
		refiller_wait(c, until);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Starts the refiller once, with every signal blocked (a host such as a
 * PostgreSQL backend keeps its signals on its own threads). Under c->lock. */
static int refiller_start(struct fw_client *c)
{
	sigset_t all, old;
	int rc;

	if (c->refiller_started)
		return 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->refiller, NULL, refiller_run, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	c->refiller_started = true;
	return 0;
}

/* Waits on pf.cond for the refiller, in slices that ask opts.cancel. Under c->lock. */
static int pool_wait(struct fw_client *c)
{
	struct timespec ts;

	if (!c->opts.cancel) {
		pthread_cond_wait(&c->pf.cond, &c->lock);
		return 0;
	}
	if (cancelled(c, NULL))
		return -ECANCELED;
	/* pf.cond runs on CLOCK_REALTIME (default attributes) */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&c->pf.cond, &c->lock, &ts);
	return 0;
}

/*
 * fw_client_next() when the caller's slot is empty, expired or missing:
 * refills the slot from the pool under c->lock (or, without a slot, takes
 * one ID from the pool), waiting for the refiller only when the pool is
 * empty. A caller that waited through a refill that failed and left
 * nothing gets that refill's error.
 */
static __attribute__((noinline)) int next_slow(struct fw_client *c, struct fw_client_slot *s,
					       uint64_t *id)
{
	bool waited = false;
	uint64_t gen0 = 0;
	int rc;

	if (atomic_load(&c->hot.closed))
		return FW_ECLOSED;
	if (!s && c->hot.have_key)
		s = pthread_getspecific(c->hot.key);
	if (s)
		s->len = 0; /* empty or expired: these IDs are wasted, never reused */
	else
		s = slot_new(c);
	if (s) {
		tls_slot.c = c;
		tls_slot.serial = c->hot.serial;
		tls_slot.s = s;
	}
	pthread_mutex_lock(&c->lock);
	rc = refiller_start(c);
	c->takes++;
	if (!c->ticking) {
		c->ticking = true;
		c->idle_ticks = 0;
		c->next_tick_ns = now_ns() + c->tick_ns;
		pthread_cond_signal(&c->refiller_cond);
	}
	while (rc == 0) {
		if (atomic_load(&c->hot.closed)) {
			rc = FW_ECLOSED;
			break;
		}
		pool_drop_expired(c, now_ns());
		if (c->pf.avail > 0) {
			if (s) {
				slot_fill(c, s);
				*id = slot_take(s);
			} else {
				struct fw_client_pr *h = &c->pf.pr[c->pf.head];

				*id = h->first++;
				c->pf.avail--;
				if (--h->n == 0) {
					c->pf.head++;
					c->pf.len--;
				}
			}
			if (c->pf.avail < c->pf_low && !c->pf.busy)
				pthread_cond_signal(&c->refiller_cond);
			break;
		}
		if (waited && c->pf.gen != gen0 && c->pf.last_rc < 0) {
			rc = c->pf.last_rc;
			break;
		}
		if (!waited) {
			waited = true;
			gen0 = c->pf.gen;
			c->asks++;
		}
		c->starved = true;
		c->waiters++;
		pthread_cond_signal(&c->refiller_cond);
		rc = pool_wait(c);
		c->waiters--;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int fw_client_next(struct fw_client *c, uint64_t *id)
{
	struct fw_client_slot *s;

	if (!c || !id)
		return -EINVAL;
	s = tls_slot.c == c && tls_slot.serial == c->hot.serial ? tls_slot.s : NULL;
	/* The fast path: this thread's own IDs, no lock, no shared write. */
	if (s && s->len &&
	    s->epoch + FW_CLIENT_AGE_TICKS >
		    atomic_load_explicit(&c->hot.epoch, memory_order_relaxed) &&
	    !atomic_load_explicit(&c->hot.closed, memory_order_relaxed)) {
		*id = slot_take(s);
		return 0;
	}
	return next_slow(c, s, id);
}

int fw_client_next_uuid7(struct fw_client *c, uint8_t uuid[FW_UUID_LEN])
{
	int rc = 0;

	if (!c || !uuid)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!c->upf.uuids) {
		/* Refills start below low_water and add at most prefetch UUIDs. */
		c->upf.cap = (size_t)c->opts.low_water + c->opts.prefetch + FW_WIRE_UUID7_MAX;
		c->upf.uuids = calloc(c->upf.cap, FW_UUID_LEN);
		if (!c->upf.uuids)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = pf_next(c, &c->upf, refill_uuids, take_uuid, uuid);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

uint8_t fw_client_last_status(struct fw_client *c)
{
	uint8_t st;

	pthread_mutex_lock(&c->lock);
	st = c->have_hdr ? c->last_hdr.status : FW_WIRE_ST_OK;
	pthread_mutex_unlock(&c->lock);
	return st;
}

int fw_client_last_hdr(struct fw_client *c, struct fw_wire_hdr *hdr)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&c->lock);
	if (c->have_hdr) {
		*hdr = c->last_hdr;
		rc = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

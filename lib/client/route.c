/* SPDX-License-Identifier: BSD-3-Clause */
/* The responder choice: health, hold-offs, hedging, the deadline, the RTT
 * window, the budget and the probe thread. The contract is route.h's. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_impl.h"
#include "route.h"

/* What a responder did in one call, for the deadline's text. */
enum att_what { ATT_NONE, ATT_SENT, ATT_REFUSED, ATT_RETRY_AFTER, ATT_STATUS };

struct att {
	uint64_t first_ns; /* first send in this call; 0: never asked */
	uint64_t last_ns;  /* last send */
	uint32_t retry_us; /* RETRY_AFTER's hint */
	uint8_t what;      /* enum att_what: the last thing it did */
	uint8_t status;    /* ATT_STATUS's status */
	bool in_round;     /* asked in the current round */
	bool refused_st;   /* answered FW_WIRE_ST_REFUSED in this call */
};

/* Servers a call keeps its records for on the stack; more take malloc(). */
#define ATT_STACK 16

static int tag_new(uint64_t *tag)
{
	ssize_t r;

	do {
		r = getrandom(tag, sizeof(*tag), 0);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/* A full bucket, or none when the budget is 0 (no hedging at all). */
static uint32_t tokens_start(const struct fwc_route *r)
{
	return r->budget_milli ? FW_ROUTE_TOKENS_CAP : 0;
}

int fwc_route_init(struct fwc_route *r, const struct fw_client_server *srv, size_t n,
		   uint32_t hedge_min_us, uint32_t hedge_budget_pct)
{
	memset(r, 0, sizeof(*r));
	r->probe_wake = -1;
	r->srv = srv;
	r->n = n;
	r->s = calloc(n, sizeof(*r->s));
	if (!r->s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		r->s[i].healthy = true;
		r->s[i].probe_fd = -1;
	}
	r->hedge_min_ns = (uint64_t)hedge_min_us * NS_PER_US;
	r->budget_milli = hedge_budget_pct * 10u;
	r->tokens = tokens_start(r);
	r->d_ns = (uint64_t)FW_ROUTE_D_DEFAULT_US * NS_PER_US;
	return -pthread_mutex_init(&r->lock, NULL);
}

static void probe_join(struct fwc_route *r)
{
	if (!r->probe_started)
		return;
	pthread_join(r->probe, NULL);
	r->probe_started = false;
	if (r->probe_wake >= 0)
		close(r->probe_wake);
	r->probe_wake = -1;
}

void fwc_route_free(struct fwc_route *r)
{
	if (!r->s)
		return;
	pthread_mutex_lock(&r->lock);
	r->probe_stop = true;
	if (r->probe_wake >= 0) {
		uint64_t one = 1;

		(void)!write(r->probe_wake, &one, sizeof(one));
	}
	pthread_mutex_unlock(&r->lock);
	probe_join(r);
	for (size_t i = 0; i < r->n; i++)
		if (r->s[i].probe_fd >= 0)
			close(r->s[i].probe_fd);
	pthread_mutex_destroy(&r->lock);
	free(r->s);
	r->s = NULL;
}

void fwc_route_lock(struct fwc_route *r)
{
	pthread_mutex_lock(&r->lock);
}

void fwc_route_unlock(struct fwc_route *r)
{
	pthread_mutex_unlock(&r->lock);
}

void fwc_route_forked(struct fwc_route *r)
{
	/* The probe thread is the parent's; its eventfd and sockets are shared
	 * with the parent's: closed here, never written. */
	r->probe_started = r->probe_running = r->probe_stop = false;
	if (r->probe_wake >= 0)
		close(r->probe_wake);
	r->probe_wake = -1;
	for (size_t i = 0; i < r->n; i++) {
		if (r->s[i].probe_fd >= 0)
			close(r->s[i].probe_fd);
		r->s[i] = (struct fwc_route_srv){.healthy = true, .probe_fd = -1};
	}
	r->rtt_count = 0;
	r->d_ns = (uint64_t)FW_ROUTE_D_DEFAULT_US * NS_PER_US;
	r->tokens = tokens_start(r);
	r->hedges = 0;
	r->last_err[0] = '\0';
	pthread_mutex_init(&r->lock, NULL);
}

size_t fwc_route_last_error(struct fwc_route *r, char *buf, size_t cap)
{
	size_t len;

	pthread_mutex_lock(&r->lock);
	len = strlen(r->last_err);
	if (cap) {
		snprintf(buf, cap, "%s", r->last_err);
	}
	pthread_mutex_unlock(&r->lock);
	return len;
}

/* ---- the RTT window and the hedge delay (under r->lock) ---- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* d from the window: its 99th percentile, clamped. A sort of at most 256
 * values every FW_ROUTE_RTT_EVERY samples, never one per call. */
static void rtt_recompute(struct fwc_route *r)
{
	uint32_t v[FW_ROUTE_RTT_WINDOW];
	size_t n = (size_t)FW_MIN(r->rtt_count, (uint64_t)FW_ROUTE_RTT_WINDOW);
	size_t k;
	uint64_t d;

	memcpy(v, r->rtt_us, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_u32);
	k = (n * 99 + 99) / 100; /* ceil(0.99 n), 1-based */
	d = (uint64_t)v[k - 1] * NS_PER_US;
	d = FW_MAX(d, r->hedge_min_ns);
	r->d_ns = FW_MIN(d, (uint64_t)FW_ROUTE_D_MAX_US * NS_PER_US);
}

static void rtt_add(struct fwc_route *r, uint64_t ns)
{
	uint64_t us = ns / NS_PER_US;

	r->rtt_us[r->rtt_count % FW_ROUTE_RTT_WINDOW] = (uint32_t)FW_MIN(us, UINT32_MAX);
	r->rtt_count++;
	if (r->rtt_count == FW_ROUTE_RTT_MIN_SAMPLE || r->rtt_count % FW_ROUTE_RTT_EVERY == 0)
		rtt_recompute(r);
}

/* ---- health and the probe thread ---- */

static void *probe_run(void *arg);

/* Marks responder @i unhealthy and makes sure a probe thread runs. Under r->lock. */
static void set_unhealthy(struct fwc_route *r, size_t i)
{
	sigset_t all, old;
	int rc;

	r->s[i].healthy = false;
	if (r->probe_running || r->probe_stop)
		return;
	probe_join(r); /* a finished one: it no longer takes the lock */
	r->probe_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->probe_wake < 0)
		return; /* no probe: the responder comes back when a call's reply says so */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->probe, NULL, probe_run, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(r->probe_wake);
		r->probe_wake = -1;
		return;
	}
	r->probe_started = r->probe_running = true;
}

/* A valid INFO reply to probe tag @tag from server @i: healthy again. */
static void probe_read(struct fwc_route *r, size_t i, int fd)
{
	uint8_t rx[FW_CLIENT_RX_LEN];
	struct fw_wire_reply rep;

	for (int k = 0; k < 64; k++) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t len =
			recvfrom(fd, rx, sizeof(rx), MSG_TRUNC, (struct sockaddr *)&from, &fromlen);

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return;
		if ((size_t)len > sizeof(rx) || !fwc_same_addr(&from, &r->srv[i]) ||
		    fw_wire_parse_reply(rx, (size_t)len, &rep) != 0)
			continue;
		pthread_mutex_lock(&r->lock);
		/* A status answered since the probe went out holds it unhealthy. */
		if (rep.hdr.tag == r->s[i].probe_tag &&
		    rep.hdr.op == (FW_WIRE_OP_INFO | FW_WIRE_OP_REPLY) &&
		    rep.hdr.status == FW_WIRE_ST_OK && r->s[i].probe_after_ns <= fw_mono_ns())
			r->s[i].healthy = true;
		pthread_mutex_unlock(&r->lock);
	}
}

/*
 * The probe thread: every FW_ROUTE_PROBE_MS an INFO to each unhealthy
 * responder whose probe_after_ns has passed, on a socket of its own; a
 * valid reply makes it healthy. While every unhealthy one is held by its
 * status it only wakes to look again. Ends when none is unhealthy, or when
 * woken by fwc_route_free().
 */
static void *probe_run(void *arg)
{
	struct fwc_route *r = arg;
	struct pollfd *pfd = calloc(r->n + 1, sizeof(*pfd));
	size_t *who = calloc(r->n, sizeof(*who));
	uint8_t tx[FW_CLIENT_TX_LEN];

	pthread_mutex_lock(&r->lock);
	while (!r->probe_stop && pfd && who) {
		uint64_t now = fw_mono_ns(), held_until = UINT64_MAX;
		uint64_t end = now + (uint64_t)FW_ROUTE_PROBE_MS * NS_PER_MS;
		size_t np = 0;

		for (size_t i = 0; i < r->n; i++) {
			uint64_t tag;
			int len;

			if (r->s[i].healthy)
				continue;
			if (r->s[i].probe_after_ns > now) {
				held_until = FW_MIN(held_until, r->s[i].probe_after_ns);
				continue;
			}
			if (r->s[i].probe_fd < 0)
				r->s[i].probe_fd = fwc_server_socket(&r->srv[i]);
			if (r->s[i].probe_fd < 0 || tag_new(&tag) < 0)
				continue;
			len = fw_wire_write_request_len(tx, sizeof(tx), FW_WIRE_OP_INFO, 0, tag, 0);
			if (len < 0)
				continue;
			r->s[i].probe_tag = tag;
			(void)!send(r->s[i].probe_fd, tx, (size_t)len, 0);
			pfd[np] = (struct pollfd){.fd = r->s[i].probe_fd, .events = POLLIN};
			who[np++] = i;
		}
		if (np == 0 && held_until == UINT64_MAX)
			break;
		if (np == 0) /* only held ones: until the first is due, a new one within a period */
			end = FW_MIN(end, held_until);
		pfd[np] = (struct pollfd){.fd = r->probe_wake, .events = POLLIN};
		pthread_mutex_unlock(&r->lock);
		for (now = fw_mono_ns(); now < end; now = fw_mono_ns()) {
			struct timespec ts = fw_timespec_of_ns(end - now);
			int m = ppoll(pfd, np + 1, &ts, NULL);

			if (m <= 0)
				continue;
			if (pfd[np].revents)
				break;
			for (size_t k = 0; k < np; k++)
				if (pfd[k].revents)
					probe_read(r, who[k], pfd[k].fd);
		}
		pthread_mutex_lock(&r->lock);
	}
	r->probe_running = false;
	pthread_mutex_unlock(&r->lock);
	free(pfd);
	free(who);
	return NULL;
}

/* ---- one call ---- */

/* The channel's socket to server @s (the server's own for the one-shot
 * channel), opened on first use (under c->lock, which fw_client_shutdown()
 * reads them under). Returns it or -errno. */
static int io_fd(struct fw_client *c, struct fw_client_io *io, size_t s)
{
	int *slot = io->fds ? &io->fds[s] : &c->srv[s].fd;
	int fd;

	pthread_mutex_lock(&c->lock);
	fd = *slot;
	if (fd < 0) {
		fd = fwc_server_socket(&c->srv[s]);
		if (fd >= 0)
			*slot = fd;
	}
	pthread_mutex_unlock(&c->lock);
	return fd;
}

/* Rank of responder @i for the order: eligible, held off, unhealthy. Under r->lock. */
static int rank_of(const struct fwc_route *r, size_t i, uint64_t now)
{
	if (!r->s[i].healthy)
		return 2;
	return r->s[i].hold_until_ns > now ? 1 : 0;
}

/*
 * The next responder of the call: the first of the order not asked in this
 * round (a new round when all were), or one held off by RETRY_AFTER (a
 * RETRY_AFTER in this call also takes it out of the round, so it comes back
 * before the unhealthy ones after its hint too). *at receives when it may be
 * sent to (its hold-off's end, or now). Under r->lock.
 */
static size_t pick_next(const struct fwc_route *r, struct att *a, uint64_t now, uint64_t *at)
{
	size_t best = SIZE_MAX;
	int best_rank = 3;
	bool any = false;

	for (size_t i = 0; i < r->n; i++)
		any |= !a[i].in_round;
	if (!any)
		for (size_t i = 0; i < r->n; i++)
			a[i].in_round = false;
	for (size_t i = 0; i < r->n; i++) {
		int k = rank_of(r, i, now);

		/*
		 * A healthy responder held off by RETRY_AFTER comes before the
		 * unhealthy ones even when this round asked it: it is asked again
		 * when its hint ends, not after a silent one's resend timer.
		 */
		if (a[i].in_round && k != 1)
			continue;
		/* configured order within a rank, earliest hold first among the held */
		if (k < best_rank || (k == 1 && best_rank == 1 &&
				      r->s[i].hold_until_ns < r->s[best].hold_until_ns)) {
			best = i;
			best_rank = k;
		}
	}
	*at = FW_MAX(now, r->s[best].hold_until_ns);
	return best;
}

/* Whether a hedge may go out now: a responder not asked in this call and a token. */
static bool hedge_target(const struct fwc_route *r, const struct att *a)
{
	if (r->tokens < 1000u)
		return false;
	for (size_t i = 0; i < r->n; i++)
		if (!a[i].first_ns)
			return true;
	return false;
}

static void addr_text(const struct fw_client_server *s, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (s->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&s->addr;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(buf, cap, "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const void *)&s->addr;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(buf, cap, "%s:%u", host, ntohs(a->sin_port));
	}
}

/* The deadline's text: what each responder did, in configured order. Under r->lock. */
static void error_text(struct fwc_route *r, const struct att *a, uint64_t now)
{
	size_t used = 0;

	r->last_err[0] = '\0';
	for (size_t i = 0; i < r->n && used < sizeof(r->last_err); i++) {
		char addr[INET6_ADDRSTRLEN + 16], what[64];
		int w;

		addr_text(&r->srv[i], addr, sizeof(addr));
		switch (a[i].what) {
		case ATT_NONE:
			snprintf(what, sizeof(what), "not asked");
			break;
		case ATT_SENT:
			snprintf(what, sizeof(what), "no reply in %llu ms",
				 (unsigned long long)((now - a[i].first_ns) / NS_PER_MS));
			break;
		case ATT_REFUSED:
			snprintf(what, sizeof(what), "refused");
			break;
		case ATT_RETRY_AFTER:
			snprintf(what, sizeof(what), "RETRY_AFTER %u ms", a[i].retry_us / 1000u);
			break;
		default:
			/* The protocol's spelling, as RETRY_AFTER's: "answered NO_LEASE". */
			w = snprintf(what, sizeof(what), "answered %s",
				     fw_wire_status_name(a[i].status));
			for (int j = (int)sizeof("answered"); j < w && what[j]; j++)
				what[j] = what[j] == '-' ? '_'
							 : (char)toupper((unsigned char)what[j]);
			break;
		}
		w = snprintf(r->last_err + used, sizeof(r->last_err) - used, "%s%s: %s",
			     i ? "; " : "", addr, what);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* Sends the request to @i; records it. Returns 0, 1 (refused at once) or -errno from the socket. */
static int send_to(struct fw_client *c, struct fw_client_io *io, struct att *a, size_t i,
		   size_t len)
{
	int fd = io_fd(c, io, i);
	uint64_t now = fw_mono_ns();
	ssize_t sent;

	if (fd < 0)
		return fd;
	do {
		sent = send(fd, io->tx, len, 0);
	} while (sent < 0 && errno == EINTR);
	if (!a[i].first_ns)
		a[i].first_ns = now;
	a[i].last_ns = now;
	a[i].in_round = true;
	if (a[i].what == ATT_NONE)
		a[i].what = ATT_SENT;
	/* The socket's pending ICMP error comes back from send() itself. Other
	 * failures (unreachable, no route) count as silence: T resends. */
	return sent < 0 && errno == ECONNREFUSED ? 1 : 0;
}

enum rd { RD_NONE, RD_REPLY, RD_REFUSED };

/* Reads @fd (server @i) for the reply to (@op, @tag) into io->reply. Returns an enum rd or -errno.
 */
static int read_one(struct fw_client *c, struct fw_client_io *io, int fd, size_t i, uint8_t op,
		    uint64_t tag)
{
	for (;;) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t len;
		int rc;

		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		len = recvfrom(fd, io->rx, sizeof(io->rx), MSG_TRUNC, (struct sockaddr *)&from,
			       &fromlen);
		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return RD_NONE;
		if (len < 0 && errno == ECONNREFUSED)
			return RD_REFUSED;
		if (len < 0)
			return RD_NONE; /* unreachable and the like: as silence */
		if ((size_t)len > sizeof(io->rx) || !fwc_same_addr(&from, &c->srv[i]))
			continue;
		rc = fw_wire_parse_reply(io->rx, (size_t)len, &io->reply);
		if (rc == FW_EWIRE_VERSION && io->reply.hdr.tag == tag) {
			/* A responder speaking another version says so in its own:
			 * surface it as the status it means. */
			io->reply.hdr.status = FW_WIRE_ST_BAD_VERSION;
			return RD_REPLY;
		}
		if (rc < 0 || io->reply.hdr.tag != tag ||
		    (io->reply.hdr.op & ~FW_WIRE_OP_REPLY) != op)
			continue;
		return RD_REPLY;
	}
}

struct call {
	struct fw_client *c;
	struct fw_client_io *io;
	struct fwc_route *r;
	struct att *a;
	size_t len;
	uint64_t d_ns, t_ns;
	uint64_t last_send_ns;
	size_t pending; /* SIZE_MAX: none */
	uint64_t pending_at;
	bool pending_hedge;
	unsigned sends;
};

/* Schedules a send to the next responder (at once, or when its hold-off ends). */
static void schedule(struct call *k, bool hedge)
{
	uint64_t now = fw_mono_ns();

	pthread_mutex_lock(&k->r->lock);
	k->pending = pick_next(k->r, k->a, now, &k->pending_at);
	pthread_mutex_unlock(&k->r->lock);
	k->pending_hedge = hedge;
}

static int on_refused(struct call *k, size_t i);

static int do_send(struct call *k)
{
	size_t i = k->pending;
	int rc;

	k->pending = SIZE_MAX;
	/* T doubles after each send that was not a hedge (the first excepted);
	 * capped, as a lone responder asked every 10 ms would overflow it. */
	if (k->sends++ && !k->pending_hedge)
		k->t_ns = FW_MIN(k->t_ns * 2, (uint64_t)FW_ROUTE_T_MAX_MS * NS_PER_MS);
	rc = send_to(k->c, k->io, k->a, i, k->len);
	k->last_send_ns = fw_mono_ns();
	return rc == 1 ? on_refused(k, i) : rc;
}

/* The reply in io->reply from server @i. Returns 1 to go on, 0 (done) or an error. */
static int on_reply(struct call *k, size_t i)
{
	struct fw_client *c = k->c;
	const struct fw_wire_hdr *h = &k->io->reply.hdr;
	struct fwc_route *r = k->r;
	uint64_t now = fw_mono_ns();
	bool all_refused = false;

	pthread_mutex_lock(&c->lock);
	c->last_hdr = *h;
	c->have_hdr = true;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_lock(&r->lock);
	if (h->status == FW_WIRE_ST_OK) {
		rtt_add(r, now - k->a[i].last_ns);
		/* Rule 3: those asked that have not answered lost the race. */
		for (size_t j = 0; j < r->n; j++)
			if (j != i && k->a[j].what == ATT_SENT)
				set_unhealthy(r, j);
		r->s[i].healthy = true;
		r->s[i].probe_after_ns = 0; /* it issues: an older status no longer holds */
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	if (h->status == FW_WIRE_ST_RETRY_AFTER) {
		/* A hint of 0 would resend in a tight loop: at least 1 ms. */
		uint64_t us = FW_MAX(FW_MIN(h->retry_after_us, FW_CLIENT_RETRY_AFTER_MAX_US),
				     FW_ROUTE_RETRY_AFTER_MIN_US);

		r->s[i].hold_until_ns = now + us * NS_PER_US;
		/* Out of this round: asked again when its hint ends (while held, and
		 * once eligible again), before the unhealthy ones. */
		k->a[i].in_round = false;
		k->a[i].what = ATT_RETRY_AFTER;
		k->a[i].retry_us = h->retry_after_us;
		pthread_mutex_unlock(&r->lock);
		schedule(k, false);
		return 1;
	}
	k->a[i].what = ATT_STATUS;
	k->a[i].status = h->status;
	switch (h->status) {
	case FW_WIRE_ST_NO_LEASE:
	case FW_WIRE_ST_CLOCK_UNSAFE:
		break; /* it cannot issue now; another may, or it a little later */
	case FW_WIRE_ST_REFUSED:
		/* Its policy refuses this source; another's may not. Only when
		 * every responder refused in this call is that the answer. */
		k->a[i].refused_st = all_refused = true;
		for (size_t j = 0; j < r->n; j++)
			all_refused &= k->a[j].refused_st;
		break;
	default:
		/* BAD_REQUEST, BAD_VERSION: every responder would say the same (a
		 * client bug, a version mismatch); this one is not unhealthy. */
		pthread_mutex_unlock(&r->lock);
		return FW_ESTATUS;
	}
	/* Unhealthy, and asked again in this call only after a pause: when it
	 * is the last one left, every FW_ROUTE_REASK_US until the deadline.
	 * Not probed for FW_ROUTE_STATUS_HOLD_MS: it answers INFO, so a probe
	 * would make it healthy again at once, and every call would ask it
	 * first only to hear the status again. */
	r->s[i].hold_until_ns = now + (uint64_t)FW_ROUTE_REASK_US * NS_PER_US;
	r->s[i].probe_after_ns = now + (uint64_t)FW_ROUTE_STATUS_HOLD_MS * NS_PER_MS;
	set_unhealthy(r, i);
	pthread_mutex_unlock(&r->lock);
	if (all_refused)
		return FW_ESTATUS;
	schedule(k, false);
	return 1;
}

static int on_refused(struct call *k, size_t i)
{
	struct fwc_route *r = k->r;

	pthread_mutex_lock(&r->lock);
	k->a[i].what = ATT_REFUSED;
	r->s[i].hold_until_ns = fw_mono_ns() + (uint64_t)FW_ROUTE_REASK_US * NS_PER_US;
	set_unhealthy(r, i);
	pthread_mutex_unlock(&r->lock);
	if (k->pending == SIZE_MAX)
		schedule(k, false);
	return 1;
}

/* The wait until @until: every asked responder's socket. Returns 1 to go on, 0 or an error. */
static int wait_events(struct call *k, uint64_t until, uint8_t op, uint64_t tag)
{
	struct pollfd pfd_stack[ATT_STACK], *pfd = pfd_stack;
	size_t who_stack[ATT_STACK], *who = who_stack;
	struct fw_client *c = k->c;
	size_t np = 0;
	uint64_t now = fw_mono_ns();
	struct timespec ts;
	int m, rc = 1;

	if (k->r->n > ATT_STACK) {
		pfd = calloc(k->r->n, sizeof(*pfd));
		who = calloc(k->r->n, sizeof(*who));
		if (!pfd || !who) {
			free(pfd);
			free(who);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < k->r->n; i++) {
		int fd;

		if (!k->a[i].first_ns)
			continue;
		fd = k->io->fds ? k->io->fds[i] : c->srv[i].fd;
		pfd[np] = (struct pollfd){.fd = fd, .events = POLLIN};
		who[np++] = i;
	}
	ts = fw_timespec_of_ns(wait_slice_ns(c, k->io, until > now ? until - now : 0));
	m = ppoll(pfd, np, &ts, NULL);
	wait_slice_done(k->io);
	for (size_t j = 0; m > 0 && j < np && rc == 1; j++) {
		int e;

		if (!pfd[j].revents)
			continue;
		e = read_one(c, k->io, pfd[j].fd, who[j], op, tag);
		if (e == RD_REPLY)
			rc = on_reply(k, who[j]);
		else if (e == RD_REFUSED)
			rc = on_refused(k, who[j]);
		else if (e < 0)
			rc = e;
	}
	if (pfd != pfd_stack) {
		free(pfd);
		free(who);
	}
	return rc;
}

static int call_run(struct call *k, uint8_t op, uint64_t tag, uint64_t deadline)
{
	struct fw_client *c = k->c;
	struct fwc_route *r = k->r;

	schedule(k, false);
	for (;;) {
		uint64_t now = fw_mono_ns(), until = deadline;
		int rc;

		if (cancelled(c, k->io))
			return -ECANCELED;
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		if (now >= deadline)
			return FW_ETIMEOUT;
		if (k->pending != SIZE_MAX && now >= k->pending_at) {
			rc = do_send(k);
			if (rc != 0 && rc != 1)
				return rc;
			continue;
		}
		if (k->pending != SIZE_MAX) {
			until = FW_MIN(until, k->pending_at);
		} else {
			uint64_t hedge_at = k->last_send_ns + k->d_ns;
			uint64_t resend_at = k->last_send_ns + k->t_ns;
			bool can_hedge;

			pthread_mutex_lock(&r->lock);
			can_hedge = r->n > 1 && hedge_target(r, k->a);
			if (can_hedge && now >= hedge_at) {
				r->tokens -= 1000u;
				r->hedges++;
			}
			pthread_mutex_unlock(&r->lock);
			if (can_hedge && now >= hedge_at) {
				schedule(k, true);
				continue;
			}
			if (now >= resend_at) {
				schedule(k, false);
				continue;
			}
			if (can_hedge)
				until = FW_MIN(until, hedge_at);
			until = FW_MIN(until, resend_at);
		}
		rc = wait_events(k, until, op, tag);
		if (rc != 1)
			return rc;
	}
}

int fwc_route_call(struct fw_client *c, struct fw_client_io *io, size_t len, uint8_t op,
		   uint64_t tag, uint64_t deadline_ns)
{
	struct fwc_route *r = &c->route;
	struct att a_stack[ATT_STACK], *a = a_stack;
	struct call k = {.c = c, .io = io, .r = r, .len = len, .pending = SIZE_MAX};
	int rc;

	if (r->n > ATT_STACK) {
		a = calloc(r->n, sizeof(*a));
		if (!a)
			return -ENOMEM;
	} else {
		memset(a_stack, 0, sizeof(a_stack));
	}
	k.a = a;
	pthread_mutex_lock(&r->lock);
	r->tokens = FW_MIN(r->tokens + r->budget_milli, FW_ROUTE_TOKENS_CAP);
	k.d_ns = r->d_ns;
	pthread_mutex_unlock(&r->lock);
	k.t_ns = FW_MAX(4 * k.d_ns, (uint64_t)FW_ROUTE_T_MIN_US * NS_PER_US);

	rc = call_run(&k, op, tag, deadline_ns);
	if (rc == FW_ETIMEOUT) {
		uint64_t now = fw_mono_ns();

		pthread_mutex_lock(&r->lock);
		for (size_t i = 0; i < r->n; i++)
			if (a[i].what == ATT_SENT)
				set_unhealthy(r, i);
		error_text(r, a, now);
		pthread_mutex_unlock(&r->lock);
	}
	if (a != a_stack)
		free(a);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"

/* Room for any valid reply (at most FW_WIRE_MTU_PAYLOAD) and some slack, so
 * an oversized datagram is recognised by MSG_TRUNC instead of misparsed. */
#define FW_CLIENT_RX_LEN 2048
#define FW_CLIENT_TX_LEN 2048

/* UDP payload of one unfragmented IPv6 datagram in a 1500-byte MTU */
static const size_t FW_CLIENT_IPV6_PAYLOAD_MAX = 1452;

#define NS_PER_MS 1000000ull
#define NS_PER_US 1000ull

struct fw_client_server {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int fd;
};

struct fw_client_seen {
	uint32_t key; /* datacenter << 16 | worker */
	bool used;
	uint64_t last_id;
};

struct fw_client {
	pthread_mutex_t lock;
	struct fw_client_opts opts;

	struct fw_client_server *srv;
	size_t nsrv;
	size_t cur;
	/* a server is IPv6: padded requests and replies must fit 1452 bytes (LIST 178) */
	bool ipv6;

	bool have_layout;
	bool info_done;
	struct fw_layout layout;

	struct fw_client_seen seen[FW_CLIENT_WORKERS_TRACKED];
	unsigned seen_next;

	bool have_hdr;
	struct fw_wire_hdr last_hdr;

	/* Prefetch buffer for fw_client_next(): ranges[head .. head + len). */
	struct fw_wire_range *pf;
	size_t pf_cap;
	size_t pf_head;
	size_t pf_len;
	uint64_t pf_ids;
	uint64_t pf_hold_until_ns;

	struct fw_wire_reply reply;
	uint8_t tx[FW_CLIENT_TX_LEN];
	uint8_t rx[FW_CLIENT_RX_LEN];
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
	    dst->prefetch > FW_CLIENT_PREFETCH_MAX || dst->low_water > FW_CLIENT_PREFETCH_MAX)
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

int fw_client_open(const char *const *servers, size_t n, const struct fw_client_opts *opts,
		   struct fw_client **out)
{
	struct fw_client *c;
	int rc;

	if (!servers || !n || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
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
		/* Unconnected, so replies are matched by source address here and
		 * not silently by the kernel; one socket per server keeps waits
		 * independent of stray traffic to the others. */
		c->srv[i].fd = socket(c->srv[i].addr.ss_family,
				      SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (c->srv[i].fd < 0) {
			rc = -errno;
			goto err_close;
		}
	}

	/*
	 * Refills start below low_water (each range holds at least one ID)
	 * and add at most prefetch IDs, plus one reply's worth of ranges.
	 */
	c->pf_cap = (size_t)c->opts.low_water + c->opts.prefetch + FW_WIRE_RANGES_MAX;
	c->pf = calloc(c->pf_cap, sizeof(*c->pf));
	if (!c->pf) {
		rc = -ENOMEM;
		goto err_close;
	}
	rc = pthread_mutex_init(&c->lock, NULL);
	if (rc) {
		rc = -rc;
		goto err_close;
	}
	*out = c;
	return 0;

err_close:
	for (size_t i = 0; i < n; i++)
		if (c->srv[i].fd >= 0)
			close(c->srv[i].fd);
err_free:
	free(c->pf);
	free(c->srv);
	free(c);
	return rc;
}

void fw_client_close(struct fw_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nsrv; i++)
		close(c->srv[i].fd);
	pthread_mutex_destroy(&c->lock);
	free(c->pf);
	free(c->srv);
	free(c);
}

/*
 * Waits until @deadline for the reply to (@op, @tag) from @srv into
 * c->reply. Returns 0, FW_ETIMEOUT or -errno.
 */
static int await_reply(struct fw_client *c, const struct fw_client_server *srv, uint8_t op,
		       uint64_t tag, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns();
		struct pollfd pfd = {.fd = srv->fd, .events = POLLIN};
		struct timespec ts;
		int n;

		if (now >= deadline)
			return FW_ETIMEOUT;
		ts = ns_to_ts(deadline - now);
		n = ppoll(&pfd, 1, &ts, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return FW_ETIMEOUT;

		for (;;) {
			struct sockaddr_storage from;
			socklen_t fromlen = sizeof(from);
			ssize_t len;
			int rc;

			len = recvfrom(srv->fd, c->rx, sizeof(c->rx), MSG_TRUNC,
				       (struct sockaddr *)&from, &fromlen);
			if (len < 0 && errno == EINTR)
				continue;
			if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (len < 0)
				return -errno;
			if ((size_t)len > sizeof(c->rx) || !same_addr(&from, srv))
				continue;
			rc = fw_wire_parse_reply(c->rx, (size_t)len, &c->reply);
			if (rc == FW_EWIRE_VERSION && c->reply.hdr.tag == tag) {
				/* A responder speaking another version says so in
				 * its own: surface it as the status it means. */
				c->reply.hdr.status = FW_WIRE_ST_BAD_VERSION;
				return 0;
			}
			if (rc < 0 || c->reply.hdr.tag != tag ||
			    (c->reply.hdr.op & ~FW_WIRE_OP_REPLY) != op)
				continue;
			return 0;
		}
	}
}

/*
 * One request/reply exchange with retries, RETRY_AFTER and failover.
 * Returns 0 with an OK reply of @op in c->reply, FW_ESTATUS (c->reply
 * holds the error status), FW_ETIMEOUT or -errno.
 */
static int exchange(struct fw_client *c, uint8_t op, uint16_t count)
{
	bool retry_after = false;
	uint64_t tag;
	int len, rc;

	/* Fewer IDs, never a fragment, when a server is IPv6 (the reply says how many came) */
	while (c->ipv6 && count > 1 && fw_wire_reply_size(op, count) > FW_CLIENT_IPV6_PAYLOAD_MAX)
		count--;
	/* One tag for all attempts: a late reply to an earlier attempt of
	 * this request is as good as the latest one. */
	rc = new_tag(&tag);
	if (rc < 0)
		return rc;
	len = fw_wire_write_request(c->tx, sizeof(c->tx), op, count, tag, !c->opts.trusted);
	if (len < 0)
		return len;

	for (size_t s = 0; s < c->nsrv; s++) {
		const struct fw_client_server *srv = &c->srv[c->cur];

		for (uint32_t a = 0; a <= c->opts.retries; a++) {
			uint64_t wait = (uint64_t)c->opts.timeout_ms * NS_PER_MS << a;
			ssize_t sent;

			do {
				sent = sendto(srv->fd, c->tx, (size_t)len, 0,
					      (const struct sockaddr *)&srv->addr, srv->addrlen);
			} while (sent < 0 && errno == EINTR);
			/* Unreachable or unroutable: the next server may do better. */
			if (sent < 0)
				break;

			rc = await_reply(c, srv, op, tag, now_ns() + wait);
			if (rc == FW_ETIMEOUT)
				continue;
			if (rc < 0)
				return rc;

			c->last_hdr = c->reply.hdr;
			c->have_hdr = true;
			if (c->reply.hdr.status == FW_WIRE_ST_OK)
				return 0;
			if (c->reply.hdr.status != FW_WIRE_ST_RETRY_AFTER)
				return FW_ESTATUS;
			retry_after = true;
			sleep_ns((uint64_t)FW_MIN(c->reply.hdr.retry_after_us,
						  FW_CLIENT_RETRY_AFTER_MAX_US) *
				 NS_PER_US);
		}
		c->cur = (c->cur + 1) % c->nsrv;
	}
	return retry_after ? FW_ESTATUS : FW_ETIMEOUT;
}

/*
 * Learns the layout before the first ID request so IDs can be checked
 * against the worker the header names. A responder that cannot answer
 * INFO only costs that check; one that is silent fails the caller too.
 */
static int ensure_layout(struct fw_client *c)
{
	const struct fw_wire_info *in = &c->reply.body.info;
	struct fw_layout l;
	int rc;

	if (c->info_done)
		return 0;
	rc = exchange(c, FW_WIRE_OP_INFO, 0);
	if (rc < 0 && (rc != FW_ESTATUS || c->last_hdr.status == FW_WIRE_ST_RETRY_AFTER))
		return rc;
	c->info_done = true;
	if (rc < 0)
		return 0;
	l.epoch_ms = in->epoch_ms;
	l.time_bits = in->time_bits;
	l.dc_bits = in->dc_bits;
	l.worker_bits = in->worker_bits;
	l.seq_bits = in->seq_bits;
	if (fw_layout_validate(&l, 0) == 0) {
		c->layout = l;
		c->have_layout = true;
	}
	return 0;
}

static struct fw_client_seen *seen_find(struct fw_client *c, uint32_t key)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(c->seen); i++)
		if (c->seen[i].used && c->seen[i].key == key)
			return &c->seen[i];
	return NULL;
}

static bool id_from_worker(const struct fw_client *c, uint64_t id, const struct fw_wire_hdr *h)
{
	struct fw_id_parts p;

	if (!c->have_layout)
		return true;
	if (fw_layout_decode(&c->layout, id, &p) < 0)
		return false;
	return p.datacenter == h->datacenter && p.worker == h->worker;
}

/*
 * Checks the IDs of an OK reply, given as @n ranges, against what was
 * asked and what was seen before, and records the highest ID on success.
 * Returns 0 or FW_EINVALID.
 */
static int validate(struct fw_client *c, const struct fw_wire_hdr *h, const struct fw_wire_range *r,
		    size_t n, uint64_t asked)
{
	uint32_t key = (uint32_t)h->datacenter << 16 | h->worker;
	struct fw_client_seen *seen;
	uint64_t total = 0, prev = 0;

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
		if (!id_from_worker(c, r[i].first, h) || !id_from_worker(c, last, h))
			return FW_EINVALID;
		prev = last;
		total += r[i].n;
	}
	if (total > asked)
		return FW_EINVALID;

	seen = seen_find(c, key);
	if (seen && r[0].first <= seen->last_id)
		return FW_EINVALID;
	if (!seen) {
		seen = &c->seen[c->seen_next];
		c->seen_next = (c->seen_next + 1) % FW_ARRAY_SIZE(c->seen);
		seen->used = true;
		seen->key = key;
	}
	seen->last_id = prev;
	return 0;
}

/*
 * Fetches up to @want IDs with one LIST (@use_range false, @want at most
 * FW_WIRE_LIST_MAX) or RANGE request and validates them. On success the
 * IDs are in @r as *n ranges (LIST IDs as ranges of one).
 */
static int fetch(struct fw_client *c, bool use_range, uint16_t want, struct fw_wire_range *r,
		 size_t *n)
{
	const struct fw_wire_reply *rep = &c->reply;
	int rc;

	*n = 0;
	rc = ensure_layout(c);
	if (rc < 0)
		return rc;
	rc = exchange(c, use_range ? FW_WIRE_OP_RANGE : FW_WIRE_OP_LIST, want);
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
	rc = validate(c, &rep->hdr, r, rep->hdr.count, want);
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
	pthread_mutex_lock(&c->lock);
	rc = ensure_layout(c);
	if (rc == 0)
		rc = exchange(c, FW_WIRE_OP_ID, 1);
	if (rc == 0) {
		if (c->reply.hdr.count != 1) {
			rc = FW_EINVALID;
		} else {
			r.first = c->reply.body.ids[0];
			r.n = 1;
			rc = validate(c, &c->reply.hdr, &r, 1, 1);
		}
	}
	if (rc == 0)
		*id = r.first;
	pthread_mutex_unlock(&c->lock);
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
	pthread_mutex_lock(&c->lock);
	while (done < n) {
		size_t nr;

		rc = fetch(c, false, (uint16_t)FW_MIN(n - done, FW_WIRE_LIST_MAX), r, &nr);
		if (rc < 0)
			break;
		for (size_t i = 0; i < nr; i++)
			ids[done++] = r[i].first;
	}
	pthread_mutex_unlock(&c->lock);
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
	pthread_mutex_lock(&c->lock);
	rc = fetch(c, true, (uint16_t)want, r, &n);
	pthread_mutex_unlock(&c->lock);
	if (rc < 0)
		return rc;
	n = FW_MIN(n, max);
	memcpy(ranges, r, n * sizeof(*r));
	*nranges = n;
	return 0;
}

int fw_client_info(struct fw_client *c, struct fw_wire_info *info, struct fw_wire_hdr *hdr_out)
{
	int rc;

	if (!c || !info)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	rc = exchange(c, FW_WIRE_OP_INFO, 0);
	if (rc == 0) {
		const struct fw_wire_info *in = &c->reply.body.info;
		struct fw_layout l = {
			.epoch_ms = in->epoch_ms,
			.time_bits = in->time_bits,
			.dc_bits = in->dc_bits,
			.worker_bits = in->worker_bits,
			.seq_bits = in->seq_bits,
		};

		*info = *in;
		if (hdr_out)
			*hdr_out = c->reply.hdr;
		if (!c->have_layout && fw_layout_validate(&l, 0) == 0) {
			c->layout = l;
			c->have_layout = true;
			c->info_done = true;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Tops the prefetch buffer up with opts.prefetch IDs, keeping what arrives
 * even if a later request of the refill fails. */
static int refill(struct fw_client *c)
{
	struct fw_wire_range r[FW_WIRE_LIST_MAX];
	bool use_range = c->opts.use_range;
	uint32_t per_req = use_range ? FW_WIRE_RANGE_IDS_MAX : FW_WIRE_LIST_MAX;
	uint64_t fetched = 0;

	if (c->pf_head) {
		memmove(c->pf, c->pf + c->pf_head, c->pf_len * sizeof(*c->pf));
		c->pf_head = 0;
	}
	while (fetched < c->opts.prefetch) {
		uint64_t want = FW_MIN(c->opts.prefetch - fetched, per_req);
		size_t n;
		int rc;

		rc = fetch(c, use_range, (uint16_t)want, r, &n);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < n; i++) {
			struct fw_wire_range *tail = c->pf_len ? &c->pf[c->pf_len - 1] : NULL;

			/* LIST replies are mostly consecutive IDs: store them as runs. */
			if (tail && tail->first + tail->n == r[i].first &&
			    tail->n <= UINT32_MAX - r[i].n)
				tail->n += r[i].n;
			else
				c->pf[c->pf_len++] = r[i];
			fetched += r[i].n;
			c->pf_ids += r[i].n;
		}
	}
	return 0;
}

int fw_client_next(struct fw_client *c, uint64_t *id)
{
	struct fw_wire_range *head;
	int rc = 0;

	if (!c || !id)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (c->pf_ids == 0 || (c->pf_ids < c->opts.low_water && now_ns() >= c->pf_hold_until_ns)) {
		rc = refill(c);
		if (rc < 0)
			c->pf_hold_until_ns = now_ns() + ((uint64_t)c->opts.timeout_ms * NS_PER_MS
							  << c->opts.retries);
	}
	if (c->pf_ids == 0) {
		pthread_mutex_unlock(&c->lock);
		return rc < 0 ? rc : FW_ETIMEOUT;
	}
	head = &c->pf[c->pf_head];
	*id = head->first++;
	if (--head->n == 0) {
		c->pf_head++;
		c->pf_len--;
	}
	c->pf_ids--;
	pthread_mutex_unlock(&c->lock);
	return 0;
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

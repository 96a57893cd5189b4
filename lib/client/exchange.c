/* SPDX-License-Identifier: BSD-3-Clause */
/* Exchange and failover: one request/reply with retries, RETRY_AFTER and
 * failover, the layout learnt by INFO, and the one-shot calls built on it. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_impl.h"

/* UDP payload of one unfragmented IPv6 datagram in a 1500-byte MTU */
static const size_t FW_CLIENT_IPV6_PAYLOAD_MAX = 1452;

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = fw_timespec_of_ns(ns);

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* sleep_ns() in slices that ask opts.cancel. Returns 0, -ECANCELED or FW_ECLOSED. */
static int pause_ns(const struct fw_client *c, const struct fw_client_io *io, uint64_t ns)
{
	uint64_t end = fw_mono_ns() + ns;

	for (uint64_t now = fw_mono_ns(); now < end; now = fw_mono_ns()) {
		if (cancelled(c, io))
			return -ECANCELED;
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		sleep_ns(wait_slice_ns(c, io, end - now));
		wait_slice_done(io);
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

/* The channel's socket to server @s (the server's own for the one-shot
 * channel), opened on first use and again in a forked child (under c->lock,
 * which fw_client_shutdown() reads them under). Returns it or -errno. */
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
		uint64_t now = fw_mono_ns();
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct timespec ts;
		int n;

		if (cancelled(c, io))
			return -ECANCELED;
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		if (now >= deadline)
			return FW_ETIMEOUT;
		ts = fw_timespec_of_ns(wait_slice_ns(c, io, deadline - now));
		n = ppoll(&pfd, 1, &ts, NULL);
		wait_slice_done(io);
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
			if ((size_t)len > sizeof(io->rx) || !fwc_same_addr(&from, srv))
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

			rc = await_reply(c, io, fd, srv, op, tag, fw_mono_ns() + wait);
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

/*
 * Fetches up to @want IDs on @io with one LIST (@use_range false, @want at
 * most FW_WIRE_LIST_MAX) or RANGE request and validates them. On success
 * the IDs are in @r as *n ranges (LIST IDs as ranges of one).
 */
int fwc_fetch(struct fw_client *c, struct fw_client_io *io, bool use_range, uint16_t want,
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
	rc = fwc_validate(c, io, &rep->hdr, r, rep->hdr.count, want);
	if (rc < 0)
		return rc;
	*n = rep->hdr.count;
	return 0;
}

/*
 * Fetches up to @want (1..FW_WIRE_UUID7_MAX) UUIDs on @io with one UUID7
 * request; on success they are in io->reply.body.uuids, *n of them.
 */
int fwc_fetch_uuids(struct fw_client *c, struct fw_client_io *io, uint16_t want, size_t *n)
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
	rc = fwc_validate_uuids(c, io, &rep->hdr, (const uint8_t(*)[FW_UUID_LEN])rep->body.uuids,
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
			rc = fwc_validate(c, &c->call, &c->call.reply.hdr, &r, 1, 1);
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

		rc = fwc_fetch(c, &c->call, false, (uint16_t)FW_MIN(n - done, FW_WIRE_LIST_MAX), r,
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
	rc = fwc_fetch(c, &c->call, true, (uint16_t)want, r, &n);
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

		rc = fwc_fetch_uuids(c, &c->call, (uint16_t)FW_MIN(n - done, FW_WIRE_UUID7_MAX),
				     &nr);
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

/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests: one request built and handed to route.c (which responder, when,
 * until the deadline), the layout learnt by INFO, and the one-shot calls
 * built on it. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_impl.h"

/* UDP payload of one unfragmented IPv6 datagram in a 1500-byte MTU */
static const size_t FW_CLIENT_IPV6_PAYLOAD_MAX = 1452;

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

/*
 * One request/reply exchange on channel @io: builds the request (one tag
 * for every send, so a late reply to any of them is as good as the
 * latest) and leaves the responder choice to route.c, by @deadline.
 * Runs without c->lock held (it takes it briefly).
 * Returns 0 with an OK reply of @op in io->reply, FW_ESTATUS (io->reply
 * holds the error status), FW_ETIMEOUT or -errno.
 */
static int exchange(struct fw_client *c, struct fw_client_io *io, uint8_t op, uint16_t count,
		    uint64_t deadline)
{
	unsigned seq_bits = 12;
	uint64_t tag;
	int len, rc;

	if (atomic_load(&c->hot.closed))
		return FW_ECLOSED;
	/* Fewer IDs, never a fragment, when a server is IPv6 (the reply says how many
	 * came). A RANGE's count is IDs; its reply is at most FW_WIRE_RANGES_MAX ranges
	 * (216 bytes), which fits: only lists of IDs or UUIDs shrink. */
	while (c->ipv6 && count > 1 && op != FW_WIRE_OP_RANGE &&
	       fw_wire_reply_size(op, count) > FW_CLIENT_IPV6_PAYLOAD_MAX)
		count--;
	rc = new_tag(&tag);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	if (c->have_layout)
		seq_bits = c->layout.seq_bits;
	pthread_mutex_unlock(&c->lock);
	/* RANGE pads for 2^seq_bits IDs per range once INFO told us the layout. */
	len = fw_wire_write_request_len(
		io->tx, sizeof(io->tx), op, count, tag,
		c->opts.trusted ? 0 : fw_wire_request_size_seq(op, count, seq_bits));
	if (len < 0)
		return len;
	return fwc_route_call(c, io, (size_t)len, op, tag, deadline);
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
 * INFO (BAD_REQUEST, BAD_VERSION) only costs that check; the call's other
 * failures (the deadline, REFUSED from every responder) fail the caller.
 */
static int ensure_layout(struct fw_client *c, struct fw_client_io *io, uint64_t deadline)
{
	bool done;
	int rc;

	pthread_mutex_lock(&c->lock);
	done = c->info_done;
	pthread_mutex_unlock(&c->lock);
	if (done)
		return 0;
	rc = exchange(c, io, FW_WIRE_OP_INFO, 0, deadline);
	/* Refused everywhere, or no reply: the layout may still come later. */
	if (rc < 0 && (rc != FW_ESTATUS || io->reply.hdr.status == FW_WIRE_ST_REFUSED))
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
	      struct fw_wire_range *r, size_t *n, uint64_t deadline)
{
	const struct fw_wire_reply *rep = &io->reply;
	int rc;

	*n = 0;
	rc = ensure_layout(c, io, deadline);
	if (rc < 0)
		return rc;
	rc = exchange(c, io, use_range ? FW_WIRE_OP_RANGE : FW_WIRE_OP_LIST, want, deadline);
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
int fwc_fetch_uuids(struct fw_client *c, struct fw_client_io *io, uint16_t want, size_t *n,
		    uint64_t deadline)
{
	const struct fw_wire_reply *rep = &io->reply;
	bool known, lacks;
	int rc;

	*n = 0;
	rc = ensure_layout(c, io, deadline);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	known = c->have_layout;
	lacks = known && !(c->features & FW_WIRE_INFO_F_UUID7);
	pthread_mutex_unlock(&c->lock);
	if (lacks)
		return -EOPNOTSUPP;
	rc = exchange(c, io, FW_WIRE_OP_UUID7, want, deadline);
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
	uint64_t deadline;
	int rc;

	if (!c || !id)
		return -EINVAL;
	deadline = fwc_deadline(c);
	pthread_mutex_lock(&c->call_lock);
	rc = ensure_layout(c, &c->call, deadline);
	if (rc == 0)
		rc = exchange(c, &c->call, FW_WIRE_OP_ID, 1, deadline);
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
	uint64_t deadline;
	int rc = 0;

	if (got)
		*got = 0;
	if (!c || !got || (!ids && n))
		return -EINVAL;
	deadline = fwc_deadline(c);
	pthread_mutex_lock(&c->call_lock);
	while (done < n) {
		size_t nr;

		rc = fwc_fetch(c, &c->call, false, (uint16_t)FW_MIN(n - done, FW_WIRE_LIST_MAX), r,
			       &nr, deadline);
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
	uint64_t deadline;
	int rc;

	if (nranges)
		*nranges = 0;
	if (!c || !ranges || !nranges || max == 0 || want == 0 || want > FW_WIRE_RANGE_IDS_MAX)
		return -EINVAL;
	deadline = fwc_deadline(c);
	pthread_mutex_lock(&c->call_lock);
	rc = fwc_fetch(c, &c->call, true, (uint16_t)want, r, &n, deadline);
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
	uint64_t deadline;
	size_t done = 0;
	int rc = 0;

	if (got)
		*got = 0;
	if (!c || !got || (!uuids && n))
		return -EINVAL;
	deadline = fwc_deadline(c);
	pthread_mutex_lock(&c->call_lock);
	while (done < n) {
		size_t nr;

		rc = fwc_fetch_uuids(c, &c->call, (uint16_t)FW_MIN(n - done, FW_WIRE_UUID7_MAX),
				     &nr, deadline);
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
	uint64_t deadline;
	int rc;

	if (!c || !info)
		return -EINVAL;
	deadline = fwc_deadline(c);
	pthread_mutex_lock(&c->call_lock);
	rc = exchange(c, &c->call, FW_WIRE_OP_INFO, 0, deadline);
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

size_t fw_client_last_error(struct fw_client *c, char *buf, size_t cap)
{
	if (!c) {
		if (cap)
			buf[0] = '\0';
		return 0;
	}
	return fwc_route_last_error(&c->route, buf, cap);
}

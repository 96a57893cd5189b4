/* SPDX-License-Identifier: BSD-3-Clause */
/* Reply validation: the IDs and UUIDs of an OK reply against what was asked,
 * the layout's worker and what was seen before on the channel. */
#include <string.h>

#include "client_impl.h"

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

/*
 * Checks the IDs of an OK reply, given as @n ranges, against what was
 * asked and what was seen before on @io, and records the highest ID on
 * success. Returns 0 or FW_EINVALID.
 */
int fwc_validate(struct fw_client *c, struct fw_client_io *io, const struct fw_wire_hdr *h,
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

		/* ID 0 (the epoch's first ms, long past): a zeroed reply */
		if (r[i].first == 0 || fw_layout_check_run(l, r[i].first, r[i].n, h->datacenter,
							   h->worker, NULL, NULL))
			return FW_EINVALID;
		last = r[i].first + r[i].n - 1;
		if (i > 0 && r[i].first <= prev)
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
int fwc_validate_uuids(struct fw_client *c, struct fw_client_io *io, const struct fw_wire_hdr *h,
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

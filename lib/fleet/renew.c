/* SPDX-License-Identifier: BSD-3-Clause */
/* Renewal and retirement: the lease rule's writes after a claim (fw_fleet_claim.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fw_fleet_claim.h"

int fw_fleet_read(struct fw_fleet_store *s, uint32_t w, struct fw_fleet_rec *rec,
		  struct fw_fleet_ver *v)
{
	char buf[FW_FLEET_REC_MAX];
	int len;
	int rc = s->ops->get(s, w, buf, &len, v);
	if (rc != 0)
		return rc;
	return fw_fleet_rec_parse(buf, len, rec);
}

int fw_fleet_renew(const struct fw_fleet_recipe *r, struct fw_fleet_held *h, uint64_t *local_mid,
		   uint64_t *mtime, char *owner, size_t owner_len)
{
	struct fw_fleet_store *s = r->store;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_rec d = {.token = r->token, .floor = h->floor};
	struct fw_fleet_ver v;

	uint64_t a = r->now_ms(r->now_arg);
	snprintf(d.owner, sizeof(d.owner), "%s", r->identity);
	d.lease = FW_MAX(h->lease, fw_fleet_recipe_now(r) + r->lease_ms);
	int len = fw_fleet_rec_format(buf, sizeof(buf), &d);
	int rc = len < 0 ? -EIO : s->ops->cas(s, (uint32_t)h->worker, buf, len, h->version, &v);
	uint64_t b = r->now_ms(r->now_arg);
	if (rc == 0) {
		h->version = v.version;
		h->lease = d.lease;
		h->cached = false;
		h->token = r->token;
		*local_mid = a + (b - a) / 2;
		*mtime = v.mtime;
		return FW_FLEET_RENEWED;
	}
	if (rc != -ESTALE && rc != -ENOENT)
		return rc;
	/* Not our version: our own write whose reply was lost, or a takeover. */
	struct fw_fleet_rec now;
	rc = fw_fleet_read(s, (uint32_t)h->worker, &now, &v);
	if (rc == -ENOTCONN || rc == -EIO)
		return rc;
	bool parsed = rc == 0;
	/* ... or, for a claim from the cache, a write of this identity's previous
	 * run that the cache missed (a crash between the write and the cache):
	 * the same owner, as a take-back at start would be */
	if (parsed && !strcmp(now.owner, r->identity) &&
	    (now.token == r->token || (h->cached && now.token == h->token))) {
		h->version = v.version;
		h->lease = now.lease; /* what the store holds: confirmed by this read */
		h->token = now.token;
		return FW_FLEET_ADOPTED; /* still cached when its run's: the next CAS writes ours */
	}
	if (owner && owner_len)
		snprintf(owner, owner_len, "%s",
			 !parsed        ? "(unreadable)"
			 : now.owner[0] ? now.owner
					: "(released)");
	h->lost = true;
	return FW_FLEET_LOST;
}

int fw_fleet_release_held(const struct fw_fleet_recipe *r, const struct fw_fleet_held *h,
			  uint64_t last)
{
	struct fw_fleet_store *s = r->store;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_rec d = {.token = 0};
	struct fw_fleet_ver v;
	d.floor = FW_MAX(h->floor, last);
	d.lease = d.floor;
	int len = fw_fleet_rec_format(buf, sizeof(buf), &d);
	if (len < 0)
		return -EIO;
	return s->ops->cas(s, (uint32_t)h->worker, buf, len, h->version, &v);
}

enum fw_fleet_retired fw_fleet_retire_held(const struct fw_fleet_recipe *r, struct fw_fleet_held *h,
					   uint64_t last, int *rc)
{
	for (int tries = 0; tries < 2; tries++) {
		*rc = fw_fleet_release_held(r, h, last);
		if (*rc == 0)
			return FW_FLEET_RETIRE_DONE;
		if (*rc != -ESTALE)
			return FW_FLEET_RETIRE_AGAIN; /* unreachable, full, refused...: not done */
		struct fw_fleet_rec now;
		struct fw_fleet_ver v;
		*rc = fw_fleet_read(r->store, (uint32_t)h->worker, &now, &v);
		if (*rc != 0)
			return FW_FLEET_RETIRE_AGAIN; /* gone or garbled: nothing fences it */
		if (!strcmp(now.owner, r->identity) && now.token == h->token) {
			h->version = v.version; /* our own write whose reply was lost */
			continue;
		}
		/* another writer: a takeover's floor is our lease end, a release's
		 * max(floor, lease): either is above what we issued */
		return now.floor >= FW_MAX(h->floor, last) ? FW_FLEET_RETIRE_ABOVE
							   : FW_FLEET_RETIRE_AGAIN;
	}
	return FW_FLEET_RETIRE_AGAIN;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-record protocol (fw_fleet_recipe.h), in one file: read, claim,
 * renew, release and retire one worker record over the store interface.
 * Depends only on the records' text (rec.c) and the store's ops.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_fleet_recipe.h"

uint64_t fw_fleet_recipe_now(const struct fw_fleet_recipe *r)
{
	uint64_t u = r->now_ms(r->now_arg), e = r->layout.epoch_ms;
	return u > e ? u - e : 0;
}

bool fw_fleet_proven(const struct fw_fleet_recipe *r, int32_t w, uint64_t token)
{
	if (token == r->token)
		return true; /* this run's own write (a claim whose reply was lost) */
	for (uint32_t i = 0; i < r->n_proven; i++)
		if (r->proven[i].worker == w && r->proven[i].token == token)
			return true;
	return false;
}

/* fw_fleet_cand.rank */
enum { CAND_TAKEBACK, CAND_FREE_NOW, CAND_NEW, CAND_FREE_LATER, CAND_EXPIRED };

int fw_fleet_cand_cmp(const void *a, const void *b)
{
	const struct fw_fleet_cand *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	/* released ahead: lowest floor; expired: lowest lease; else lowest worker ID */
	uint64_t vx = x->kind == FW_FLEET_EXPIRED  ? x->rec.lease
		      : x->rank == CAND_FREE_LATER ? x->rec.floor
						   : 0;
	uint64_t vy = y->kind == FW_FLEET_EXPIRED  ? y->rec.lease
		      : y->rank == CAND_FREE_LATER ? y->rec.floor
						   : 0;
	if (vx != vy)
		return vx < vy ? -1 : 1;
	return x->worker - y->worker;
}

/*
 * A replacement's order (FW_FLEET_CLAIM_FRESH, after the clock stepped
 * back): free and never-claimed ones by lowest floor (the furthest below
 * the stepped clock), then expired ones by lowest lease.
 */
static int cand_cmp_floor(const void *a, const void *b)
{
	const struct fw_fleet_cand *x = a, *y = b;
	int kx = x->kind == FW_FLEET_NEW ? FW_FLEET_FREE : (int)x->kind;
	int ky = y->kind == FW_FLEET_NEW ? FW_FLEET_FREE : (int)y->kind;
	if (kx != ky)
		return kx - ky;
	uint64_t vx = x->kind == FW_FLEET_EXPIRED ? x->rec.lease : x->rec.floor;
	uint64_t vy = y->kind == FW_FLEET_EXPIRED ? y->rec.lease : y->rec.floor;
	if (vx != vy)
		return vx < vy ? -1 : 1;
	return x->worker - y->worker;
}

void fw_fleet_claim_terms(const struct fw_fleet_recipe *r, const struct fw_fleet_cand *c,
			  uint64_t now_l, struct fw_fleet_rec *out)
{
	memset(out, 0, sizeof(*out));
	out->token = r->token;
	snprintf(out->owner, sizeof(out->owner), "%s", r->identity);
	switch (c->kind) {
	case FW_FLEET_TAKEBACK: /* proven ours (fw_fleet_proven): this state's mark fences it */
		out->floor = c->rec.floor;
		break;
	case FW_FLEET_NEW:
		out->floor = 0;
		break;
	case FW_FLEET_FREE: /* a release already raised the floor over the last lease */
	case FW_FLEET_EXPIRED:
		out->floor = FW_MAX(c->rec.floor, c->rec.lease);
		break;
	}
	if (c->kind != FW_FLEET_TAKEBACK && r->root) /* above what any owner before a fence
						      * may have issued */
		out->floor = FW_MAX(out->floor, r->root->fence);
	out->lease = FW_MAX(now_l, out->floor) + r->lease_ms;
	if (c->kind == FW_FLEET_TAKEBACK)
		out->lease = FW_MAX(out->lease, c->rec.lease);
}

int fw_fleet_live_names(struct fw_fleet_store *s, struct fw_fleet_names *n)
{
	n->n = 0;
	n->sorted = false;
	return s->ops->alive_list(s, fw_fleet_names_add, n);
}

/* fw_fleet_census_add's liveness: the live names, or this run's own record. */
struct census_alive {
	const struct fw_fleet_recipe *r;
	struct fw_fleet_names *live;
	const struct fw_fleet_rec *rec;
};

static int census_alive(void *arg, const char *owner, bool *alive)
{
	const struct census_alive *a = arg;
	*alive = fw_fleet_names_has(a->live, owner) ||
		 (!strcmp(owner, a->r->identity) && a->rec->token == a->r->token);
	return 0;
}

int fw_fleet_census_count(const struct fw_fleet_recipe *r, struct fw_fleet_names *live,
			  struct fw_fleet_census *c, uint32_t w, int read_rc,
			  const struct fw_fleet_rec *rec, uint64_t now_l,
			  enum fw_fleet_counted *how)
{
	struct census_alive a = {r, live, rec};
	uint32_t fr = c->free, he = c->held, st = c->stranded;
	int rc = fw_fleet_census_add(c, r->root ? &r->root->reserved : NULL, w, read_rc, rec, now_l,
				     census_alive, &a);
	if (how)
		*how = c->free != fr       ? FW_FLEET_COUNTED_FREE
		       : c->held != he     ? FW_FLEET_COUNTED_HELD
		       : c->stranded != st ? FW_FLEET_COUNTED_STRANDED
					   : FW_FLEET_COUNTED_NONE;
	return rc;
}

int fw_fleet_scan(const struct fw_fleet_recipe *r, uint64_t server_unix, const bool *skip,
		  struct fw_fleet_cand **out, uint32_t *n_out, uint32_t *n_owned, uint32_t *n_mine,
		  char *owners, size_t owners_len)
{
	struct fw_fleet_store *s = r->store;
	uint32_t total = 1u << r->layout.worker_bits, n = 0, owned = 0, mine = 0;
	uint64_t e = r->layout.epoch_ms, server_l = server_unix > e ? server_unix - e : 0;
	size_t ml = 0;
	int rc = 0;

	/* the census on the way (r->census): valid once every worker ID is in */
	struct fw_fleet_scan_census *cen = r->census;
	struct fw_fleet_names live = {0};
	bool counting = cen != NULL;
	if (cen) {
		cen->valid = false;
		cen->at = server_l;
		fw_fleet_census_init(&cen->c);
		counting = fw_fleet_live_names(s, &live) == 0;
	}

	bool *exists = calloc(total, 1);
	struct fw_fleet_cand *c = calloc(total, sizeof(*c));
	if (!exists || !c) {
		rc = -ENOMEM;
		goto out;
	}
	if (owners && owners_len)
		owners[0] = '\0';
	rc = s->ops->list(s, exists, total);
	for (uint32_t w = 0; rc == 0 && w < total; w++) {
		enum fw_fleet_counted how = FW_FLEET_COUNTED_NONE;
		if (skip[w] && counting) { /* this process holds it */
			cen->c.total++;
			cen->c.held++;
		}
		if (skip[w] || fw_fleet_reserved(r->root ? &r->root->reserved : NULL, w)) {
			if (!skip[w] && counting)
				fw_fleet_census_count(r, &live, &cen->c, w, -ENOENT, NULL, server_l,
						      NULL);
			continue;
		}
		struct fw_fleet_cand x = {
			.worker = (int32_t)w, .kind = FW_FLEET_NEW, .rank = CAND_NEW};
		if (!exists[w]) {
			if (counting)
				fw_fleet_census_count(r, &live, &cen->c, w, -ENOENT, NULL, server_l,
						      &how);
			x.counted = (uint8_t)how;
			c[n++] = x;
			continue;
		}
		struct fw_fleet_ver v;
		rc = fw_fleet_read(s, w, &x.rec, &v);
		if ((rc == 0 || rc == -ENOENT || rc == -EINVAL) && counting)
			fw_fleet_census_count(r, &live, &cen->c, w, rc, &x.rec, server_l, &how);
		x.counted = (uint8_t)how;
		if (rc == -ENOENT || rc == -EINVAL) {
			rc = 0;
			continue; /* gone, or garbled: never touched */
		}
		if (rc != 0)
			break;
		x.version = v.version;
		bool same_name = !strcmp(x.rec.owner, r->identity);
		if (same_name && fw_fleet_proven(r, (int32_t)w, x.rec.token)) {
			x.kind = FW_FLEET_TAKEBACK;
			x.rank = CAND_TAKEBACK;
		} else if (!x.rec.owner[0]) {
			x.kind = FW_FLEET_FREE;
			x.rank = FW_MAX(x.rec.floor, x.rec.lease) <= server_l ? CAND_FREE_NOW
									      : CAND_FREE_LATER;
		} else if (x.rec.lease < server_l) {
			x.kind = FW_FLEET_EXPIRED;
			x.rank = CAND_EXPIRED;
		} else {
			/* a live lease; this identity's too when no state of ours proves it */
			char ts[FW_ISO8601_LEN];
			owned++;
			mine += same_name;
			if (owners && ml < owners_len)
				ml += (size_t)snprintf(
					owners + ml, owners_len - ml, "%s%u by %s%s until %s",
					owned > 1 ? ", " : "", w, x.rec.owner,
					same_name ? " (this identity, under a run this state does "
						    "not prove was ours)"
						  : "",
					fw_format_iso8601(x.rec.lease + e, ts));
			continue;
		}
		c[n++] = x;
	}
out:
	free(exists);
	fw_fleet_names_free(&live);
	if (rc != 0) {
		free(c);
		return rc;
	}
	if (counting)
		cen->valid = true;
	qsort(c, n, sizeof(*c), fw_fleet_cand_cmp);
	*out = c;
	*n_out = n;
	*n_owned = owned;
	if (n_mine)
		*n_mine = mine;
	return 0;
}

int fw_fleet_claim_one(const struct fw_fleet_recipe *r, const struct fw_fleet_cand *c,
		       struct fw_fleet_held *h)
{
	struct fw_fleet_store *s = r->store;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_rec d;
	struct fw_fleet_ver v;
	int rc;

	fw_fleet_claim_terms(r, c, fw_fleet_recipe_now(r), &d);
	int len = fw_fleet_rec_format(buf, sizeof(buf), &d);
	if (len < 0)
		return -EIO;
	if (c->kind == FW_FLEET_NEW)
		rc = s->ops->create(s, (uint32_t)c->worker, buf, len, &v);
	else
		rc = s->ops->cas(s, (uint32_t)c->worker, buf, len, c->version, &v);
	if (rc == -EEXIST || rc == -ESTALE) {
		/* A store that sends a write again after a try timed out (etcd's
		 * client: etcd_call) answers "exists" or "version moved" to its own
		 * write that landed at the first try. This run's token in the record
		 * says so: the claim is ours (as read), else another writer's. */
		struct fw_fleet_rec now;
		int g = fw_fleet_read(s, (uint32_t)c->worker, &now, &v);
		if (g == -ENOTCONN || g == -EIO || g == -EACCES)
			return g; /* unknown: a later scan sees ours as a take-back */
		if (g != 0 || now.token != r->token || strcmp(now.owner, r->identity))
			return rc;
		d = now;
		rc = 0;
	}
	if (rc != 0)
		return rc;
	*h = (struct fw_fleet_held){
		c->worker, v.version, d.lease,  d.floor,
		false,     false,     r->token, r->root ? r->root->generation : 0};
	return 0;
}

static bool fresh(const struct fw_fleet_recipe *r, const struct fw_fleet_cand *c, uint64_t now_l)
{
	struct fw_fleet_rec d;
	if (c->kind == FW_FLEET_TAKEBACK)
		return false;
	fw_fleet_claim_terms(r, c, now_l, &d);
	return d.floor <= now_l;
}

/* A claim of an ID the scan's census counted @how: held now. */
static void census_claimed(const struct fw_fleet_recipe *r, uint8_t how)
{
	struct fw_fleet_census *c = r->census && r->census->valid ? &r->census->c : NULL;
	if (c == NULL || (how != FW_FLEET_COUNTED_FREE && how != FW_FLEET_COUNTED_STRANDED))
		return;
	if (how == FW_FLEET_COUNTED_FREE)
		c->free--;
	else
		c->stranded--; /* next_stranded stays: a bound, read only while some are */
	c->held++;
}

int fw_fleet_claim_n(const struct fw_fleet_recipe *r, uint64_t server_unix, const bool *skip,
		     uint32_t n_need, uint32_t flags, const uint32_t *slot_of,
		     struct fw_fleet_held *got, enum fw_fleet_kind *kinds, uint32_t *n_got,
		     uint32_t *n_mine, char *err, size_t errlen)
{
	static const char *const how[] = {"taken back", "claimed (new)", "claimed (free)",
					  "taken over"};
	struct fw_fleet_cand *c = NULL;
	uint32_t n_c = 0, n_owned = 0, total = 1u << r->layout.worker_bits;
	char owners[1536];
	uint64_t now_l = fw_fleet_recipe_now(r);

	*n_got = 0;
	int rc = fw_fleet_scan(r, server_unix, skip, &c, &n_c, &n_owned, n_mine, owners,
			       sizeof(owners));
	if (rc != 0) {
		snprintf(err, errlen, "fleet: %s: %s", r->store->name,
			 rc == -ENOMEM ? "out of memory" : r->store->ops->last_error(r->store));
		return rc;
	}
	if (flags & FW_FLEET_CLAIM_FRESH) {
		uint32_t k = 0;
		for (uint32_t j = 0; j < n_c; j++)
			if (fresh(r, &c[j], now_l))
				c[k++] = c[j];
		n_c = k;
		qsort(c, n_c, sizeof(*c), cand_cmp_floor);
	}
	if (n_c < n_need) {
		for (uint32_t w = 0, t = total; w < t; w++) /* reserved: never the fleet's */
			total -= fw_fleet_reserved(r->root ? &r->root->reserved : NULL, w);
		snprintf(err, errlen,
			 "fleet: %s needs %u worker ID(s) and only %u can be claimed%s: %u of %u "
			 "worker IDs in the fleet are held by other live leases: %s",
			 r->identity, n_need, n_c,
			 flags & FW_FLEET_CLAIM_FRESH ? " that can issue now" : "", n_owned, total,
			 owners);
		free(c);
		return FW_EFLEET_FULL;
	}
	uint32_t next = 0;
	rc = 0;
	for (uint32_t k = 0; k < n_need && rc != -ENOTCONN && rc != -EIO && rc != -EACCES; k++) {
		for (rc = -ESTALE; next < n_c;) {
			const struct fw_fleet_cand *x = &c[next++];
			rc = fw_fleet_claim_one(r, x, &got[k]);
			if (rc == 0) {
				char ts[FW_ISO8601_LEN];
				kinds[k] = x->kind;
				census_claimed(r, x->counted);
				fw_log(&r->log, FW_LOG_INFO,
				       "fleet: worker %d %s for slot %u, lease until %s, floor "
				       "%" PRIu64 "%s%s",
				       x->worker, how[x->kind], slot_of ? slot_of[k] : k,
				       fw_format_iso8601(got[k].lease + r->layout.epoch_ms, ts),
				       got[k].floor, x->kind == FW_FLEET_EXPIRED ? ", from " : "",
				       x->kind == FW_FLEET_EXPIRED ? x->rec.owner : "");
				(*n_got)++;
				break;
			}
			if (rc == -ENOTCONN || rc == -EIO || rc == -EACCES)
				break;
		}
		if (rc != 0)
			break;
	}
	free(c);
	if (*n_got == n_need)
		return 0;
	if (rc == -ENOTCONN || rc == -EIO || rc == -EACCES)
		snprintf(err, errlen, "fleet: %s: %s", r->store->name,
			 r->store->ops->last_error(r->store));
	else
		snprintf(err, errlen,
			 "fleet: %s: worker IDs were claimed by others while claiming; retry",
			 r->identity);
	if (flags & FW_FLEET_CLAIM_ALL) {
		for (uint32_t k = 0; k < *n_got; k++)
			if (kinds[k] != FW_FLEET_TAKEBACK &&
			    fw_fleet_release_held(r, &got[k], 0) == 0 && r->census &&
			    r->census->valid) {
				r->census->c.held--; /* given back: free */
				r->census->c.free++;
			}
		*n_got = 0;
	}
	return rc == -ENOTCONN || rc == -EIO || rc == -EACCES ? rc : FW_EFLEET_FULL;
}

/* ---- after a claim: renewal, release and retirement (the lease rule's writes) ---- */

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

/*
 * A held version names one life of a record: a restore, a wipe or a fence
 * can bring back or make again a record whose version equals the one held
 * (etcd's revisions go back with a snapshot; a ZooKeeper node made again
 * starts at version 0), another owner's. Before the first write after a
 * reconnection (h->verify), under another root generation, or from the
 * cache, the record is read and its token proves it is this run's.
 */
static bool held_unsure(const struct fw_fleet_recipe *r, const struct fw_fleet_held *h)
{
	return h->verify || h->cached ||
	       (h->root_gen && r->root && h->root_gen != r->root->generation);
}

/* The record's owner is this run, or the cached run it succeeds. */
static bool rec_ours(const struct fw_fleet_recipe *r, const struct fw_fleet_held *h,
		     const struct fw_fleet_rec *now)
{
	return !strcmp(now->owner, r->identity) &&
	       (now->token == r->token || (h->cached && now->token == h->token));
}

/* A renewal's verdict on the record read (@rc its read's code) when it is not
 * this run's at the version held. */
static int renew_judge(const struct fw_fleet_recipe *r, struct fw_fleet_held *h, bool same_gen,
		       int rc, const struct fw_fleet_rec *now, const struct fw_fleet_ver *v,
		       char *owner, size_t owner_len)
{
	bool parsed = rc == 0;
	if (rc == -ENOENT && same_gen)
		return FW_FLEET_GONE; /* records are never deleted: the store lost ours */
	/* ... or, for a claim from the cache, a write of this identity's previous
	 * run that the cache missed (a crash between the write and the cache):
	 * the same owner, as a take-back at start would be */
	if (parsed && same_gen && now->token == r->token && v->version < h->version)
		return FW_FLEET_BACK; /* our own record, older than our last write: restored */
	if (parsed && rec_ours(r, h, now)) {
		h->version = v->version;
		h->lease = now->lease; /* what the store holds: confirmed by this read */
		h->token = now->token;
		h->root_gen = r->root ? r->root->generation : 0;
		return FW_FLEET_ADOPTED; /* still cached when its run's: the next CAS writes ours */
	}
	if (owner && owner_len)
		snprintf(owner, owner_len, "%s",
			 !parsed         ? "(unreadable)"
			 : now->owner[0] ? now->owner
					 : "(released)");
	if (parsed && same_gen && now->floor < h->lease && now->token != r->token) {
		/* a takeover's or a release's floor is at or above the lease in the
		 * record, which is at or above ours: this one comes from a store that
		 * lost our writes */
		if (!now->owner[0])
			return FW_FLEET_GONE; /* free in it, nobody else issues yet */
		h->lost = true;
		h->lease = FW_MIN(h->lease, fw_fleet_recipe_now(r));
		return FW_FLEET_UNDER;
	}
	h->lost = true;
	return FW_FLEET_LOST;
}

int fw_fleet_renew(const struct fw_fleet_recipe *r, struct fw_fleet_held *h, uint64_t *local_mid,
		   uint64_t *mtime, char *owner, size_t owner_len)
{
	struct fw_fleet_store *s = r->store;
	char buf[FW_FLEET_REC_MAX];
	struct fw_fleet_rec d = {.token = r->token, .floor = h->floor}, now;
	struct fw_fleet_ver v;
	bool same_gen = !h->cached && h->root_gen && r->root && h->root_gen == r->root->generation;
	int rc;

	if (held_unsure(r, h)) {
		rc = fw_fleet_read(s, (uint32_t)h->worker, &now, &v);
		if (rc == -ENOTCONN || rc == -EIO)
			return rc;
		if (rc != 0 || !rec_ours(r, h, &now) ||
		    (same_gen && now.token == r->token && v.version < h->version))
			return renew_judge(r, h, same_gen, rc, &now, &v, owner, owner_len);
		h->version = v.version; /* this run's (or its cached predecessor's) record */
	}
	uint64_t a = r->now_ms(r->now_arg);
	snprintf(d.owner, sizeof(d.owner), "%s", r->identity);
	d.lease = FW_MAX(h->lease, fw_fleet_recipe_now(r) + r->lease_ms);
	int len = fw_fleet_rec_format(buf, sizeof(buf), &d);
	rc = len < 0 ? -EIO : s->ops->cas(s, (uint32_t)h->worker, buf, len, h->version, &v);
	uint64_t b = r->now_ms(r->now_arg);
	if (rc == 0) {
		h->version = v.version;
		h->lease = d.lease;
		h->cached = false;
		h->verify = false;
		h->token = r->token;
		h->root_gen = r->root ? r->root->generation : 0;
		*local_mid = a + (b - a) / 2;
		*mtime = v.mtime;
		return FW_FLEET_RENEWED;
	}
	if (rc != -ESTALE && rc != -ENOENT)
		return rc;
	/* Not our version: our own write whose reply was lost, or a takeover. */
	rc = fw_fleet_read(s, (uint32_t)h->worker, &now, &v);
	if (rc == -ENOTCONN || rc == -EIO)
		return rc;
	return renew_judge(r, h, same_gen, rc, &now, &v, owner, owner_len);
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

/* A retirement's verdict on the record read when it is not this holder's. */
static enum fw_fleet_retired retire_judge(const struct fw_fleet_held *h, uint64_t last,
					  const struct fw_fleet_rec *now)
{
	uint64_t at = FW_MAX(h->floor, last);
	if (!now->owner[0] && now->token == 0 && now->floor == at && now->lease == at)
		return FW_FLEET_RETIRE_DONE; /* this release, landed before a resend */
	/* another writer: a takeover's floor is our lease end, a release's
	 * max(floor, lease): either is above what we issued */
	return now->floor >= at ? FW_FLEET_RETIRE_ABOVE : FW_FLEET_RETIRE_AGAIN;
}

enum fw_fleet_retired fw_fleet_retire_held(const struct fw_fleet_recipe *r, struct fw_fleet_held *h,
					   uint64_t last, int *rc)
{
	struct fw_fleet_rec now;
	struct fw_fleet_ver v;
	if (held_unsure(r, h)) { /* the version held may name another record's life */
		*rc = fw_fleet_read(r->store, (uint32_t)h->worker, &now, &v);
		if (*rc != 0)
			return FW_FLEET_RETIRE_AGAIN; /* gone or garbled: nothing fences it */
		if (strcmp(now.owner, r->identity) || now.token != h->token)
			return retire_judge(h, last, &now);
		h->version = v.version;
	}
	for (int tries = 0; tries < 2; tries++) {
		*rc = fw_fleet_release_held(r, h, last);
		if (*rc == 0)
			return FW_FLEET_RETIRE_DONE;
		if (*rc != -ESTALE)
			return FW_FLEET_RETIRE_AGAIN; /* unreachable, full, refused...: not done */
		*rc = fw_fleet_read(r->store, (uint32_t)h->worker, &now, &v);
		if (*rc != 0)
			return FW_FLEET_RETIRE_AGAIN; /* gone or garbled: nothing fences it */
		if (!strcmp(now.owner, r->identity) && now.token == h->token) {
			h->version = v.version; /* our own write whose reply was lost */
			continue;
		}
		return retire_judge(h, last, &now);
	}
	return FW_FLEET_RETIRE_AGAIN;
}

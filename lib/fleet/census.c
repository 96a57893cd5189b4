/* SPDX-License-Identifier: BSD-3-Clause */
/* The root's census, shared through ROOT/census (fw_fleet_census.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fleet_census.h"

int fw_fleet_census_take(const struct fw_fleet_recipe *r, uint64_t now_l, struct fw_fleet_census *c)
{
	struct fw_fleet_store *s = r->store;
	uint32_t total = 1u << r->layout.worker_bits;
	struct fw_fleet_names live = {0};
	fw_fleet_census_init(c);
	bool *exists = calloc(total, 1);
	if (exists == NULL)
		return -ENOMEM;
	int rc = fw_fleet_live_names(s, &live);
	if (rc == 0)
		rc = s->ops->list(s, exists, total);
	for (uint32_t w = 0; rc == 0 && w < total; w++) {
		struct fw_fleet_rec rec;
		struct fw_fleet_ver v;
		bool reserved = r->root && fw_fleet_reserved(&r->root->reserved, w);
		int g = exists[w] && !reserved ? fw_fleet_read(s, w, &rec, &v) : -ENOENT;
		if (g != 0 && g != -ENOENT && g != -EINVAL)
			rc = g;
		else
			rc = fw_fleet_census_count(r, &live, c, w, g, &rec, now_l, NULL);
	}
	free(exists);
	fw_fleet_names_free(&live);
	return rc;
}

bool fw_fleet_census_fresh(const struct fw_fleet_census_rec *cr, const char *identity, uint64_t now,
			   uint64_t period_ms, uint64_t rnd)
{
	if (cr->at > now + period_ms)
		return false;
	uint64_t age = cr->at < now ? now - cr->at : 0;
	if (!strcmp(cr->by, identity)) /* its taker counts again a period later */
		return age < period_ms - period_ms / 8;
	uint64_t half = period_ms / 2;
	return age < period_ms + (half ? rnd % half : 0);
}

void fw_fleet_census_rec_of(const struct fw_fleet_recipe *r, const struct fw_fleet_census *c,
			    uint64_t at_l, struct fw_fleet_census_rec *out)
{
	uint64_t e = r->layout.epoch_ms;
	memset(out, 0, sizeof(*out));
	out->at = at_l + e;
	snprintf(out->by, sizeof(out->by), "%s", r->identity);
	out->c = *c;
	out->c.next_stranded = c->stranded ? c->next_stranded + e : 0;
}

/* The record at @key: 0 with *cr (-EINVAL in *parsed when garbled) and *v; a store code. */
static int census_get(struct fw_fleet_store *s, const char *key, struct fw_fleet_census_rec *cr,
		      struct fw_fleet_ver *v, int *parsed)
{
	char buf[FW_FLEET_REC_MAX];
	int len = 0;
	int rc = s->ops->meta_get(s, key, buf, &len, v);
	if (rc == 0)
		*parsed = fw_fleet_census_parse(buf, len, cr);
	return rc;
}

/* S1 when @exists is false, else S2 at @version. */
static int census_put(struct fw_fleet_store *s, const char *key,
		      const struct fw_fleet_census_rec *cr, bool exists, int64_t version)
{
	char buf[FW_FLEET_REC_MAX];
	int len = fw_fleet_census_format(buf, sizeof(buf), cr);
	if (len < 0)
		return -EIO;
	return exists ? s->ops->meta_cas(s, key, buf, len, version)
		      : s->ops->meta_create(s, key, buf, len);
}

int fw_fleet_census_shared(const struct fw_fleet_recipe *r, const char *root, uint64_t period_ms,
			   uint64_t rnd, struct fw_fleet_census_rec *out,
			   enum fw_fleet_census_src *src)
{
	struct fw_fleet_store *s = r->store;
	struct fw_fleet_census_rec have;
	struct fw_fleet_ver v = {0};
	char key[512];
	int parsed = -EINVAL;
	fw_fleet_key_sub(key, sizeof(key), root, "census");
	int rc = census_get(s, key, &have, &v, &parsed);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	bool exists = rc == 0;
	if (exists && parsed == 0 &&
	    fw_fleet_census_fresh(&have, r->identity, r->now_ms(r->now_arg), period_ms, rnd)) {
		*out = have;
		*src = FW_FLEET_CENSUS_READ;
		return 0;
	}
	/* stale, absent or garbled: count it here */
	struct fw_fleet_census c;
	uint64_t now_l = fw_fleet_recipe_now(r);
	rc = fw_fleet_census_take(r, now_l, &c);
	if (rc != 0)
		return rc;
	fw_fleet_census_rec_of(r, &c, now_l, out);
	rc = census_put(s, key, out, exists, v.version);
	*src = rc == 0 ? FW_FLEET_CENSUS_TAKEN : FW_FLEET_CENSUS_UNSHARED;
	if (rc == -ESTALE || rc == -EEXIST || rc == -ENOENT) {
		/* another node's came first: the fleet exports one census */
		if (census_get(s, key, &have, &v, &parsed) == 0 && parsed == 0) {
			*out = have;
			*src = FW_FLEET_CENSUS_WINNER;
		}
	}
	return 0;
}

int fw_fleet_census_publish(const struct fw_fleet_recipe *r, const char *root,
			    const struct fw_fleet_census_rec *cr)
{
	struct fw_fleet_store *s = r->store;
	struct fw_fleet_census_rec have;
	struct fw_fleet_ver v = {0};
	char key[512];
	int parsed = -EINVAL;
	fw_fleet_key_sub(key, sizeof(key), root, "census");
	int rc = census_get(s, key, &have, &v, &parsed);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	if (rc == 0 && parsed == 0 && have.at >= cr->at)
		return 0; /* as new or newer there */
	return census_put(s, key, cr, rc == 0, v.version);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operators' tools (flakectl fleet init | ls | release | check) over any store,
 * and a static node's check of its reservation:
 * one-shot sessions, no liveness record of their own.
 */
#include <errno.h>
#include <inttypes.h>
#include <sys/random.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_recipe.h"
#include "fw_fleet_session.h"
#include "fw_time.h"
#include "fw_fleet_admin.h"

static int fail(struct fw_fleet_store *s, int rc, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "fleet: %s: %s%s", s->name, what,
		 rc == -ENOTCONN || rc == -EIO ? s->ops->last_error(s)
					       : fw_fleet_store_strerror(rc));
	return FW_EFLEET_STORE;
}

/* fw_fleet_census_add's liveness for a listing: the entry's, read already. */
static int list_alive(void *arg, const char *owner, bool *alive)
{
	(void)owner;
	*alive = *(const bool *)arg;
	return 0;
}

int fw_fleet_list_store(struct fw_fleet_store *s, const char *root, uint32_t timeout_ms,
			struct fw_fleet_list *out, char *err, size_t errlen)
{
	char buf[FW_FLEET_REC_MAX];
	int len, rc;
	memset(out, 0, sizeof(*out));
	if (s->ops->connect(s, timeout_ms) != 0) {
		snprintf(err, errlen, "fleet: %s %s within %u ms", s->name, s->ops->last_error(s),
			 timeout_ms);
		return FW_EFLEET_STORE;
	}
	struct fw_fleet_ver rv;
	struct fw_fleet_root rr = {0};
	rc = s->ops->meta_get(s, root, buf, &len, &rv);
	if (rc == -ENOENT || (rc == 0 && fw_fleet_root_parse(buf, len, &rr) != 0)) {
		snprintf(err, errlen, "fleet: no flakewire fleet at %s", root);
		return -ENOENT;
	}
	if (rc == 0)
		out->layout = rr.layout;
	if (rc == 0)
		rc = s->ops->now(s, NULL, NULL, &out->server_unix, NULL);
	if (rc == -EACCES) {
		/* a reader without the fleet's credentials cannot write the clock
		 * record: this host's clock stands in, and the listing says so */
		out->server_unix = fw_wall_ms();
		out->time_local = true;
		rc = 0;
	}
	uint32_t total = 1u << out->layout.worker_bits;
	uint64_t e0 = out->layout.epoch_ms,
		 now_l = out->server_unix > e0 ? out->server_unix - e0 : 0;
	struct fw_fleet_census c;
	struct fw_fleet_names live = {0};
	fw_fleet_census_init(&c);
	bool *exists = calloc(total, 1);
	out->v = calloc(total, sizeof(*out->v));
	if (!exists || !out->v)
		rc = -ENOMEM;
	if (rc == 0) /* every live identity in one request, not one per owner */
		rc = fw_fleet_live_names(s, &live);
	if (rc == 0)
		rc = s->ops->list(s, exists, total);
	for (uint32_t w = 0; rc == 0 && w < total; w++) {
		struct fw_fleet_entry *e = &out->v[out->n];
		struct fw_fleet_rec d;
		struct fw_fleet_ver v;
		int g = exists[w] ? fw_fleet_read(s, w, &d, &v) : -ENOENT;
		if (g != 0 && g != -ENOENT && g != -EINVAL) {
			rc = g;
			break;
		}
		if (g == 0 || g == -EINVAL) {
			if (g == -EINVAL) {
				memset(&d, 0, sizeof(d));
				snprintf(d.owner, sizeof(d.owner), "?garbled");
			}
			e->worker = w;
			snprintf(e->owner, sizeof(e->owner), "%s", d.owner);
			e->lease_ms = d.lease;
			e->floor_ms = d.floor;
			e->renewed_unix = v.mtime;
			e->alive = d.owner[0] && fw_fleet_names_has(&live, d.owner);
			out->n++;
		}
		if (rc == 0) /* the same count as a node's gauges */
			rc = fw_fleet_census_add(&c, &rr.reserved, w, g, &d, now_l, list_alive,
						 &e->alive);
	}
	free(exists);
	fw_fleet_names_free(&live);
	out->total_ids = c.total;
	out->reserved_ids = c.reserved;
	out->free_ids = c.free;
	out->stranded_ids = c.stranded;
	out->garbled_ids = c.garbled;
	out->next_stranded_unix = c.stranded ? c.next_stranded + e0 : 0;
	if (rc != 0) {
		fw_fleet_list_free(out);
		return rc == -ENOMEM ? rc : fail(s, rc, "", err, errlen);
	}
	return 0;
}

void fw_fleet_list_free(struct fw_fleet_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int fw_fleet_release_store(struct fw_fleet_store *s, const char *root, uint32_t worker,
			   unsigned flags, uint32_t timeout_ms, char *err, size_t errlen)
{
	char buf[FW_FLEET_REC_MAX], what[64];
	int rc, len;
	if (s->ops->connect(s, timeout_ms) != 0) {
		snprintf(err, errlen, "fleet: %s %s within %u ms", s->name, s->ops->last_error(s),
			 timeout_ms);
		return FW_EFLEET_STORE;
	}
	for (int tries = 0; tries < 10; tries++) {
		struct fw_fleet_ver v;
		struct fw_fleet_rec d;
		rc = fw_fleet_read(s, worker, &d, &v);
		if (rc == -ENOENT) {
			snprintf(err, errlen, "fleet: worker %u has never been claimed in %s",
				 worker, root);
			return -ENOENT;
		}
		if (rc != 0 && rc != -EINVAL)
			break;
		if (rc == -EINVAL) {
			fw_fleet_key_worker(what, sizeof(what), root, worker);
			snprintf(err, errlen, "fleet: %s is garbled; not touched", what);
			return FW_EFLEET_STORE;
		}
		if (d.owner[0] && !(flags & FW_FLEET_RELEASE_FORCE)) {
			/* a live owner keeps issuing up to its confirmed lease whatever the
			 * record says: a release is for a node that is gone */
			bool alive = false;
			char lt[FW_FLEET_REC_MAX];
			int ll = 0;
			struct fw_layout l = {0};
			/* fails closed: an owner whose liveness cannot be read is not released */
			rc = s->ops->alive_of(s, d.owner, &alive);
			if (rc != 0)
				break;
			if (alive) {
				char ts[FW_ISO8601_LEN] = "";
				/* only the message needs the layout (the lease's date) */
				struct fw_fleet_ver rv;
				if (s->ops->meta_get(s, root, lt, &ll, &rv) == 0 &&
				    fw_fleet_layout_parse(lt, ll, &l) == 0)
					fw_format_iso8601(d.lease + l.epoch_ms, ts);
				else
					snprintf(ts, sizeof(ts), "ms %llu of the epoch",
						 (unsigned long long)d.lease);
				snprintf(err, errlen,
					 "fleet: worker %u is held by %s, alive, its lease until "
					 "%s: it keeps issuing until then whatever the record "
					 "says; stop it first (its IDs come back at its next "
					 "start or lease end), or --force",
					 worker, d.owner, ts);
				return -EBUSY;
			}
		}
		d.owner[0] = '\0';
		d.token = 0;
		d.floor = FW_MAX(d.floor, d.lease);
		d.lease = d.floor;
		len = fw_fleet_rec_format(buf, sizeof(buf), &d);
		rc = s->ops->cas(s, worker, buf, len, v.version, &v);
		if (rc != -ESTALE)
			break;
	}
	if (rc == 0)
		return 0;
	snprintf(what, sizeof(what), "releasing worker %u: ", worker);
	return fail(s, rc, what, err, errlen);
}

static uint64_t admin_rand64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = fw_wall_ms() ^ ((uint64_t)getpid() << 32) ^ fw_mono_ms();
	return v | 1; /* 0 reads as "no generation" */
}

static int admin_rc(struct fw_fleet_store *s, int rc, const char *what, const char *key, char *err,
		    size_t errlen)
{
	snprintf(err, errlen, "fleet: %s: %s %s: %s", s->name, what, key,
		 rc == -ENOTCONN || rc == -EIO || rc == -EACCES ? s->ops->last_error(s)
								: fw_fleet_store_strerror(rc));
	return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
}

static void layout_text(char *buf, size_t cap, const struct fw_layout *l)
{
	snprintf(buf, cap,
		 "epoch_ms %" PRIu64 " datacenter_bits %u worker_bits %u sequence_bits %u",
		 l->epoch_ms, l->dc_bits, l->worker_bits, l->seq_bits);
}

/* The store-wide layout: created by the first init, every later one must match it. */
static int ids_layout(struct fw_fleet_store *s, const struct fw_layout *l, char *err, size_t errlen)
{
	char key[64], buf[FW_FLEET_REC_MAX], a[128], b[128];
	int len = fw_fleet_layout_format(buf, sizeof(buf), l), rc = 0;
	struct fw_fleet_ver v;
	struct fw_layout have;
	fw_fleet_key_ids_layout(key, sizeof(key));
	for (int tries = 0; tries < 5; tries++) {
		rc = s->ops->meta_get(s, key, buf, &len, &v);
		if (rc == -ENOENT) {
			len = fw_fleet_layout_format(buf, sizeof(buf), l);
			rc = s->ops->meta_create(s, key, buf, len);
			if (rc == 0 || rc == -EEXIST)
				continue; /* read what is there now */
		}
		if (rc != 0)
			return admin_rc(s, rc, "the store's layout", key, err, errlen);
		if (fw_fleet_layout_parse(buf, len, &have) != 0) {
			snprintf(err, errlen,
				 "fleet: %s: %s holds no flakewire layout; not touched", s->name,
				 key);
			return FW_EFLEET_LAYOUT;
		}
		if (fw_fleet_layout_same(&have, l))
			return 0;
		layout_text(a, sizeof(a), &have);
		layout_text(b, sizeof(b), l);
		snprintf(err, errlen,
			 "fleet: %s: the roots of this store use layout %s (%s); this init asks "
			 "for %s: every root of one store shares one layout (a new layout is a "
			 "new store, doc/fleet.md)",
			 s->name, a, key, b);
		return FW_EFLEET_LAYOUT;
	}
	return admin_rc(s, -EIO, "the store's layout keeps changing at", key, err, errlen);
}

/* Takes datacenter value @dc for @root in the store (S1: one root per value). */
static int ids_dc(struct fw_fleet_store *s, const char *root, uint32_t dc, char *err, size_t errlen)
{
	char key[64], buf[FW_FLEET_REC_MAX], other[256];
	int len = fw_fleet_dc_format(buf, sizeof(buf), root);
	struct fw_fleet_ver v;
	fw_fleet_key_ids_dc(key, sizeof(key), dc);
	int rc = s->ops->meta_create(s, key, buf, len);
	if (rc == 0)
		return 0;
	if (rc != -EEXIST)
		return admin_rc(s, rc, "taking datacenter value at", key, err, errlen);
	rc = s->ops->meta_get(s, key, buf, &len, &v);
	if (rc != 0)
		return admin_rc(s, rc, "reading", key, err, errlen);
	if (fw_fleet_dc_parse(buf, len, other, sizeof(other)) != 0) {
		snprintf(err, errlen, "fleet: %s: %s is garbled; not touched", s->name, key);
		return FW_EFLEET_ROOT;
	}
	if (!strcmp(other, root))
		return 0; /* ours: an earlier init of this root */
	snprintf(err, errlen,
		 "fleet: %s: datacenter value %u is root %s's (%s): two roots of one store "
		 "with one datacenter value would issue the same IDs; give %s another [id] "
		 "datacenter",
		 s->name, dc, other, key, root);
	return FW_EFLEET_ROOT;
}

static int init_root(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
		     uint32_t datacenter, const char *reserve, uint32_t timeout_ms, bool fencing,
		     char *err, size_t errlen);

/* The store's history mark into a root about to be written by init or fence (where the store keeps
 * one: fw_fleet_store.h); nodes read a mark below it as a restore since (fw_fleet_stop.h). */
static void history_mark(struct fw_fleet_store *s, struct fw_fleet_root *r)
{
	int64_t m = 0;
	r->has_history = s->ops->history != NULL && s->ops->history(s, &m) == 0;
	r->history = r->has_history ? m : 0;
}

int fw_fleet_init_store(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			uint32_t datacenter, const char *reserve, uint32_t timeout_ms, char *err,
			size_t errlen)
{
	return init_root(s, root, l, datacenter, reserve, timeout_ms, false, err, errlen);
}

/* @fencing: a root that is gone though its value's record names it (wiped) is made again */
static int init_root(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
		     uint32_t datacenter, const char *reserve, uint32_t timeout_ms, bool fencing,
		     char *err, size_t errlen)
{
	char buf[FW_FLEET_REC_MAX], res[FW_FLEET_RESERVE_MAX * 12 + 1], have_res[sizeof(res)];
	uint32_t total = 1u << l->worker_bits;
	struct fw_fleet_root want = {.layout = *l, .has_dc = true, .datacenter = datacenter};
	size_t il = strlen(FW_FLEET_IDS);
	if (root[0] != '/' ||
	    (!strncmp(root, FW_FLEET_IDS, il) && (!root[il] || root[il] == '/'))) {
		snprintf(err, errlen, "fleet: root %s: %s holds the store's own records", root,
			 FW_FLEET_IDS);
		return -EINVAL;
	}
	if (datacenter >> l->dc_bits) {
		snprintf(err, errlen,
			 "fleet: datacenter %u: out of range (0-%u) for datacenter_bits %u",
			 datacenter, (1u << l->dc_bits) - 1, l->dc_bits);
		return -EINVAL;
	}
	if (fw_fleet_reserve_parse(reserve ? reserve : "", total, &want.reserved) != 0) {
		snprintf(err, errlen,
			 "fleet: reserve %s: not a list of worker IDs and ranges A-B (0-%u, at "
			 "most %d ranges)",
			 reserve, total - 1, FW_FLEET_RESERVE_MAX);
		return -EINVAL;
	}
	fw_fleet_reserve_format(res, sizeof(res), &want.reserved);
	if (s->ops->connect(s, timeout_ms) != 0) {
		snprintf(err, errlen, "fleet: %s %s within %u ms", s->name, s->ops->last_error(s),
			 timeout_ms);
		return FW_EFLEET_STORE;
	}
	int rc = ids_layout(s, l, err, errlen);
	for (int tries = 0; rc == 0 && tries < 5; tries++) {
		struct fw_fleet_root have;
		struct fw_fleet_ver v;
		int len = 0;
		rc = s->ops->meta_get(s, root, buf, &len, &v);
		if (rc != 0 && rc != -ENOENT)
			return admin_rc(s, rc, "reading the root", root, err, errlen);
		bool exists = rc == 0, empty = exists && len == 0;
		if (exists && !empty && fw_fleet_root_parse(buf, len, &have) != 0) {
			snprintf(err, errlen,
				 "fleet: %s holds no flakewire fleet layout; not touched", root);
			return FW_EFLEET_LAYOUT;
		}
		if (exists && !empty && !fw_fleet_layout_same(&have.layout, l)) {
			char a[128], b[128];
			layout_text(a, sizeof(a), &have.layout);
			layout_text(b, sizeof(b), l);
			snprintf(err, errlen,
				 "fleet: %s is a fleet with layout %s; this init asks "
				 "for %s: not changed",
				 root, a, b);
			return FW_EFLEET_LAYOUT;
		}
		if (exists && !empty && have.has_dc) {
			fw_fleet_reserve_format(have_res, sizeof(have_res), &have.reserved);
			if (have.datacenter != datacenter ||
			    !fw_fleet_reserve_same(&have.reserved, &want.reserved, total)) {
				snprintf(err, errlen,
					 "fleet: %s exists with datacenter %u and reserve '%s'; "
					 "this init asks for datacenter %u and reserve '%s': not "
					 "changed (a root's datacenter value and reservation are "
					 "fixed when it is made)",
					 root, have.datacenter, have_res, datacenter, res);
				return FW_EFLEET_ROOT;
			}
			/* the same root: make sure its value's record is there, change nothing */
			rc = ids_dc(s, root, datacenter, err, errlen);
			return rc != 0 ? rc : FW_FLEET_INIT_SAME;
		}
		if (!exists && !fencing) {
			/* the value's record naming this root: the root was made and is gone */
			char k[64], other[256], b2[FW_FLEET_REC_MAX];
			int l2 = 0;
			struct fw_fleet_ver v2;
			fw_fleet_key_ids_dc(k, sizeof(k), datacenter);
			if (s->ops->meta_get(s, k, b2, &l2, &v2) == 0 &&
			    fw_fleet_dc_parse(b2, l2, other, sizeof(other)) == 0 &&
			    !strcmp(other, root)) {
				snprintf(err, errlen,
					 "fleet: %s was made before (%s names it) and is gone: its "
					 "nodes may still issue under leases it confirmed; make it "
					 "again with 'flakectl fleet fence', never init",
					 root, k);
				return FW_EFLEET_ROOT;
			}
		}
		rc = ids_dc(s, root, datacenter, err, errlen);
		if (rc != 0)
			return rc;
		if (exists && !empty) {
			/* adopting a root made before: no reserved ID may have a record */
			bool *ex = calloc(total, 1);
			if (ex == NULL)
				return -ENOMEM;
			rc = s->ops->list(s, ex, total);
			for (uint32_t w = 0; rc == 0 && w < total; w++)
				if (ex[w] && fw_fleet_reserved(&want.reserved, w)) {
					snprintf(
						err, errlen,
						"fleet: %s: worker %u has been claimed already: it "
						"cannot be reserved for static nodes",
						root, w);
					free(ex);
					return FW_EFLEET_ROOT;
				}
			free(ex);
			if (rc != 0)
				return admin_rc(s, rc, "listing", root, err, errlen);
		}
		want.generation = admin_rand64();
		history_mark(s, &want);
		len = fw_fleet_root_format(buf, sizeof(buf), &want);
		rc = exists ? s->ops->meta_cas(s, root, buf, len, v.version)
			    : s->ops->meta_create(s, root, buf, len);
		if (rc == -ESTALE || rc == -EEXIST || rc == -ENOENT) {
			rc = 0;
			continue; /* another init came first: read it again */
		}
		if (rc != 0)
			return admin_rc(s, rc, "writing the root", root, err, errlen);
		static const char *const subs[] = {"workers", "nodes", "clock"};
		for (size_t i = 0; i < FW_ARRAY_SIZE(subs); i++) {
			char k[512];
			fw_fleet_key_sub(k, sizeof(k), root, subs[i]);
			rc = s->ops->meta_create(s, k, "", 0);
			if (rc != 0 && rc != -EEXIST)
				return admin_rc(s, rc, "creating", k, err, errlen);
		}
		return exists && !empty ? FW_FLEET_INIT_ADOPTED : FW_FLEET_INIT_CREATED;
	}
	if (rc == 0)
		rc = admin_rc(s, -EIO, "the root keeps changing:", root, err, errlen);
	return rc;
}

int fw_fleet_static_store(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			  uint32_t datacenter, const uint32_t *workers, uint32_t n,
			  uint32_t timeout_ms, char *err, size_t errlen)
{
	struct fw_fleet_root rec;
	char res[FW_FLEET_RESERVE_MAX * 12 + 1];
	if (s->ops->connect(s, timeout_ms) != 0) {
		snprintf(err, errlen,
			 "fleet: %s %s within %u ms: a static node checks its worker IDs against "
			 "%s's reservation before it issues",
			 s->name, s->ops->last_error(s), timeout_ms, root);
		return FW_EFLEET_STORE;
	}
	int rc = fw_fleet_root_check(s, root, l, datacenter, &rec, err, errlen);
	if (rc != 0)
		return rc;
	fw_fleet_reserve_format(res, sizeof(res), &rec.reserved);
	for (uint32_t i = 0; i < n; i++)
		if (!fw_fleet_reserved(&rec.reserved, workers[i])) {
			snprintf(err, errlen,
				 "fleet: static worker %u is not reserved in %s (reserved: '%s'): "
				 "its fleet may claim it and issue the same IDs; reserve it with "
				 "'flakectl fleet init --reserve' when the root is made, or use "
				 "a reserved one",
				 workers[i], root, res[0] ? res : "none");
			return FW_EFLEET_ROOT;
		}
	return 0;
}

int fw_fleet_fence_store(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			 uint32_t datacenter, const char *reserve, uint64_t lease_ms,
			 uint32_t timeout_ms, uint64_t *fence_unix, char *err, size_t errlen)
{
	char buf[FW_FLEET_REC_MAX];
	int rc = init_root(s, root, l, datacenter, reserve, timeout_ms, true, err, errlen);
	if (rc < 0)
		return rc;
	for (int tries = 0; tries < 5; tries++) {
		struct fw_fleet_root r;
		struct fw_fleet_ver v;
		uint64_t server = 0;
		int len = 0;
		rc = s->ops->meta_get(s, root, buf, &len, &v);
		if (rc != 0)
			return admin_rc(s, rc, "reading the root", root, err, errlen);
		if (fw_fleet_root_parse(buf, len, &r) != 0) {
			snprintf(err, errlen, "fleet: %s holds no flakewire fleet layout", root);
			return FW_EFLEET_LAYOUT;
		}
		rc = s->ops->now(s, NULL, NULL, &server, NULL);
		if (rc != 0)
			return admin_rc(s, rc, "the store's time at", root, err, errlen);
		/* above anything an owner may issue under a lease confirmed before now */
		uint64_t at = FW_MAX(server, fw_wall_ms()) + lease_ms;
		uint64_t fl = at > l->epoch_ms ? at - l->epoch_ms : 0;
		r.fence = FW_MAX(r.fence + 1, fl);
		r.generation = admin_rand64();
		history_mark(s, &r);
		len = fw_fleet_root_format(buf, sizeof(buf), &r);
		rc = s->ops->meta_cas(s, root, buf, len, v.version);
		if (rc == -ESTALE)
			continue;
		if (rc != 0)
			return admin_rc(s, rc, "writing the root", root, err, errlen);
		if (fence_unix)
			*fence_unix = r.fence + l->epoch_ms;
		return 0;
	}
	return admin_rc(s, -EIO, "the root keeps changing:", root, err, errlen);
}

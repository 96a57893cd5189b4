/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operators' tools (flakectl fleet ls | release | check) over any store:
 * one-shot sessions, no liveness record of their own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_recipe.h"
#include "fw_time.h"
#include "fw_fleet_admin.h"

static int fail(struct fw_fleet_store *s, int rc, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "fleet: %s: %s%s", s->name, what,
		 rc == -ENOTCONN || rc == -EIO ? s->ops->last_error(s)
					       : fw_fleet_store_strerror(rc));
	return FW_EFLEET_STORE;
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
	rc = s->ops->prepare(s, false, NULL, 0, buf, &len);
	if (rc == -ENOENT || (rc == 0 && fw_fleet_layout_parse(buf, len, &out->layout) != 0)) {
		snprintf(err, errlen, "fleet: no flakewire fleet at %s", root);
		return -ENOENT;
	}
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
	bool *exists = calloc(total, 1);
	out->v = calloc(total, sizeof(*out->v));
	if (!exists || !out->v)
		rc = -ENOMEM;
	if (rc == 0)
		rc = s->ops->list(s, exists, total);
	for (uint32_t w = 0; rc == 0 && w < total; w++) {
		struct fw_fleet_entry *e = &out->v[out->n];
		struct fw_fleet_rec d;
		struct fw_fleet_ver v;
		if (!exists[w])
			continue;
		rc = fw_fleet_read(s, w, &d, &v);
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (rc == -EINVAL) {
			memset(&d, 0, sizeof(d));
			snprintf(d.owner, sizeof(d.owner), "?garbled");
		} else if (rc != 0) {
			break;
		}
		rc = 0;
		e->worker = w;
		snprintf(e->owner, sizeof(e->owner), "%s", d.owner);
		e->lease_ms = d.lease;
		e->floor_ms = d.floor;
		e->renewed_unix = v.mtime;
		if (d.owner[0] && fw_fleet_identity_ok(d.owner))
			rc = s->ops->alive_of(s, d.owner, &e->alive);
		out->n++;
	}
	free(exists);
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
				if (s->ops->prepare(s, false, NULL, 0, lt, &ll) == 0 &&
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

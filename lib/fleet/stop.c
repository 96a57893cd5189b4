/* SPDX-License-Identifier: BSD-3-Clause */
/* The stop record of a wiped or restored registry (fw_fleet_stop.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_fleet_session.h"
#include "fw_fleet_stop.h"
#include "fw_time.h"

#define MAGIC "flakewire-stopped v1"

int fw_fleet_stop_format(char *buf, size_t cap, const struct fw_fleet_stop *st)
{
	char reason[FW_FLEET_STOP_REASON_MAX];
	snprintf(reason, sizeof(reason), "%s", st->reason);
	for (char *p = reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' '; /* one line */
	int n = snprintf(buf, cap,
			 MAGIC "\ngeneration=%016" PRIx64 "\nby=%s\nat=%" PRIu64 "\nreason=%s\n",
			 st->generation, st->by, st->at, reason);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int fw_fleet_stop_parse(const char *buf, int len, struct fw_fleet_stop *st)
{
	char text[FW_FLEET_REC_MAX + 1], *save = NULL;
	bool gen = false;
	if (len < 0 || len > FW_FLEET_REC_MAX)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	memset(st, 0, sizeof(*st));
	char *line = strtok_r(text, "\n", &save);
	if (line == NULL || strcmp(line, MAGIC))
		return -EINVAL;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		char *end;
		if (!strncmp(line, "generation=", 11)) {
			errno = 0;
			st->generation = strtoull(line + 11, &end, 16);
			if (errno || end == line + 11 || *end)
				return -EINVAL;
			gen = true;
		} else if (!strncmp(line, "by=", 3)) {
			snprintf(st->by, sizeof(st->by), "%s", line + 3);
		} else if (!strncmp(line, "at=", 3)) {
			st->at = strtoull(line + 3, &end, 10);
		} else if (!strncmp(line, "reason=", 7)) {
			snprintf(st->reason, sizeof(st->reason), "%s", line + 7);
		}
	}
	return gen ? 0 : -EINVAL;
}

static int stop_get(struct fw_fleet_store *s, const char *root, struct fw_fleet_stop *st,
		    struct fw_fleet_ver *v)
{
	char key[512], buf[FW_FLEET_REC_MAX];
	int len = 0;
	fw_fleet_key_sub(key, sizeof(key), root, "stopped");
	int rc = s->ops->meta_get(s, key, buf, &len, v);
	if (rc != 0)
		return rc;
	return fw_fleet_stop_parse(buf, len, st);
}

int fw_fleet_stop_read(struct fw_fleet_store *s, const char *root, struct fw_fleet_stop *st)
{
	struct fw_fleet_ver v;
	return stop_get(s, root, st, &v);
}

int fw_fleet_stop_write(struct fw_fleet_store *s, const char *root, const struct fw_fleet_stop *st)
{
	char key[512], buf[FW_FLEET_REC_MAX];
	int len = fw_fleet_stop_format(buf, sizeof(buf), st);
	if (len < 0)
		return -EIO;
	fw_fleet_key_sub(key, sizeof(key), root, "stopped");
	for (int tries = 0; tries < 4; tries++) {
		int rc = s->ops->meta_create(s, key, buf, len);
		if (rc != -EEXIST)
			return rc;
		struct fw_fleet_stop have;
		struct fw_fleet_ver v;
		rc = stop_get(s, root, &have, &v);
		if (rc == -ENOENT)
			continue; /* gone meanwhile: create again */
		if (rc == 0 && have.generation == st->generation)
			return 0; /* stopped already: the first node's words stay */
		if (rc != 0 && rc != -EINVAL)
			return rc;
		rc = s->ops->meta_cas(s, key, buf, len, v.version); /* another generation's */
		if (rc != -ESTALE && rc != -ENOENT)
			return rc;
	}
	return -EIO;
}

int fw_fleet_stop_tombstone(struct fw_fleet_store *s, const char *root, uint32_t datacenter)
{
	char key[64], buf[FW_FLEET_REC_MAX], other[256];
	struct fw_fleet_ver v;
	int len = fw_fleet_dc_format(buf, sizeof(buf), root);
	if (len < 0)
		return -EIO;
	fw_fleet_key_ids_dc(key, sizeof(key), datacenter);
	int rc = s->ops->meta_create(s, key, buf, len);
	if (rc != -EEXIST)
		return rc;
	rc = s->ops->meta_get(s, key, buf, &len, &v);
	if (rc != 0)
		return rc;
	return fw_fleet_dc_parse(buf, len, other, sizeof(other)) == 0 && !strcmp(other, root)
		       ? 0
		       : -EEXIST;
}

int fw_fleet_stop_history_back(struct fw_fleet_store *s, const struct fw_fleet_root *r,
			       int64_t *now_mark)
{
	int64_t m = 0;
	if (!r->has_history || s->ops->history == NULL || s->ops->history(s, &m) != 0)
		return 0;
	*now_mark = m;
	return m < r->history - FW_FLEET_HISTORY_SLACK ? 1 : 0;
}

/* ---- the session's side (fw_fleet_session.h) ---- */

static void stop_put(struct fw_fleet_session *ss)
{
	struct fw_fleet_store *s = ss->store;
	struct fw_fleet_stop st = {.generation = ss->stop_gen};
	uint64_t server = 0;
	snprintf(st.by, sizeof(st.by), "%s", ss->identity);
	/* the store's time; a store that went back may refuse it (its write counter) */
	st.at = s->ops->now(s, NULL, NULL, &server, NULL) == 0 ? server : fw_wall_ms();
	snprintf(st.reason, sizeof(st.reason), "%.*s", (int)sizeof(st.reason) - 1,
		 ss->why[0] ? ss->why : "a record of it went back: restored from a snapshot");
	ss->stop_written = fw_fleet_stop_write(s, ss->root, &st) == 0;
}

void fw_fleet_session_went_back(struct fw_fleet_session *ss, uint64_t gen, const char *why)
{
	if (!ss->back || !ss->why[0])
		snprintf(ss->why, sizeof(ss->why), "%s", why ? why : "");
	ss->back = true;
	if (!ss->stop_written || ss->stop_gen != gen) {
		ss->stop_gen = gen;
		ss->stop_written = false;
		stop_put(ss);
	}
}

int fw_fleet_session_stop_check(struct fw_fleet_session *ss, const struct fw_fleet_root *r,
				char *err, size_t errlen)
{
	struct fw_fleet_store *s = ss->store;
	struct fw_fleet_stop st;
	char key[512], ts[FW_ISO8601_LEN];
	int64_t mark = 0;
	fw_fleet_key_sub(key, sizeof(key), ss->root, "stopped");
	int rc = fw_fleet_stop_read(s, ss->root, &st);
	if (rc != 0 && rc != -ENOENT && rc != -EINVAL) {
		snprintf(err, errlen, "fleet: %s: reading %s: %s", s->name, key,
			 rc == -ENOTCONN || rc == -EIO ? s->ops->last_error(s)
						       : fw_fleet_store_strerror(rc));
		return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	}
	if (rc == 0 && st.generation == r->generation) {
		if (!ss->back || !ss->why[0])
			snprintf(ss->why, sizeof(ss->why), "stopped by %.200s: %s saw at %s: %s",
				 key, st.by[0] ? st.by : "a node", fw_format_iso8601(st.at, ts),
				 st.reason);
		ss->back = true;
		ss->stop_gen = r->generation;
		ss->stop_written = true;
	} else if (fw_fleet_stop_history_back(s, r, &mark)) {
		char why[FW_FLEET_STOP_REASON_MAX];
		snprintf(why, sizeof(why),
			 "the store went back: %s's history mark is %" PRId64 ", below the %" PRId64
			 " the root recorded at its last init or fence: it was restored from a "
			 "copy since",
			 s->name, mark, r->history);
		fw_fleet_session_went_back(ss, r->generation, why);
	} else if (!ss->back) {
		return 0;
	} else {
		/* stopped by what this node saw: the record is missing (a write that
		 * failed, or the store went back again) or names another generation */
		ss->stop_gen = r->generation;
		stop_put(ss);
	}
	snprintf(err, errlen,
		 "fleet: %s: %s: no claim, takeover or renewal (issuing goes on within the "
		 "confirmed leases) until an operator runs 'flakectl fleet fence --root %s'",
		 ss->root, ss->why, ss->root);
	return FW_EFLEET_ROOT;
}

void fw_fleet_session_root_gone(struct fw_fleet_session *ss)
{
	if (!ss->tombstone)
		ss->tombstone = fw_fleet_stop_tombstone(ss->store, ss->root, ss->datacenter) == 0;
}

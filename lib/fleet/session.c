/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_session.h"
#include "fw_time.h"

static int store_fail(struct fw_fleet_store *s, int rc, const char *what, const char *key,
		      char *err, size_t errlen)
{
	snprintf(err, errlen, "fleet: %s: %s %s: %s", s->name, what, key,
		 rc == -ENOTCONN || rc == -EIO || rc == -EACCES ? s->ops->last_error(s)
								: fw_fleet_store_strerror(rc));
	return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
}

int fw_fleet_root_check(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			uint32_t datacenter, struct fw_fleet_root *out, char *err, size_t errlen)
{
	char have[FW_FLEET_REC_MAX], key[64], other[256];
	struct fw_fleet_ver v;
	int have_len = 0;
	int rc = s->ops->meta_get(s, root, have, &have_len, &v);
	if (rc == -ENOENT || (rc == 0 && have_len == 0)) {
		snprintf(err, errlen,
			 "fleet: %s: no fleet root %s: an operator creates it once with "
			 "'flakectl fleet init (--zk HOSTS | --etcd URLS) --root %s' and this "
			 "node's [id] layout and datacenter (a node never creates a root)",
			 s->name, root, root);
		return FW_EFLEET_ROOT;
	}
	if (rc != 0)
		return store_fail(s, rc, "reading the root", root, err, errlen);
	struct fw_fleet_root *h = out;
	if (fw_fleet_root_parse(have, have_len, h) != 0) {
		snprintf(err, errlen, "fleet: %s holds no flakewire fleet layout", root);
		return FW_EFLEET_LAYOUT;
	}
	if (!fw_fleet_layout_same(&h->layout, l)) {
		snprintf(err, errlen,
			 "fleet: %s is a fleet with layout epoch %" PRIu64
			 " datacenter_bits %u worker_bits %u sequence_bits %u; this node has "
			 "epoch %" PRIu64 " datacenter_bits %u worker_bits %u sequence_bits %u: "
			 "every member of a fleet needs the same [id] layout",
			 root, h->layout.epoch_ms, h->layout.dc_bits, h->layout.worker_bits,
			 h->layout.seq_bits, l->epoch_ms, l->dc_bits, l->worker_bits, l->seq_bits);
		return FW_EFLEET_LAYOUT;
	}
	if (!h->has_dc) {
		snprintf(
			err, errlen,
			"fleet: %s was made before roots recorded their datacenter value: adopt it "
			"with 'flakectl fleet init --root %s' and the fleet's [id] layout and "
			"datacenter (its records are kept)",
			root, root);
		return FW_EFLEET_ROOT;
	}
	if (h->datacenter != datacenter) {
		snprintf(
			err, errlen,
			"fleet: %s serves datacenter value %u; this node has [id] datacenter = %u: "
			"a root serves the one datacenter value it was initialised with",
			root, h->datacenter, datacenter);
		return FW_EFLEET_ROOT;
	}
	/* the store-wide record of the value names this root: no other root serves it */
	fw_fleet_key_ids_dc(key, sizeof(key), datacenter);
	rc = s->ops->meta_get(s, key, have, &have_len, &v);
	if (rc != 0 && rc != -ENOENT)
		return store_fail(s, rc, "reading", key, err, errlen);
	if (rc == -ENOENT || fw_fleet_dc_parse(have, have_len, other, sizeof(other)) != 0 ||
	    strcmp(other, root)) {
		snprintf(err, errlen,
			 "fleet: %s: the store's record of datacenter value %u (%s) %s%s: run "
			 "'flakectl fleet init --root %s' (it refuses a value another root has)",
			 root, datacenter, key, rc == -ENOENT ? "is missing" : "names ",
			 rc == -ENOENT ? "" : other, root);
		return FW_EFLEET_ROOT;
	}
	return 0;
}

static int root_check(struct fw_fleet_session *ss, char *err, size_t errlen)
{
	struct fw_fleet_root r;
	int rc = fw_fleet_root_check(ss->store, ss->root, &ss->layout, ss->datacenter, &r, err,
				     errlen);
	if (rc == FW_EFLEET_ROOT && ss->gen_set)
		snprintf(err + strlen(err), errlen - strlen(err),
			 "; it was there (generation %016" PRIx64 "): wiped? claims, takeovers and "
			 "renewals stop (issuing goes on within the confirmed leases) until an "
			 "operator runs 'flakectl fleet fence --root %s'",
			 ss->gen, ss->root);
	if (rc == FW_EFLEET_ROOT && ss->gen_set)
		fw_fleet_session_root_gone(ss);
	if (rc != 0)
		return rc;
	if (!ss->gen_set) {
		ss->gen_set = true;
		ss->gen = r.generation;
		ss->fence = r.fence;
	} else if (r.generation != ss->gen && r.fence > ss->fence) {
		ss->gen = r.generation; /* fenced: floors above anything issued before */
		ss->fence = r.fence;
		ss->back = false;
		ss->why[0] = '\0';
		ss->stop_written = ss->tombstone = false;
		ss->alive_ok = false;   /* a wipe took the liveness record too: made again */
		ss->store->wc_high = 0; /* a restored store's writes count from its copy on */
	} else if (r.generation != ss->gen || ss->back) {
		if (!ss->back)
			fw_fleet_session_went_back(ss, r.generation,
						   "the root is of another generation than this "
						   "node started on (made again, or restored) and "
						   "not fenced since");
		return fw_fleet_session_stop_check(ss, &r, err, errlen); /* FW_EFLEET_ROOT */
	}
	/* a stop record of another node, or a history that went back (fw_fleet_stop.h) */
	rc = fw_fleet_session_stop_check(ss, &r, err, errlen);
	if (rc != 0)
		return rc;
	ss->rec = r;
	return 0;
}

/* Random per process, drawn once: tells this process's liveness records from others'. */
static uint64_t process_rand;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_init(void)
{
	if (getrandom(&process_rand, sizeof(process_rand), 0) != sizeof(process_rand))
		process_rand = (uint64_t)getpid() << 32 ^ fw_mono_ms() ^ (uint64_t)time(NULL);
	process_rand |= 1; /* never 0 */
}

static uint64_t process_id(void)
{
	pthread_once(&process_once, process_init);
	return process_rand;
}

/*
 * @identity's liveness record is held by another session. It is replaced
 * at once, never waited for, when it names this state's stamp (a known
 * one) and was written by another process, or by this registry's own
 * earlier session: the state's lock is held by this process for its life
 * and was held by that one for its whole life too, up to after its registry
 * stopped (fw_fleet.h, state_stamp), so the writer of a record naming it is
 * gone, or is this very run. A record of another state (a twin of this
 * identity on another host or directory, or a state whose boot ID is
 * unknown), written before records named their state, or of another
 * registry of this process is never replaced.
 * Returns 0 (replaced: this session holds it), -EEXIST (not proven this
 * state's predecessor's), -EAGAIN (it moved or went since the claim), or
 * a store code.
 */
static int replace_predecessor(struct fw_fleet_session *ss, const char *data, int len)
{
	struct fw_fleet_store *s = ss->store;
	char key[512], have[FW_FLEET_REC_MAX];
	struct fw_fleet_alive a;
	struct fw_fleet_ver v;
	int have_len = 0;
	if (ss->stamp == NULL || !ss->stamp[0] || strstr(ss->stamp, ":unknown-") != NULL)
		return -EEXIST;
	fw_fleet_key_node(key, sizeof(key), ss->root, ss->identity);
	int rc = s->ops->meta_get(s, key, have, &have_len, &v);
	if (rc == -ENOENT)
		return -EAGAIN;
	if (rc != 0)
		return rc;
	if (fw_fleet_alive_parse(have, have_len, &a) != 0 || strcmp(a.state, ss->stamp) ||
	    (a.process == process_id() && a.token != ss->token))
		return -EEXIST;
	rc = s->ops->alive_replace(s, ss->identity, v.version, data, len);
	if (rc == -ESTALE)
		return -EAGAIN;
	if (rc == 0 && a.process == process_id())
		fw_log(&ss->log, FW_LOG_INFO,
		       "fleet: %s: %s was held by an earlier session of this process: replaced",
		       s->name, key);
	else if (rc == 0)
		fw_log(&ss->log, FW_LOG_INFO,
		       "fleet: %s: %s was held by the session of this state's previous process "
		       "(PID %ld), which is gone (this process holds the state's lock): replaced "
		       "rather than waited for until that session ends",
		       s->name, key, a.pid);
	return rc;
}

int fw_fleet_session_ensure(struct fw_fleet_session *ss, uint32_t wait_ms, uint32_t alive_wait_ms,
			    char *err, size_t errlen)
{
	struct fw_fleet_store *s = ss->store;
	if (s->ops->state(s) == FW_FLEET_SESSION_LOST)
		ss->root_ok = ss->alive_ok = false;
	uint64_t sessions = s->sessions;
	int crc = s->ops->connect(s, wait_ms);
	if (s->sessions != sessions) /* a new session: the old one's liveness record goes */
		ss->root_ok = ss->alive_ok = false;
	if (crc != 0) {
		snprintf(err, errlen, "fleet: %s %s", s->name, s->ops->last_error(s));
		return crc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	}
	int rrc = root_check(ss, err, errlen); /* every call: a wiped or restored root stops */
	if (rrc != 0)
		return rrc;
	ss->root_ok = true;
	if (ss->alive_ok)
		return 0;
	char data[FW_FLEET_REC_MAX], p[512];
	struct fw_fleet_alive me = {getpid(), ss->token, process_id(), ""};
	snprintf(me.state, sizeof(me.state), "%s", ss->stamp ? ss->stamp : "");
	int len = fw_fleet_alive_format(data, sizeof(data), &me);
	if (len < 0) { /* a stamp that cannot be written: none (nothing replaces this one) */
		me.state[0] = '\0';
		len = fw_fleet_alive_format(data, sizeof(data), &me);
	}
	uint64_t deadline = fw_mono_ms() + alive_wait_ms;
	for (int moved = 0;;) {
		int rc = s->ops->alive_claim(s, ss->identity, data, len);
		if (rc == -EEXIST)
			rc = replace_predecessor(ss, data, len);
		if (rc == -EAGAIN && ++moved < 5)
			continue; /* it moved or went between the reads: look again */
		if (rc == -EAGAIN)
			rc = -EEXIST;
		if (rc == 0) {
			ss->alive_ok = true;
			return 0;
		}
		if (rc != -EEXIST) {
			snprintf(err, errlen, "fleet: %s: liveness of %s: %s", s->name,
				 ss->identity, s->ops->last_error(s));
			return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
		}
		if (alive_wait_ms == 0)
			return 0; /* running: retried every round */
		if (fw_mono_ms() >= deadline)
			break;
		usleep(200 * 1000);
	}
	fw_fleet_key_node(p, sizeof(p), ss->root, ss->identity);
	snprintf(err, errlen,
		 "fleet: identity %s is in use by another live %s session (%s exists): "
		 "another process with this identity, or this node's previous process less than "
		 "a session timeout ago; give each node its own [fleet] identity",
		 ss->identity, s->name, p);
	return FW_EFLEET_IDENTITY;
}

void fw_fleet_session_drop(struct fw_fleet_session *ss)
{
	ss->store->ops->close(ss->store);
	ss->root_ok = ss->alive_ok = false;
}

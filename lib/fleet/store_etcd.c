/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_http.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_store_etcd.h"
#include "fw_time.h"

#define KEY_LEN 512

struct etcd {
	struct fw_fleet_store base;
	struct etcd_shared sh;
	struct etcd_conn c; /* the caller's */
	char root[256];
	/* the root key's create_revision as last read (meta_get of the root), 0:
	 * unknown: every worker write compares it, so none lands under a root that
	 * was deleted (or deleted and made again) after it was read */
	int64_t root_crev;
	bool guard; /* the next txn_put compares root_crev (worker writes) */
	uint32_t ttl_s;
	char err[1100];
	/* the session, shared with the keep-alive thread */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC; signals stop and state changes */
	int state;         /* enum fw_fleet_session_state */
	int64_t lease;     /* this session's etcd lease, 0: none */
	bool ka_running, ka_stop;
	pthread_t ka;
};

static struct etcd *E(struct fw_fleet_store *s)
{
	return (struct etcd *)s;
}

static int fail(struct etcd *e, int rc)
{
	snprintf(e->err, sizeof(e->err), "%s", e->c.err);
	return rc;
}

static void set_state(struct etcd *e, int st)
{
	pthread_mutex_lock(&e->mu);
	e->state = st;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

/* The keep-alive thread: one keep-alive every third of the TTL, on its own connection. */
static void *keepalive_main(void *arg)
{
	struct etcd *e = arg;
	struct etcd_conn kc;
	if (etcd_conn_init(&kc, &e->sh) != 0) {
		set_state(e, FW_FLEET_SESSION_LOST);
		return NULL;
	}
	uint64_t last_ok = fw_mono_ms(), period = e->ttl_s * 1000u / 3;
	pthread_mutex_lock(&e->mu);
	int64_t lease = e->lease;
	while (!e->ka_stop && e->state != FW_FLEET_SESSION_LOST) {
		uint64_t due = fw_mono_ms() + period;
		struct timespec dl = fw_timespec_of_ns(due * 1000000u);
		while (!e->ka_stop && fw_mono_ms() < due)
			if (pthread_cond_timedwait(&e->cv, &e->mu, &dl) == ETIMEDOUT)
				break;
		if (e->ka_stop)
			break;
		pthread_mutex_unlock(&e->mu);
		struct json_object *req = json_object_new_object(), *out = NULL, *res;
		json_object_object_add(req, "ID", etcd_i64s(lease));
		int rc = etcd_call(&kc, "/v3/lease/keepalive", req, &out, NULL);
		int st = FW_FLEET_SESSION_DOWN;
		if (rc == 0 && json_object_object_get_ex(out, "result", &res))
			st = etcd_i64(res, "TTL") > 0 ? FW_FLEET_SESSION_UP : FW_FLEET_SESSION_LOST;
		json_object_put(out);
		uint64_t now = fw_mono_ms();
		if (st == FW_FLEET_SESSION_UP)
			last_ok = now;
		else if (st == FW_FLEET_SESSION_DOWN && now - last_ok >= e->ttl_s * 1000u)
			st = FW_FLEET_SESSION_LOST; /* etcd has let the lease go by now */
		pthread_mutex_lock(&e->mu);
		if (!e->ka_stop)
			e->state = st;
		pthread_cond_broadcast(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
	etcd_conn_fini(&kc);
	return NULL;
}

static void ka_join(struct etcd *e)
{
	if (!e->ka_running)
		return;
	pthread_mutex_lock(&e->mu);
	e->ka_stop = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->ka, NULL);
	e->ka_running = false;
	e->ka_stop = false;
}

static int es_state(struct fw_fleet_store *s)
{
	struct etcd *e = E(s);
	pthread_mutex_lock(&e->mu);
	int st = e->state;
	pthread_mutex_unlock(&e->mu);
	return st;
}

static void es_close(struct fw_fleet_store *s)
{
	struct etcd *e = E(s);
	ka_join(e);
	if (e->lease) { /* the liveness key goes with the lease */
		struct json_object *req = json_object_new_object(), *out = NULL;
		json_object_object_add(req, "ID", etcd_i64s(e->lease));
		etcd_call(&e->c, "/v3/lease/revoke", req, &out, NULL);
		json_object_put(out);
	}
	e->lease = 0;
	set_state(e, FW_FLEET_SESSION_LOST);
}

static int es_connect(struct fw_fleet_store *s, uint32_t wait_ms)
{
	struct etcd *e = E(s);
	int st = es_state(s);
	if (st == FW_FLEET_SESSION_UP)
		return 0;
	if (st == FW_FLEET_SESSION_DOWN) { /* the keep-alive thread decides: wait for it */
		uint64_t due = fw_mono_ms() + wait_ms;
		struct timespec dl = fw_timespec_of_ns(due * 1000000u);
		pthread_mutex_lock(&e->mu);
		while (e->state == FW_FLEET_SESSION_DOWN)
			if (pthread_cond_timedwait(&e->cv, &e->mu, &dl) == ETIMEDOUT)
				break;
		st = e->state;
		pthread_mutex_unlock(&e->mu);
		if (st == FW_FLEET_SESSION_UP)
			return 0;
		if (st == FW_FLEET_SESSION_DOWN) {
			snprintf(e->err, sizeof(e->err), "%s does not answer", e->sh.ep[0]);
			return -ENOTCONN;
		}
	}
	ka_join(e); /* LOST: a new lease */
	e->lease = 0;
	uint64_t due = fw_mono_ms() + wait_ms;
	int rc;
	do {
		struct json_object *req = json_object_new_object(), *out = NULL;
		json_object_object_add(req, "TTL", etcd_i64s(e->ttl_s));
		rc = etcd_call(&e->c, "/v3/lease/grant", req, &out, NULL);
		if (rc == 0)
			e->lease = etcd_i64(out, "ID");
		json_object_put(out);
		if (rc == 0 || rc != -ENOTCONN)
			break;
		fw_sleep_ms(100);
	} while (fw_mono_ms() < due);
	if (rc != 0 || e->lease == 0)
		return fail(e, rc ? rc : -EIO);
	s->sessions++; /* also when it was DOWN as connect() began, LOST while it waited */
	set_state(e, FW_FLEET_SESSION_UP);
	if (pthread_create(&e->ka, NULL, keepalive_main, e) != 0) {
		snprintf(e->err, sizeof(e->err), "no keep-alive thread");
		set_state(e, FW_FLEET_SESSION_LOST);
		return -EIO;
	}
	e->ka_running = true;
	return 0;
}

/* ---- keys and transactions ---- */

static struct json_object *key_obj(const char *k)
{
	return etcd_b64(k, strlen(k));
}

/* A range request for @key (@prefix: every key below it), as a JSON object. */
static struct json_object *range_req(const char *key, bool prefix, bool keys_only)
{
	struct json_object *r = json_object_new_object();
	json_object_object_add(r, "key", key_obj(key));
	if (prefix) {
		char end[KEY_LEN];
		snprintf(end, sizeof(end), "%s", key);
		end[strlen(end) - 1]++; /* "ROOT/workers/" -> "ROOT/workers0" */
		json_object_object_add(r, "range_end", key_obj(end));
	}
	if (keys_only)
		json_object_object_add(r, "keys_only", json_object_new_boolean(1));
	return r;
}

/* The first kv of a range reply (@o holds "kvs"), or NULL. */
static struct json_object *first_kv(struct json_object *o)
{
	struct json_object *kvs;
	if (!json_object_object_get_ex(o, "kvs", &kvs) || json_object_array_length(kvs) == 0)
		return NULL;
	return json_object_array_get_idx(kvs, 0);
}

/*
 * One txn: if @key's @target ("CREATE" or "MOD") revision equals @rev, put
 * @val (with @lease when not 0); else read @key. *succeeded, and the read
 * kv (NULL when absent or when it succeeded) in *@kv_out of *@out.
 */
static int txn_put(struct etcd *e, const char *key, const char *target, int64_t rev,
		   const char *val, int len, int64_t lease, bool *succeeded,
		   struct json_object **out, struct json_object **kv_out)
{
	struct json_object *req = json_object_new_object(), *cmp = json_object_new_object();
	struct json_object *put = json_object_new_object(), *op = json_object_new_object();
	struct json_object *fop = json_object_new_object(), *sb, *r, *resp;
	json_object_object_add(cmp, "key", key_obj(key));
	json_object_object_add(cmp, "target", json_object_new_string(target));
	json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
	json_object_object_add(cmp, !strcmp(target, "CREATE") ? "create_revision" : "mod_revision",
			       etcd_i64s(rev));
	json_object_object_add(put, "key", key_obj(key));
	json_object_object_add(put, "value", etcd_b64(val, (size_t)len));
	if (lease)
		json_object_object_add(put, "lease", etcd_i64s(lease));
	json_object_object_add(op, "request_put", put);
	json_object_object_add(fop, "request_range", range_req(key, false, false));
	json_object_object_add(req, "compare", json_object_new_array());
	json_object_array_add(json_object_object_get(req, "compare"), cmp);
	if (e->guard && e->root_crev) {
		struct json_object *rc2 = json_object_new_object();
		json_object_object_add(rc2, "key", key_obj(e->root));
		json_object_object_add(rc2, "target", json_object_new_string("CREATE"));
		json_object_object_add(rc2, "result", json_object_new_string("EQUAL"));
		json_object_object_add(rc2, "create_revision", etcd_i64s(e->root_crev));
		json_object_array_add(json_object_object_get(req, "compare"), rc2);
	}
	e->guard = false;
	json_object_object_add(req, "success", json_object_new_array());
	json_object_array_add(json_object_object_get(req, "success"), op);
	json_object_object_add(req, "failure", json_object_new_array());
	json_object_array_add(json_object_object_get(req, "failure"), fop);
	int rc = etcd_call(&e->c, "/v3/kv/txn", req, out, NULL);
	if (rc != 0)
		return fail(e, rc);
	*succeeded =
		json_object_object_get_ex(*out, "succeeded", &sb) && json_object_get_boolean(sb);
	*kv_out = NULL;
	if (!*succeeded && json_object_object_get_ex(*out, "responses", &resp) &&
	    json_object_array_length(resp) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(resp, 0), "response_range", &r))
		*kv_out = first_kv(r);
	return 0;
}

/* The revision a successful txn wrote at (its header's): the new mod_revision. */
static int64_t txn_revision(struct json_object *out)
{
	struct json_object *h;
	return json_object_object_get_ex(out, "header", &h) ? etcd_i64(h, "revision") : 0;
}

static int range(struct etcd *e, const char *key, struct json_object **out, struct json_object **kv)
{
	int rc = etcd_call(&e->c, "/v3/kv/range", range_req(key, false, false), out, NULL);
	if (rc != 0)
		return fail(e, rc);
	*kv = first_kv(*out);
	return 0;
}

/* ---- the operations ---- */

static int es_meta_get(struct fw_fleet_store *s, const char *key, char *buf, int *len,
		       struct fw_fleet_ver *v)
{
	struct etcd *e = E(s);
	struct json_object *out = NULL, *kv;
	int rc = range(e, key, &out, &kv);
	if (rc != 0)
		return rc;
	if (kv == NULL) {
		json_object_put(out);
		return -ENOENT;
	}
	*len = etcd_unb64(kv, "value", buf, FW_FLEET_REC_MAX);
	*v = (struct fw_fleet_ver){etcd_i64(kv, "mod_revision"), 0};
	if (!strcmp(key, e->root))
		e->root_crev = etcd_i64(kv, "create_revision");
	json_object_put(out);
	if (*len < 0) {
		snprintf(e->err, sizeof(e->err), "%s: a value that is not base64", key);
		return -EIO;
	}
	return 0;
}

static int es_meta_put(struct etcd *e, const char *key, const char *target, int64_t rev,
		       const char *buf, int len, int lost)
{
	struct json_object *out = NULL, *kv;
	bool ok = false;
	/* a record below the root lands only under the root meta_get read */
	size_t rl = strlen(e->root);
	e->guard = !strncmp(key, e->root, rl) && key[rl] == '/';
	int rc = txn_put(e, key, target, rev, buf, len, 0, &ok, &out, &kv);
	if (rc != 0)
		return rc;
	if (!ok && kv == NULL)
		lost = -ENOENT; /* a CAS on a record that is gone; a create under a root gone */
	if (ok && rl && !strcmp(key, e->root) && !strcmp(target, "CREATE"))
		e->root_crev = txn_revision(out); /* the root this store made: its records' guard */
	json_object_put(out);
	return ok ? 0 : lost;
}

static int es_meta_create(struct fw_fleet_store *s, const char *key, const char *buf, int len)
{
	return es_meta_put(E(s), key, "CREATE", 0, buf, len, -EEXIST);
}

static int es_meta_cas(struct fw_fleet_store *s, const char *key, const char *buf, int len,
		       int64_t version)
{
	return es_meta_put(E(s), key, "MOD", version, buf, len, -ESTALE);
}

/*
 * The names of the keys below ROOT/@sub/ (keys only, one range request),
 * each given to @each (a non-zero return stops there and is returned).
 * Returns 0, @each's code, or the store's.
 */
static int keys_below(struct etcd *e, const char *sub, int (*each)(void *arg, const char *name),
		      void *arg)
{
	char pfx[KEY_LEN];
	struct json_object *out = NULL, *kvs;
	int n = fw_fleet_key_sub(pfx, sizeof(pfx) - 1, e->root, sub);
	pfx[n] = '/';
	pfx[n + 1] = '\0';
	int rc = etcd_call(&e->c, "/v3/kv/range", range_req(pfx, true, true), &out, NULL);
	if (rc != 0)
		return fail(e, rc);
	if (json_object_object_get_ex(out, "kvs", &kvs)) {
		for (size_t i = 0; rc == 0 && i < json_object_array_length(kvs); i++) {
			char k[KEY_LEN];
			int kl = etcd_unb64(json_object_array_get_idx(kvs, i), "key", k,
					    sizeof(k) - 1);
			if (kl <= n + 1)
				continue;
			k[kl] = '\0';
			rc = each(arg, k + n + 1);
		}
	}
	json_object_put(out);
	return rc;
}

struct listed {
	bool *exists;
	uint32_t total;
};

static int listed_worker(void *arg, const char *name)
{
	struct listed *l = arg;
	int32_t w = fw_fleet_key_worker_parse(name, l->total);
	if (w >= 0)
		l->exists[w] = true;
	return 0;
}

static int es_list(struct fw_fleet_store *s, bool *exists, uint32_t total)
{
	struct listed l = {exists, total};
	return keys_below(E(s), "workers", listed_worker, &l);
}

static int es_get(struct fw_fleet_store *s, uint32_t w, char *buf, int *len, struct fw_fleet_ver *v)
{
	struct etcd *e = E(s);
	char k[KEY_LEN];
	struct json_object *out = NULL, *kv;
	fw_fleet_key_worker(k, sizeof(k), e->root, w);
	int rc = range(e, k, &out, &kv);
	if (rc != 0)
		return rc;
	if (kv == NULL) {
		json_object_put(out);
		return -ENOENT;
	}
	*len = etcd_unb64(kv, "value", buf, FW_FLEET_REC_MAX);
	*v = (struct fw_fleet_ver){etcd_i64(kv, "mod_revision"), 0};
	json_object_put(out);
	if (*len < 0) {
		snprintf(e->err, sizeof(e->err), "%s: a value that is not base64", k);
		return -EIO;
	}
	return 0;
}

static int put_if(struct etcd *e, uint32_t w, const char *target, int64_t rev, const char *buf,
		  int len, struct fw_fleet_ver *v, int lost)
{
	char k[KEY_LEN];
	struct json_object *out = NULL, *kv;
	bool ok = false;
	fw_fleet_key_worker(k, sizeof(k), e->root, w);
	e->guard = true;
	int rc = txn_put(e, k, target, rev, buf, len, 0, &ok, &out, &kv);
	if (rc != 0)
		return rc;
	if (!ok && kv == NULL && lost == -EEXIST)
		lost = -ENOENT; /* a create refused though the record is absent: the root is gone */
	if (ok)
		*v = (struct fw_fleet_ver){txn_revision(out), 0};
	else if (kv == NULL && lost == -ESTALE)
		lost = -ENOENT; /* cas() on a record that is gone */
	json_object_put(out);
	return ok ? 0 : lost;
}

static int es_create(struct fw_fleet_store *s, uint32_t w, const char *buf, int len,
		     struct fw_fleet_ver *v)
{
	return put_if(E(s), w, "CREATE", 0, buf, len, v, -EEXIST);
}

static int es_cas(struct fw_fleet_store *s, uint32_t w, const char *buf, int len, int64_t version,
		  struct fw_fleet_ver *v)
{
	return put_if(E(s), w, "MOD", version, buf, len, v, -ESTALE);
}

static uint64_t realtime_ms(void *arg)
{
	(void)arg;
	return fw_wall_ms();
}

/*
 * etcd's clock is the Date header (whole seconds): the store's time is this
 * node's clock when that falls within the header's second, else the nearer
 * end of that second. So it is exact where the clocks agree and never more
 * than a second off etcd's whatever this node's clock says.
 */
static int es_now(struct fw_fleet_store *s, uint64_t (*local)(void *), void *arg, uint64_t *server,
		  uint64_t *local_mid)
{
	struct etcd *e = E(s);
	struct json_object *out = NULL, *kv;
	if (local == NULL)
		local = realtime_ms;
	uint64_t a = local(arg);
	int rc = range(e, e->root, &out, &kv);
	uint64_t b = local(arg);
	int64_t rev = rc == 0 ? txn_revision(out) : 0;
	json_object_put(out);
	if (rc != 0)
		return rc;
	if (rev < s->wc_high) {
		snprintf(e->err, sizeof(e->err), "revision %lld after %lld: the cluster went back",
			 (long long)rev, (long long)s->wc_high);
		return -ESTALE;
	}
	s->wc_high = rev;
	if (e->c.date_ms == 0) {
		snprintf(e->err, sizeof(e->err), "etcd's reply has no Date header");
		return -EIO;
	}
	uint64_t mid = a + (b - a) / 2, lo = e->c.date_ms, hi = lo + 999;
	*server = mid < lo ? lo : mid > hi ? hi : mid;
	if (local_mid) /* a whole-second clock: no offset measurement from it */
		*local_mid = 0;
	return 0;
}

static int es_alive_claim(struct fw_fleet_store *s, const char *identity, const char *data, int len)
{
	struct etcd *e = E(s);
	char k[KEY_LEN];
	struct json_object *out = NULL, *kv;
	bool ok = false;
	if (e->lease == 0 || es_state(s) == FW_FLEET_SESSION_LOST) {
		snprintf(e->err, sizeof(e->err), "no etcd session");
		return -ENOTCONN;
	}
	fw_fleet_key_node(k, sizeof(k), e->root, identity);
	int rc = txn_put(e, k, "CREATE", 0, data, len, e->lease, &ok, &out, &kv);
	if (rc == 0 && !ok)
		rc = kv != NULL && etcd_i64(kv, "lease") == e->lease ? 0 : -EEXIST;
	json_object_put(out);
	return rc;
}

static int es_alive_replace(struct fw_fleet_store *s, const char *identity, int64_t version,
			    const char *data, int len)
{
	struct etcd *e = E(s);
	char k[KEY_LEN];
	struct json_object *out = NULL, *kv;
	bool ok = false;
	if (e->lease == 0 || es_state(s) == FW_FLEET_SESSION_LOST) {
		snprintf(e->err, sizeof(e->err), "no etcd session");
		return -ENOTCONN;
	}
	if (version <= 0) /* a missing key compares as mod_revision 0: no record has it */
		return -ESTALE;
	fw_fleet_key_node(k, sizeof(k), e->root, identity);
	int rc = txn_put(e, k, "MOD", version, data, len, e->lease, &ok, &out, &kv);
	json_object_put(out);
	return rc != 0 ? rc : ok ? 0 : -ESTALE;
}

static int es_alive_of(struct fw_fleet_store *s, const char *identity, bool *alive)
{
	struct etcd *e = E(s);
	char k[KEY_LEN];
	struct json_object *out = NULL, *kv;
	fw_fleet_key_node(k, sizeof(k), e->root, identity);
	int rc = range(e, k, &out, &kv);
	*alive = rc == 0 && kv != NULL;
	json_object_put(out);
	return rc;
}

/*
 * The history mark (fw_fleet_store.h): the member's applied raft index
 * minus its revision, from one /v3/maintenance/status reply (etcd fills the
 * header's revision before it reads the index, so the mark is never below
 * the member's at that moment). Called right after a linearizable read on
 * the same connection (the root's), so the member has applied every write
 * the root shows. etcd before 3.4 has no raftAppliedIndex: -ENOTSUP (its
 * committed index runs ahead of what is applied, by as much as the load
 * makes it: a mark recorded from it could stop a fleet for nothing).
 */
static int es_history(struct fw_fleet_store *s, int64_t *mark)
{
	struct etcd *e = E(s);
	struct json_object *out = NULL, *h;
	int rc = etcd_call(&e->c, "/v3/maintenance/status", json_object_new_object(), &out, NULL);
	if (rc != 0)
		return fail(e, rc);
	int64_t idx = etcd_i64(out, "raftAppliedIndex");
	int64_t rev = json_object_object_get_ex(out, "header", &h) ? etcd_i64(h, "revision") : 0;
	json_object_put(out);
	if (idx == 0 || rev == 0) {
		snprintf(e->err, sizeof(e->err),
			 "etcd's status reply has no raftAppliedIndex (etcd before 3.4) or "
			 "revision");
		return -ENOTSUP;
	}
	*mark = idx - rev;
	return 0;
}

static int es_alive_list(struct fw_fleet_store *s, int (*each)(void *arg, const char *identity),
			 void *arg)
{
	return keys_below(E(s), "nodes", each, arg);
}

static const char *es_last_error(struct fw_fleet_store *s)
{
	return E(s)->err;
}

static void es_free(struct fw_fleet_store *s)
{
	if (s == NULL)
		return;
	struct etcd *e = E(s);
	es_close(s);
	etcd_conn_fini(&e->c);
	etcd_shared_fini(&e->sh);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e);
}

static const struct fw_fleet_store_ops etcd_ops = {
	.connect = es_connect,
	.state = es_state,
	.close = es_close,
	.meta_get = es_meta_get,
	.meta_create = es_meta_create,
	.meta_cas = es_meta_cas,
	.list = es_list,
	.get = es_get,
	.create = es_create,
	.cas = es_cas,
	.now = es_now,
	.alive_claim = es_alive_claim,
	.alive_replace = es_alive_replace,
	.alive_of = es_alive_of,
	.alive_list = es_alive_list,
	.last_error = es_last_error,
	.free = es_free,
	.history = es_history,
};

struct fw_fleet_store *fw_fleet_store_etcd_new(const struct fw_fleet_etcd_opts *o, const char *root)
{
	char why[300];
	if (o == NULL || root == NULL || strlen(root) >= sizeof(((struct etcd *)0)->root) ||
	    root[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	struct etcd *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	if (etcd_shared_init(&e->sh, o, why, sizeof(why)) != 0) {
		free(e);
		errno = EINVAL;
		return NULL;
	}
	if (etcd_conn_init(&e->c, &e->sh) != 0) {
		etcd_shared_fini(&e->sh);
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	e->base.ops = &etcd_ops;
	e->base.name = "etcd";
	snprintf(e->root, sizeof(e->root), "%s", root);
	e->ttl_s = FW_MAX((o->session_ms + 999u) / 1000u, 2u);
	e->state = FW_FLEET_SESSION_LOST;
	(void)fw_cond_init_mono(&e->cv);
	pthread_mutex_init(&e->mu, NULL);
	return &e->base;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The synchronous API of the multi-threaded client (libzookeeper_mt). */
#define THREADED
#include <zookeeper/zookeeper.h>

#include "fw_fleet_rec.h"
#include "fw_time.h"
#include "fw_fleet_store_zk.h"

#define PATH_LEN 512

struct zk {
	struct fw_fleet_store base;
	char connect[1024], root[256];
	char auth[512]; /* digest "user:password", "" for none; zeroed when freed */
	uint32_t session_ms;
	zhandle_t *zh;
	bool auth_added; /* zoo_add_auth answered ZOK on this handle */
	int auth_rc;     /* its answer, written by the client's completion thread (under mu) */
	bool auth_done;
	char err[1100];
	/* written by the client's event thread (the watcher) */
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* CLOCK_MONOTONIC */
	int zstate;          /* the last session state event */
	uint64_t down_since; /* monotonic ms the handle was first seen not connected (0: up) */
	/* the root node's czxid as last read (meta_get of the root), 0: unknown.
	 * Every worker write checks it after it lands (a ZooKeeper check op
	 * compares data versions, which a root made again starts over): a root
	 * deleted and made again since it was read gets no worker record of
	 * ours, as etcd's guard compares the root's create_revision. */
	int64_t root_czxid;
};

static struct zk *Z(struct fw_fleet_store *s)
{
	return (struct zk *)s;
}

/*
 * With credentials: the fleet's principal (the session's digest identity,
 * scheme "auth") may do everything, anyone else may only read. In ZooKeeper
 * deleting a node needs DELETE on its parent, so the root and its children
 * (workers, nodes, clock) carry it too: nobody else can delete a worker
 * record and create it again at floor 0.
 */
/* ZOO_PERM_ALL and ZOO_PERM_READ are extern consts in the C client: their values, fixed by the
 * protocol */
static struct ACL fleet_acl_v[] = {
	{0x1f /* ZOO_PERM_ALL: read write create delete admin */, {(char *)"auth", (char *)""}},
	{0x01 /* ZOO_PERM_READ */, {(char *)"world", (char *)"anyone"}},
};
static struct ACL_vector fleet_acl = {2, fleet_acl_v};

static struct ACL_vector *acl(const struct zk *z)
{
	return z->auth[0] ? &fleet_acl : &ZOO_OPEN_ACL_UNSAFE;
}

static void zk_quiet_init(void)
{
	/* The C client logs to stderr by default; a library does not print. */
	zoo_set_debug_level((ZooLogLevel)0);
}

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)path;
	struct zk *z = ctx;
	if (type != ZOO_SESSION_EVENT || z == NULL)
		return;
	pthread_mutex_lock(&z->mu);
	z->zstate = state;
	pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->mu);
}

static int rc_of(struct zk *z, int rc)
{
	switch (rc) {
	case ZOK:
		return 0;
	case ZNONODE:
		return -ENOENT;
	case ZNODEEXISTS:
		return -EEXIST;
	case ZBADVERSION:
		return -ESTALE;
	case ZNOAUTH:
	case ZAUTHFAILED:
	case ZINVALIDACL:
		snprintf(z->err, sizeof(z->err),
			 "%s: the ensemble's ACL refuses this session (%s): check [fleet] "
			 "zookeeper_auth_file against the fleet's principal (doc/fleet.md)",
			 zerror(rc), z->auth[0] ? "digest credentials given" : "no credentials");
		return -EACCES;
	case ZCONNECTIONLOSS:
	case ZOPERATIONTIMEOUT:
	case ZSESSIONEXPIRED:
	case ZINVALIDSTATE:
	case ZCLOSING:
	case ZSESSIONMOVED:
		snprintf(z->err, sizeof(z->err), "%s", zerror(rc));
		return -ENOTCONN;
	default:
		/* -125: the quota on the fleet's root is exceeded (ZooKeeper 3.7+; Debian's
		 * 3.8 C client has no name for it) */
		snprintf(z->err, sizeof(z->err), "%s (ZooKeeper error %d%s)", zerror(rc), rc,
			 rc == -125 ? ": a quota on the fleet's root is exceeded" : "");
		return -EIO;
	}
}

static int zs_state(struct fw_fleet_store *s)
{
	struct zk *z = Z(s);
	if (z->zh == NULL)
		return FW_FLEET_SESSION_LOST;
	pthread_mutex_lock(&z->mu);
	int st = z->zstate;
	pthread_mutex_unlock(&z->mu);
	if (st == ZOO_CONNECTED_STATE)
		return FW_FLEET_SESSION_UP;
	if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE)
		return FW_FLEET_SESSION_LOST;
	return FW_FLEET_SESSION_DOWN;
}

static void auth_done(int rc, const void *data)
{
	struct zk *z = (struct zk *)data;
	pthread_mutex_lock(&z->mu);
	z->auth_rc = rc;
	z->auth_done = true;
	pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->mu);
}

/* Adds the digest credentials to a connected handle, once per handle (the client re-sends them on
 * reconnects). */
static int add_auth(struct zk *z, const struct timespec *dl)
{
	if (!z->auth[0] || z->auth_added)
		return 0;
	pthread_mutex_lock(&z->mu);
	z->auth_done = false;
	pthread_mutex_unlock(&z->mu);
	int rc = zoo_add_auth(z->zh, "digest", z->auth, (int)strlen(z->auth), auth_done, z);
	if (rc != ZOK)
		return rc_of(z, rc);
	pthread_mutex_lock(&z->mu);
	while (!z->auth_done)
		if (pthread_cond_timedwait(&z->cv, &z->mu, dl) == ETIMEDOUT)
			break;
	bool done = z->auth_done;
	rc = z->auth_rc;
	pthread_mutex_unlock(&z->mu);
	if (!done) {
		snprintf(z->err, sizeof(z->err), "%s: no answer to the authentication", z->connect);
		return -ENOTCONN;
	}
	if (rc != ZOK)
		return rc_of(z, rc);
	z->auth_added = true;
	return 0;
}

static void zs_close(struct fw_fleet_store *s)
{
	struct zk *z = Z(s);
	if (z->zh)
		zookeeper_close(z->zh);
	z->zh = NULL;
	z->auth_added = false;
	pthread_mutex_lock(&z->mu);
	z->zstate = 0;
	pthread_mutex_unlock(&z->mu);
}

static int zs_connect(struct fw_fleet_store *s, uint32_t wait_ms)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct zk *z = Z(s);
	pthread_once(&once, zk_quiet_init);
	/* A handle that cannot reconnect for two session timeouts is replaced: its
	 * session is gone anyway, and a server restored from an older copy refuses
	 * a client that has seen a later zxid for as long as it lives. */
	if (zs_state(s) == FW_FLEET_SESSION_DOWN) {
		uint64_t now = fw_mono_ms();
		if (z->down_since == 0)
			z->down_since = now;
		else if (now - z->down_since > 2ull * z->session_ms)
			zs_close(s);
	} else {
		z->down_since = 0;
	}
	if (zs_state(s) == FW_FLEET_SESSION_LOST) {
		z->down_since = 0;
		zs_close(s);
		z->zh = zookeeper_init(z->connect, watcher, (int)z->session_ms, NULL, z, 0);
		s->sessions++;
		if (z->zh == NULL) {
			snprintf(z->err, sizeof(z->err), "%s does not answer", z->connect);
			return -ENOTCONN;
		}
	}
	uint64_t due = fw_mono_ms() + wait_ms;
	struct timespec dl = fw_timespec_of_ns(due * 1000000u);
	pthread_mutex_lock(&z->mu);
	while (z->zstate != ZOO_CONNECTED_STATE && z->zstate != ZOO_EXPIRED_SESSION_STATE &&
	       z->zstate != ZOO_AUTH_FAILED_STATE)
		if (pthread_cond_timedwait(&z->cv, &z->mu, &dl) == ETIMEDOUT)
			break;
	int st = z->zstate;
	pthread_mutex_unlock(&z->mu);
	if (st == ZOO_CONNECTED_STATE)
		return add_auth(z, &dl);
	snprintf(z->err, sizeof(z->err), "%s does not answer", z->connect);
	return -ENOTCONN;
}

static int create_if_missing(zhandle_t *zh, const char *path, struct ACL_vector *a)
{
	int rc = zoo_create(zh, path, NULL, -1, a, 0, NULL, 0);
	return rc == ZNODEEXISTS ? ZOK : rc;
}

static int zs_meta_get(struct fw_fleet_store *s, const char *key, char *buf, int *len,
		       struct fw_fleet_ver *v)
{
	struct zk *z = Z(s);
	struct Stat st;
	*len = FW_FLEET_REC_MAX;
	int rc = zoo_get(z->zh, key, 0, buf, len, &st);
	if (rc == ZOK) {
		*len = FW_MAX(*len, 0); /* -1: a node without data */
		*v = (struct fw_fleet_ver){st.version, (uint64_t)st.mtime};
		if (!strcmp(key, z->root))
			z->root_czxid = st.czxid;
	}
	return rc_of(z, rc);
}

/*
 * After a worker write at @p landed: is the root still the one meta_get
 * read? ZOK (or the root never read), ZNONODE when it is gone or was made
 * again (then a record just created, @created, is deleted again: it sits in
 * a root this node never read), else the client's error (the write's fate
 * under this root unknown: the caller's store failure).
 */
static int root_unchanged(struct zk *z, const char *p, bool created)
{
	struct Stat st;
	if (!z->root_czxid)
		return ZOK;
	int rc = zoo_exists(z->zh, z->root, 0, &st);
	if (rc == ZOK && st.czxid == z->root_czxid)
		return ZOK;
	if (rc != ZOK && rc != ZNONODE)
		return rc;
	if (created)
		(void)zoo_delete(z->zh, p, 0); /* best effort: the next round stops claims */
	snprintf(z->err, sizeof(z->err),
		 "%s: the fleet's root was deleted or made again after this node read it", p);
	return ZNONODE;
}

static int zs_meta_create(struct fw_fleet_store *s, const char *key, const char *buf, int len)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	int rc = ZOK;
	if (strlen(key) >= sizeof(p) || key[0] != '/') {
		snprintf(z->err, sizeof(z->err), "%s: not an absolute key", key);
		return -EIO;
	}
	/* the parents, empty and open (another fleet's root may sit beside ours),
	 * but never the root for a record below it: a node never makes its root */
	size_t rl = strlen(z->root);
	bool below = !strncmp(key, z->root, rl) && key[rl] == '/';
	snprintf(p, sizeof(p), "%s", key);
	for (char *c = strchr(p + 1, '/'); !below && rc == ZOK && c != NULL;
	     c = strchr(c + 1, '/')) {
		*c = '\0';
		rc = create_if_missing(z->zh, p, &ZOO_OPEN_ACL_UNSAFE);
		*c = '/';
	}
	if (rc == ZOK)
		rc = zoo_create(z->zh, key, buf, len, acl(z), 0, NULL, 0);
	return rc_of(z, rc);
}

static int zs_meta_cas(struct fw_fleet_store *s, const char *key, const char *buf, int len,
		       int64_t version)
{
	struct zk *z = Z(s);
	return rc_of(z, zoo_set(z->zh, key, buf, len, (int)version));
}

static int zs_list(struct fw_fleet_store *s, bool *exists, uint32_t total)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct String_vector kids = {0, NULL};
	fw_fleet_key_sub(p, sizeof(p), z->root, "workers");
	int rc = zoo_get_children(z->zh, p, 0, &kids);
	if (rc != ZOK)
		return rc_of(z, rc);
	for (int32_t k = 0; k < kids.count; k++) {
		int32_t w = fw_fleet_key_worker_parse(kids.data[k], total);
		if (w >= 0)
			exists[w] = true;
	}
	deallocate_String_vector(&kids);
	return 0;
}

static int zs_get(struct fw_fleet_store *s, uint32_t w, char *buf, int *len, struct fw_fleet_ver *v)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct Stat st;
	fw_fleet_key_worker(p, sizeof(p), z->root, w);
	*len = FW_FLEET_REC_MAX;
	int rc = zoo_get(z->zh, p, 0, buf, len, &st);
	if (rc == ZOK)
		*v = (struct fw_fleet_ver){st.version, (uint64_t)st.mtime};
	return rc_of(z, rc);
}

static int zs_create(struct fw_fleet_store *s, uint32_t w, const char *buf, int len,
		     struct fw_fleet_ver *v)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	fw_fleet_key_worker(p, sizeof(p), z->root, w);
	int rc = zoo_create(z->zh, p, buf, len, acl(z), 0, NULL, 0);
	if (rc == ZOK)
		rc = root_unchanged(z, p, true);
	if (rc == ZOK)
		*v = (struct fw_fleet_ver){0, 0};
	return rc_of(z, rc);
}

static int zs_cas(struct fw_fleet_store *s, uint32_t w, const char *buf, int len, int64_t version,
		  struct fw_fleet_ver *v)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct Stat st;
	fw_fleet_key_worker(p, sizeof(p), z->root, w);
	int rc = zoo_set2(z->zh, p, buf, len, (int)version, &st);
	if (rc == ZOK && (rc = root_unchanged(z, p, false)) == ZOK)
		*v = (struct fw_fleet_ver){st.version, (uint64_t)st.mtime};
	return rc_of(z, rc);
}

static int zs_now(struct fw_fleet_store *s, uint64_t (*local)(void *), void *arg, uint64_t *server,
		  uint64_t *local_mid)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct Stat st;
	fw_fleet_key_sub(p, sizeof(p), z->root, "clock");
	uint64_t a = local ? local(arg) : 0;
	int rc = zoo_set2(z->zh, p, "t", 1, -1, &st);
	uint64_t b = local ? local(arg) : 0;
	if (rc == ZNONODE) {
		rc = create_if_missing(z->zh, p, acl(z));
		if (rc == ZOK)
			rc = zoo_set2(z->zh, p, "t", 1, -1, &st);
	}
	if (rc != ZOK)
		return rc_of(z, rc);
	if (st.mzxid < s->wc_high) {
		snprintf(z->err, sizeof(z->err), "zxid 0x%llx after 0x%llx: the ensemble went back",
			 (unsigned long long)st.mzxid, (unsigned long long)s->wc_high);
		return -ESTALE;
	}
	s->wc_high = st.mzxid;
	*server = (uint64_t)st.mtime;
	if (local_mid)
		*local_mid = a + (b - a) / 2;
	return 0;
}

static int zs_alive_claim(struct fw_fleet_store *s, const char *identity, const char *data, int len)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct Stat st;
	fw_fleet_key_node(p, sizeof(p), z->root, identity);
	for (int tries = 0; tries < 3; tries++) {
		int rc = zoo_create(z->zh, p, data, len, acl(z), ZOO_EPHEMERAL, NULL, 0);
		if (rc != ZNODEEXISTS)
			return rc_of(z, rc);
		rc = zoo_exists(z->zh, p, 0, &st);
		if (rc == ZOK)
			return st.ephemeralOwner == zoo_client_id(z->zh)->client_id ? 0 : -EEXIST;
		if (rc != ZNONODE)
			return rc_of(z, rc);
	}
	return -EEXIST;
}

static int zs_alive_replace(struct fw_fleet_store *s, const char *identity, int64_t version,
			    const char *data, int len)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	zoo_op_t ops[2];
	zoo_op_result_t res[2];
	fw_fleet_key_node(p, sizeof(p), z->root, identity);
	zoo_delete_op_init(&ops[0], p, (int)version);
	zoo_create_op_init(&ops[1], p, data, len, acl(z), ZOO_EPHEMERAL, NULL, 0);
	int rc = zoo_multi(z->zh, 2, ops, res);
	return rc == ZNONODE || rc == ZNODEEXISTS ? -ESTALE : rc_of(z, rc);
}

static int zs_alive_of(struct fw_fleet_store *s, const char *identity, bool *alive)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct Stat st;
	fw_fleet_key_node(p, sizeof(p), z->root, identity);
	int rc = zoo_exists(z->zh, p, 0, &st);
	*alive = rc == ZOK;
	return rc == ZNONODE ? 0 : rc_of(z, rc);
}

static int zs_alive_list(struct fw_fleet_store *s, int (*each)(void *arg, const char *identity),
			 void *arg)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	struct String_vector kids = {0, NULL};
	fw_fleet_key_sub(p, sizeof(p), z->root, "nodes");
	int rc = zoo_get_children(z->zh, p, 0, &kids);
	if (rc != ZOK)
		return rc_of(z, rc);
	rc = 0;
	for (int32_t k = 0; rc == 0 && k < kids.count; k++)
		rc = each(arg, kids.data[k]);
	deallocate_String_vector(&kids);
	return rc;
}

static const char *zs_last_error(struct fw_fleet_store *s)
{
	return Z(s)->err;
}

static void zs_free(struct fw_fleet_store *s)
{
	if (s == NULL)
		return;
	zs_close(s);
	explicit_bzero(Z(s)->auth, sizeof(Z(s)->auth));
	pthread_mutex_destroy(&Z(s)->mu);
	pthread_cond_destroy(&Z(s)->cv);
	free(s);
}

static const struct fw_fleet_store_ops zk_ops = {
	.connect = zs_connect,
	.state = zs_state,
	.close = zs_close,
	.meta_get = zs_meta_get,
	.meta_create = zs_meta_create,
	.meta_cas = zs_meta_cas,
	.list = zs_list,
	.get = zs_get,
	.create = zs_create,
	.cas = zs_cas,
	.now = zs_now,
	.alive_claim = zs_alive_claim,
	.alive_replace = zs_alive_replace,
	.alive_of = zs_alive_of,
	.alive_list = zs_alive_list,
	.last_error = zs_last_error,
	.free = zs_free,
};

struct fw_fleet_store *fw_fleet_store_zk_new(const char *connect, const char *root,
					     uint32_t session_ms, const char *auth)
{
	if (strlen(connect) >= sizeof(((struct zk *)0)->connect) ||
	    strlen(root) >= sizeof(((struct zk *)0)->root) ||
	    (auth && strlen(auth) >= sizeof(((struct zk *)0)->auth))) {
		errno = EINVAL;
		return NULL;
	}
	struct zk *z = calloc(1, sizeof(*z));
	if (z == NULL)
		return NULL;
	z->base.ops = &zk_ops;
	z->base.name = "ZooKeeper";
	snprintf(z->connect, sizeof(z->connect), "%s", connect);
	snprintf(z->root, sizeof(z->root), "%s", root);
	snprintf(z->auth, sizeof(z->auth), "%s", auth ? auth : "");
	z->session_ms = session_ms;
	(void)fw_cond_init_mono(&z->cv);
	pthread_mutex_init(&z->mu, NULL);
	return &z->base;
}

int fw_fleet_store_zk_secure(struct fw_fleet_store *s, uint32_t timeout_ms, char *err,
			     size_t errlen)
{
	struct zk *z = Z(s);
	char p[PATH_LEN];
	int n = 0;
	if (!z->auth[0]) {
		snprintf(err, errlen, "fleet: securing needs the fleet's credentials");
		return -EINVAL;
	}
	int rc = zs_connect(s, timeout_ms);
	if (rc != 0) {
		snprintf(err, errlen, "fleet: ZooKeeper %s", z->err);
		return rc;
	}
	/* the root first: from then on nobody else can add or remove its children */
	static const char *const subs[] = {"", "workers", "nodes", "clock", "census"};
	for (size_t i = 0; i < FW_ARRAY_SIZE(subs); i++) {
		if (i == 0)
			snprintf(p, sizeof(p), "%s", z->root);
		else
			fw_fleet_key_sub(p, sizeof(p), z->root, subs[i]);
		int zrc = zoo_set_acl(z->zh, p, -1, &fleet_acl);
		if (zrc == ZNONODE && i > 0)
			continue;
		if (zrc != ZOK) {
			rc = rc_of(z, zrc);
			snprintf(err, errlen, "fleet: setting the ACL of %s: %s", p,
				 zrc == ZNONODE ? "no such fleet" : z->err);
			return zrc == ZNONODE ? -ENOENT : rc;
		}
		n++;
		if (i != 1 && i != 2)
			continue;
		struct String_vector kids = {0, NULL};
		if (zoo_get_children(z->zh, p, 0, &kids) != ZOK)
			continue;
		char c[2 * PATH_LEN];
		for (int32_t k = 0; k < kids.count; k++) {
			snprintf(c, sizeof(c), "%s/%s", p, kids.data[k]);
			zrc = zoo_set_acl(z->zh, c, -1, &fleet_acl);
			if (zrc == ZOK)
				n++;
			else if (zrc != ZNONODE) { /* an ephemeral gone meanwhile is fine */
				rc = rc_of(z, zrc);
				snprintf(err, errlen, "fleet: setting the ACL of %s: %s", c,
					 z->err);
				deallocate_String_vector(&kids);
				return rc;
			}
		}
		deallocate_String_vector(&kids);
	}
	return n;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet_memstore.h"

#define WORKERS (1u << 10)
#define ALIVE   64
#define META    32

struct rec {
	bool exists;
	char text[FW_FLEET_REC_MAX];
	int len;
	int64_t version;
	uint64_t mtime;
};

struct memsrv {
	pthread_mutex_t mu;
	struct rec w[WORKERS];
	struct {
		char key[256];
		struct rec r;
	} meta[META];
	int64_t rev;
	int64_t offset;
	bool down;
	int lose, fail, resend;
	int fail_rc[WORKERS]; /* writes of worker w fail with this (0: none) */
	uint64_t session_seq;
	struct {
		char identity[FW_FLEET_IDENTITY_MAX];
		uint64_t session;
		char text[FW_FLEET_REC_MAX];
		int len;
		int64_t version;
	} alive[ALIVE];
	uint64_t worker_writes, writes;
	uint64_t dropped_before;  /* sessions <= this are LOST */
	bool replace_next;        /* the next connect() of a live session opens another */
	uint64_t alive_replaced;  /* liveness records replaced (alive_replace) */
	uint64_t calls[MS_CALLS]; /* requests by kind (memsrv_calls) */
	bool keep_history;        /* history() answers (etcd), else -ENOTSUP (ZooKeeper) */
	int64_t hist;             /* the history mark: only a restore moves it, down */
};

/* What a restore brings back (memsrv_snapshot). */
struct memsnap {
	struct rec w[WORKERS];
	struct {
		char key[256];
		struct rec r;
	} meta[META];
	int64_t rev, hist;
};

struct memcl {
	struct fw_fleet_store base;
	struct memsrv *m;
	uint64_t session; /* 0: none */
	char err[64];
};

static uint64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct memcl *C(struct fw_fleet_store *s)
{
	return (struct memcl *)s;
}

/* Locks; returns false (and unlocks) when the call cannot reach the server. */
static bool enter(struct memcl *c)
{
	pthread_mutex_lock(&c->m->mu);
	if (c->m->down || c->session == 0 || c->session <= c->m->dropped_before) {
		pthread_mutex_unlock(&c->m->mu);
		snprintf(c->err, sizeof(c->err), "connection loss");
		return false;
	}
	return true;
}

static void leave(struct memcl *c)
{
	pthread_mutex_unlock(&c->m->mu);
}

static int ms_state(struct fw_fleet_store *s)
{
	struct memcl *c = C(s);
	pthread_mutex_lock(&c->m->mu);
	int st = c->session == 0 || c->session <= c->m->dropped_before ? FW_FLEET_SESSION_LOST
		 : c->m->down                                          ? FW_FLEET_SESSION_DOWN
								       : FW_FLEET_SESSION_UP;
	pthread_mutex_unlock(&c->m->mu);
	return st;
}

static void drop_alive(struct memsrv *m, uint64_t session)
{
	for (int i = 0; i < ALIVE; i++)
		if (m->alive[i].session == session)
			m->alive[i].session = 0;
}

static void ms_close(struct fw_fleet_store *s)
{
	struct memcl *c = C(s);
	pthread_mutex_lock(&c->m->mu);
	drop_alive(c->m, c->session);
	c->session = 0;
	pthread_mutex_unlock(&c->m->mu);
}

static int ms_connect(struct fw_fleet_store *s, uint32_t wait_ms)
{
	(void)wait_ms;
	struct memcl *c = C(s);
	pthread_mutex_lock(&c->m->mu);
	int rc = 0;
	if (c->m->down) {
		snprintf(c->err, sizeof(c->err), "does not answer");
		rc = -ENOTCONN;
	} else if (c->session == 0 || c->session <= c->m->dropped_before || c->m->replace_next) {
		c->m->replace_next = false;
		drop_alive(c->m, c->session);
		c->session = ++c->m->session_seq;
		s->sessions++;
	}
	pthread_mutex_unlock(&c->m->mu);
	return rc;
}

/* The live liveness record of @identity: its index, or -1. */
static int alive_of(struct memsrv *m, const char *identity)
{
	for (int i = 0; i < ALIVE; i++)
		if (m->alive[i].session && !strcmp(m->alive[i].identity, identity))
			return i;
	return -1;
}

static void alive_set(struct memsrv *m, int i, const char *identity, uint64_t session,
		      const char *data, int len)
{
	snprintf(m->alive[i].identity, FW_FLEET_IDENTITY_MAX, "%s", identity);
	m->alive[i].session = session;
	m->alive[i].len = snprintf(m->alive[i].text, sizeof(m->alive[i].text), "%.*s", len, data);
	m->alive[i].version = ++m->rev;
	m->writes++;
}

static struct rec *meta_of(struct memsrv *m, const char *key, bool add)
{
	for (int i = 0; i < META; i++)
		if (m->meta[i].r.exists && !strcmp(m->meta[i].key, key))
			return &m->meta[i].r;
	for (int i = 0; add && i < META; i++)
		if (!m->meta[i].r.exists) {
			snprintf(m->meta[i].key, sizeof(m->meta[i].key), "%s", key);
			return &m->meta[i].r;
		}
	return NULL;
}

static void meta_write(struct memsrv *m, struct rec *r, const char *buf, int len)
{
	r->exists = true;
	r->len = snprintf(r->text, sizeof(r->text), "%.*s", len, buf);
	r->version = ++m->rev;
	r->mtime = (uint64_t)((int64_t)real_ms() + m->offset);
	m->writes++;
}

static int ms_meta_get(struct fw_fleet_store *s, const char *key, char *buf, int *len,
		       struct fw_fleet_ver *v)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_META_GET]++;
	const char *node = strstr(key, "/nodes/");
	if (node != NULL) { /* a liveness record (the root is the test's) */
		int i = alive_of(c->m, node + strlen("/nodes/"));
		if (i >= 0) {
			memcpy(buf, c->m->alive[i].text, (size_t)c->m->alive[i].len);
			*len = c->m->alive[i].len;
			*v = (struct fw_fleet_ver){c->m->alive[i].version, 0};
		}
		leave(c);
		return i >= 0 ? 0 : -ENOENT;
	}
	struct rec *r = meta_of(c->m, key, false);
	if (r != NULL) {
		memcpy(buf, r->text, (size_t)r->len);
		*len = r->len;
		*v = (struct fw_fleet_ver){r->version, r->mtime};
	}
	leave(c);
	return r ? 0 : -ENOENT;
}

static int ms_meta_create(struct fw_fleet_store *s, const char *key, const char *buf, int len)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_META_CREATE]++;
	int rc = 0;
	if (meta_of(c->m, key, false) != NULL)
		rc = -EEXIST;
	else if (meta_of(c->m, key, true) == NULL)
		rc = -EIO;
	else
		meta_write(c->m, meta_of(c->m, key, true), buf, len);
	leave(c);
	return rc;
}

static int ms_meta_cas(struct fw_fleet_store *s, const char *key, const char *buf, int len,
		       int64_t version)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_META_CAS]++;
	struct rec *r = meta_of(c->m, key, false);
	int rc = r == NULL ? -ENOENT : r->version != version ? -ESTALE : 0;
	if (rc == 0)
		meta_write(c->m, r, buf, len);
	leave(c);
	return rc;
}

static int ms_list(struct fw_fleet_store *s, bool *exists, uint32_t total)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_LIST]++;
	for (uint32_t w = 0; w < total && w < WORKERS; w++)
		exists[w] = c->m->w[w].exists;
	leave(c);
	return 0;
}

static int ms_get(struct fw_fleet_store *s, uint32_t w, char *buf, int *len, struct fw_fleet_ver *v)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_GET]++;
	struct rec *r = &c->m->w[w];
	int rc = -ENOENT;
	if (r->exists) {
		memcpy(buf, r->text, (size_t)r->len);
		*len = r->len;
		*v = (struct fw_fleet_ver){r->version, r->mtime};
		rc = 0;
	}
	leave(c);
	return rc;
}

/* A write of worker @w, under the faults. */
static int write_rec(struct memcl *c, uint32_t w, bool create, int64_t version, const char *buf,
		     int len, struct fw_fleet_ver *v)
{
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[create ? MS_CREATE : MS_CAS]++;
	struct memsrv *m = c->m;
	struct rec *r = &m->w[w];
	int rc = 0;
	if (m->fail > 0) {
		m->fail--;
		snprintf(c->err, sizeof(c->err), "write failed");
		rc = -ENOTCONN;
	} else if (m->fail_rc[w]) {
		snprintf(c->err, sizeof(c->err), "write refused (injected %d)", m->fail_rc[w]);
		rc = m->fail_rc[w];
	} else if (create && r->exists) {
		rc = -EEXIST;
	} else if (!create && !r->exists) {
		rc = -ENOENT;
	} else if (!create && r->version != version) {
		rc = -ESTALE;
	} else {
		r->exists = true;
		memcpy(r->text, buf, (size_t)len);
		r->len = len;
		r->version = ++m->rev;
		r->mtime = (uint64_t)((int64_t)real_ms() + m->offset);
		m->worker_writes++;
		m->writes++;
		*v = (struct fw_fleet_ver){r->version, r->mtime};
		if (m->lose > 0) {
			m->lose--;
			snprintf(c->err, sizeof(c->err), "reply lost");
			rc = -ENOTCONN;
		} else if (m->resend > 0) {
			/* the reply late, the same write sent again: it finds its own */
			m->resend--;
			snprintf(c->err, sizeof(c->err), "sent again");
			rc = create ? -EEXIST : -ESTALE;
		}
	}
	leave(c);
	return rc;
}

static int ms_create(struct fw_fleet_store *s, uint32_t w, const char *buf, int len,
		     struct fw_fleet_ver *v)
{
	return write_rec(C(s), w, true, 0, buf, len, v);
}

static int ms_cas(struct fw_fleet_store *s, uint32_t w, const char *buf, int len, int64_t version,
		  struct fw_fleet_ver *v)
{
	return write_rec(C(s), w, false, version, buf, len, v);
}

static int ms_now(struct fw_fleet_store *s, uint64_t (*local)(void *), void *arg, uint64_t *server,
		  uint64_t *local_mid)
{
	struct memcl *c = C(s);
	uint64_t a = local ? local(arg) : 0;
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_NOW]++;
	*server = (uint64_t)((int64_t)real_ms() + c->m->offset);
	c->m->writes++;           /* as ZooKeeper's ROOT/clock */
	int64_t wc = ++c->m->rev; /* its mzxid */
	leave(c);
	if (wc < s->wc_high) {
		snprintf(c->err, sizeof(c->err), "went back");
		return -ESTALE;
	}
	s->wc_high = wc;
	if (local_mid)
		*local_mid = a;
	return 0;
}

static int ms_alive_claim(struct fw_fleet_store *s, const char *identity, const char *data, int len)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	int rc = 0, free_i = -1;
	for (int i = 0; i < ALIVE; i++) {
		if (c->m->alive[i].session == 0) {
			free_i = free_i < 0 ? i : free_i;
			continue;
		}
		if (!strcmp(c->m->alive[i].identity, identity)) {
			rc = c->m->alive[i].session == c->session ? 0 : -EEXIST;
			goto out;
		}
	}
	if (free_i < 0) {
		rc = -EIO;
		goto out;
	}
	alive_set(c->m, free_i, identity, c->session, data, len);
out:
	leave(c);
	return rc;
}

static int ms_alive_replace(struct fw_fleet_store *s, const char *identity, int64_t version,
			    const char *data, int len)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	int i = alive_of(c->m, identity);
	int rc = i < 0 || c->m->alive[i].version != version ? -ESTALE : 0;
	if (rc == 0) {
		c->m->alive_replaced++;
		alive_set(c->m, i, identity, c->session, data, len);
	}
	leave(c);
	return rc;
}

static int ms_alive_of(struct fw_fleet_store *s, const char *identity, bool *alive)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_ALIVE_OF]++;
	*alive = false;
	for (int i = 0; i < ALIVE; i++)
		if (c->m->alive[i].session && !strcmp(c->m->alive[i].identity, identity))
			*alive = true;
	leave(c);
	return 0;
}

static int ms_alive_list(struct fw_fleet_store *s, int (*each)(void *arg, const char *identity),
			 void *arg)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	c->m->calls[MS_ALIVE_LIST]++;
	int rc = 0;
	for (int i = 0; rc == 0 && i < ALIVE; i++)
		if (c->m->alive[i].session)
			rc = each(arg, c->m->alive[i].identity);
	leave(c);
	return rc;
}

static const char *ms_last_error(struct fw_fleet_store *s)
{
	return C(s)->err;
}

static void ms_free(struct fw_fleet_store *s)
{
	ms_close(s);
	free(s);
}

static int ms_history(struct fw_fleet_store *s, int64_t *mark)
{
	struct memcl *c = C(s);
	if (!enter(c))
		return -ENOTCONN;
	int rc = c->m->keep_history ? 0 : -ENOTSUP;
	*mark = c->m->hist;
	leave(c);
	if (rc)
		snprintf(c->err, sizeof(c->err), "no history kept");
	return rc;
}

static const struct fw_fleet_store_ops ops = {
	.connect = ms_connect,
	.state = ms_state,
	.close = ms_close,
	.meta_get = ms_meta_get,
	.meta_create = ms_meta_create,
	.meta_cas = ms_meta_cas,
	.list = ms_list,
	.get = ms_get,
	.create = ms_create,
	.cas = ms_cas,
	.now = ms_now,
	.alive_claim = ms_alive_claim,
	.alive_replace = ms_alive_replace,
	.alive_of = ms_alive_of,
	.alive_list = ms_alive_list,
	.last_error = ms_last_error,
	.free = ms_free,
	.history = ms_history,
};

struct memsrv *memsrv_new(void)
{
	struct memsrv *m = calloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	m->rev = 100;
	return m;
}

void memsrv_free(struct memsrv *m)
{
	pthread_mutex_destroy(&m->mu);
	free(m);
}

struct fw_fleet_store *memsrv_client(struct memsrv *m)
{
	struct memcl *c = calloc(1, sizeof(*c));
	c->base.ops = &ops;
	c->base.name = "memstore";
	c->m = m;
	return &c->base;
}

#define LOCKED(m, stmt)                         \
	do {                                    \
		pthread_mutex_lock(&(m)->mu);   \
		stmt;                           \
		pthread_mutex_unlock(&(m)->mu); \
	} while (0)

void memsrv_time_offset(struct memsrv *m, int64_t offset_ms)
{
	LOCKED(m, m->offset = offset_ms);
}

uint64_t memsrv_now(struct memsrv *m)
{
	uint64_t t;
	LOCKED(m, t = (uint64_t)((int64_t)real_ms() + m->offset));
	return t;
}

void memsrv_down(struct memsrv *m, bool down)
{
	LOCKED(m, m->down = down);
}

void memsrv_lose_replies(struct memsrv *m, int n)
{
	LOCKED(m, m->lose = n);
}

void memsrv_resend_writes(struct memsrv *m, int n)
{
	LOCKED(m, m->resend = n);
}

void memsrv_fail_writes(struct memsrv *m, int n)
{
	LOCKED(m, m->fail = n);
}

void memsrv_fail_worker(struct memsrv *m, uint32_t w, int rc)
{
	LOCKED(m, m->fail_rc[w] = rc);
}

void memsrv_replace_session(struct memsrv *m)
{
	pthread_mutex_lock(&m->mu);
	m->replace_next = true;
	pthread_mutex_unlock(&m->mu);
}

void memsrv_drop_sessions(struct memsrv *m)
{
	LOCKED(m, {
		m->dropped_before = m->session_seq;
		for (int i = 0; i < ALIVE; i++)
			m->alive[i].session = 0;
	});
}

uint64_t memsrv_worker_writes(struct memsrv *m)
{
	uint64_t n;
	LOCKED(m, n = m->worker_writes);
	return n;
}

uint64_t memsrv_writes(struct memsrv *m)
{
	uint64_t n;
	LOCKED(m, n = m->writes);
	return n;
}

bool memsrv_get(struct memsrv *m, uint32_t w, struct fw_fleet_rec *r, int64_t *version)
{
	bool ok;
	LOCKED(m, {
		ok = m->w[w].exists && fw_fleet_rec_parse(m->w[w].text, m->w[w].len, r) == 0;
		if (version)
			*version = m->w[w].version;
	});
	return ok;
}

void memsrv_put_text(struct memsrv *m, uint32_t w, const char *text)
{
	LOCKED(m, {
		struct rec *r = &m->w[w];
		r->exists = true;
		r->len = snprintf(r->text, sizeof(r->text), "%s", text);
		r->version = ++m->rev;
		r->mtime = (uint64_t)((int64_t)real_ms() + m->offset);
	});
}

void memsrv_put(struct memsrv *m, uint32_t w, const struct fw_fleet_rec *r)
{
	char buf[FW_FLEET_REC_MAX];
	fw_fleet_rec_format(buf, sizeof(buf), r);
	memsrv_put_text(m, w, buf);
}

void memsrv_put_version(struct memsrv *m, uint32_t w, const char *text, int64_t version)
{
	LOCKED(m, {
		struct rec *r = &m->w[w];
		r->exists = true;
		r->len = snprintf(r->text, sizeof(r->text), "%s", text);
		r->version = version;
	});
}

void memsrv_wipe(struct memsrv *m, const char *root)
{
	LOCKED(m, {
		size_t n = strlen(root);
		for (uint32_t w = 0; w < WORKERS; w++)
			m->w[w].exists = false;
		for (int i = 0; i < META; i++)
			if (!strncmp(m->meta[i].key, root, n) &&
			    (!m->meta[i].key[n] || m->meta[i].key[n] == '/'))
				m->meta[i].r.exists = false;
	});
}

void memsrv_rev_set(struct memsrv *m, int64_t rev)
{
	LOCKED(m, m->rev = rev);
}

void memsrv_set_meta(struct memsrv *m, const char *key, const char *text)
{
	LOCKED(m, {
		struct rec *r = meta_of(m, key, true);
		if (text == NULL)
			r->exists = false;
		else
			meta_write(m, r, text, (int)strlen(text));
	});
}

void memsrv_alive_other(struct memsrv *m, const char *identity)
{
	memsrv_alive_other_text(m, identity, "pid=1\n");
}

void memsrv_alive_other_text(struct memsrv *m, const char *identity, const char *text)
{
	LOCKED(m, {
		for (int i = 0; i < ALIVE; i++)
			if (m->alive[i].session == 0) {
				/* a session never dropped by tests' clients */
				alive_set(m, i, identity, UINT64_MAX, text, (int)strlen(text));
				break;
			}
	});
}

uint64_t memsrv_alive_replaced(struct memsrv *m)
{
	uint64_t n;
	LOCKED(m, n = m->alive_replaced);
	return n;
}

bool memsrv_alive_text(struct memsrv *m, const char *identity, char *buf, size_t cap)
{
	int i;
	LOCKED(m, {
		i = alive_of(m, identity);
		if (i >= 0)
			snprintf(buf, cap, "%.*s", m->alive[i].len, m->alive[i].text);
	});
	return i >= 0;
}

struct memsnap *memsrv_snapshot(struct memsrv *m)
{
	struct memsnap *sn = calloc(1, sizeof(*sn));
	LOCKED(m, {
		memcpy(sn->w, m->w, sizeof(sn->w));
		memcpy(sn->meta, m->meta, sizeof(sn->meta));
		sn->rev = m->rev;
		sn->hist = m->hist;
	});
	return sn;
}

void memsrv_restore(struct memsrv *m, const struct memsnap *sn, bool drop_sessions)
{
	LOCKED(m, {
		memcpy(m->w, sn->w, sizeof(m->w));
		memcpy(m->meta, sn->meta, sizeof(m->meta));
		m->rev = sn->rev;
		m->hist = sn->hist - 1000; /* etcd: a new raft log, the revision kept */
		if (drop_sessions) {
			m->dropped_before = m->session_seq;
			for (int i = 0; i < ALIVE; i++)
				m->alive[i].session = 0;
		}
	});
}

void memsrv_keep_history(struct memsrv *m, bool keep)
{
	LOCKED(m, m->keep_history = keep);
}

bool memsrv_get_meta(struct memsrv *m, const char *key, char *text, size_t cap)
{
	bool ok;
	LOCKED(m, {
		struct rec *r = meta_of(m, key, false);
		ok = r != NULL;
		if (ok)
			snprintf(text, cap, "%.*s", r->len, r->text);
	});
	return ok;
}

uint64_t memsrv_calls(struct memsrv *m, enum memsrv_call kind)
{
	uint64_t n;
	LOCKED(m, n = m->calls[kind]);
	return n;
}

void memsrv_calls_reset(struct memsrv *m)
{
	LOCKED(m, memset(m->calls, 0, sizeof(m->calls)));
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The synchronous API of the multi-threaded client (libzookeeper_mt). */
#define THREADED
#include <zookeeper/zookeeper.h>

#include "fw_err.h"
#include "fw_fleet.h"

#define PATH_LEN 512
#define DATA_LEN 512
#define MSG_LEN  2048

/* A worker ID this process holds in ZooKeeper (thread-private). */
struct held {
	int32_t worker; /* FW_FLEET_WORKER_NONE: none */
	int32_t version;
	uint64_t lease; /* layout ms, confirmed */
	uint64_t floor; /* layout ms */
	bool lost;      /* taken over by another: lease is the final limit */
	bool cached;    /* from the cache file: not yet written by this process */
};

struct retire_req {
	int32_t worker;
	uint64_t last;
};

struct fw_fleet {
	struct fw_fleet_config cfg;
	char connect[1024], root[256], identity[FW_FLEET_IDENTITY_MAX], cache[PATH_MAX];
	uint32_t n;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool thread_on;
	/* under mu */
	bool stop;
	struct fw_fleet_slot *pub;
	struct fw_fleet_status st;
	bool *replace_req;
	struct retire_req retire_q[FW_FLEET_SLOTS_MAX];
	uint32_t n_retire_q;
	bool start_done, start_gave_up;
	int start_rc;
	char start_err[MSG_LEN];

	/* thread-private (and fw_fleet_start before the thread runs) */
	zhandle_t *zh;
	uint64_t token;
	bool root_ok, alive_ok;
	struct held *slot; /* per slot */
	struct held retiring[FW_FLEET_SLOTS_MAX];
	uint32_t n_retiring;
	uint32_t renew_fails;
	uint64_t next_renew_unix;
	bool cache_dirty;
	bool logged_down;
};

/* ---- small helpers ---- */

static uint64_t realtime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t now_unix(const struct fw_fleet *f)
{
	return f->cfg.now_ms ? f->cfg.now_ms(f->cfg.now_arg) : realtime_ms();
}

static uint64_t to_layout(const struct fw_fleet *f, uint64_t unix_ms)
{
	uint64_t e = f->cfg.layout.epoch_ms;
	return unix_ms > e ? unix_ms - e : 0;
}

static void flog(struct fw_fleet *f, enum fw_fleet_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void flog(struct fw_fleet *f, enum fw_fleet_level lvl, const char *fmt, ...)
{
	char msg[MSG_LEN];
	va_list ap;
	if (f->cfg.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	f->cfg.log(f->cfg.log_arg, lvl, msg);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static uint64_t rand64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = realtime_ms() ^ ((uint64_t)getpid() << 32);
	return v;
}

static bool identity_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= FW_FLEET_IDENTITY_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':'))
			return false;
	}
	return true;
}

/* ---- znode data ---- */

struct wdata {
	char owner[FW_FLEET_IDENTITY_MAX];
	uint64_t token;
	uint64_t lease;
	uint64_t floor;
};

static int wdata_format(char *buf, size_t cap, const struct wdata *d)
{
	return snprintf(buf, cap,
			"flakewire-worker v1\nowner=%s\ntoken=%016" PRIx64 "\nlease_until=%" PRIu64
			"\nfloor=%" PRIu64 "\n",
			d->owner, d->token, d->lease, d->floor);
}

/* Parses a worker znode; returns 0 or -EINVAL (garbled: never claimed). */
static int wdata_parse(const char *buf, int len, struct wdata *d)
{
	char text[DATA_LEN + 1], *save = NULL;
	int seen = 0;
	if (len < 0 || len > DATA_LEN)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	memset(d, 0, sizeof(*d));
	char *line = strtok_r(text, "\n", &save);
	if (line == NULL || strcmp(line, "flakewire-worker v1"))
		return -EINVAL;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		char *eq = strchr(line, '=');
		if (eq == NULL)
			return -EINVAL;
		*eq = '\0';
		const char *v = eq + 1;
		char *end;
		if (!strcmp(line, "owner")) {
			if (strlen(v) >= sizeof(d->owner))
				return -EINVAL;
			strcpy(d->owner, v);
			seen |= 1;
			continue;
		}
		errno = 0;
		unsigned long long x = strtoull(v, &end, !strcmp(line, "token") ? 16 : 10);
		if (errno || end == v || *end)
			return -EINVAL;
		if (!strcmp(line, "token"))
			d->token = x, seen |= 2;
		else if (!strcmp(line, "lease_until"))
			d->lease = x, seen |= 4;
		else if (!strcmp(line, "floor"))
			d->floor = x, seen |= 8;
	}
	return seen == 15 ? 0 : -EINVAL;
}

static int layout_format(char *buf, size_t cap, const struct fw_layout *l)
{
	return snprintf(buf, cap,
			"flakewire-fleet v1\nepoch_ms=%" PRIu64
			"\ndatacenter_bits=%u\nworker_bits=%u\nsequence_bits=%u\n",
			l->epoch_ms, l->dc_bits, l->worker_bits, l->seq_bits);
}

static int layout_parse(const char *buf, int len, struct fw_layout *l)
{
	char text[DATA_LEN + 1];
	unsigned long long e;
	unsigned d, w, s;
	if (len <= 0 || len > DATA_LEN)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	if (sscanf(text,
		   "flakewire-fleet v1\nepoch_ms=%llu\ndatacenter_bits=%u\nworker_bits=%u\n"
		   "sequence_bits=%u",
		   &e, &d, &w, &s) != 4)
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	l->epoch_ms = e;
	l->dc_bits = (uint8_t)d;
	l->worker_bits = (uint8_t)w;
	l->seq_bits = (uint8_t)s;
	l->time_bits = (uint8_t)(63 - d - w - s);
	return 0;
}

/* ---- ZooKeeper session ---- */

static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

static void zk_quiet_init(void)
{
	/* The C client logs to stderr by default; a library does not print. */
	zoo_set_debug_level((ZooLogLevel)0);
}

static void zk_quiet(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, zk_quiet_init);
}

/* Opens a session and waits up to @wait_ms for it (NULL on timeout, errno set). */
static zhandle_t *zk_open(const char *connect, uint32_t session_ms, uint32_t wait_ms,
			  const volatile bool *stop)
{
	zk_quiet();
	zhandle_t *zh = zookeeper_init(connect, zk_watcher, (int)session_ms, NULL, NULL, 0);
	if (zh == NULL)
		return NULL;
	for (uint32_t t = 0; t < wait_ms; t += 20) {
		if (zoo_state(zh) == ZOO_CONNECTED_STATE)
			return zh;
		if (stop != NULL && *stop)
			break;
		sleep_ms(20);
	}
	if (zoo_state(zh) == ZOO_CONNECTED_STATE)
		return zh;
	zookeeper_close(zh);
	errno = ETIMEDOUT;
	return NULL;
}

static bool zk_conn_error(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
	       rc == ZINVALIDSTATE || rc == ZCLOSING || rc == ZSESSIONMOVED;
}

static int zk_create_if_missing(zhandle_t *zh, const char *path)
{
	int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	return rc == ZNODEEXISTS ? ZOK : rc;
}

/* Creates @path and its parents (empty data). */
static int zk_ensure_path(zhandle_t *zh, const char *path)
{
	char p[PATH_LEN];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
		if (s != NULL)
			*s = '\0';
		int rc = zk_create_if_missing(zh, p);
		if (rc != ZOK)
			return rc;
		if (s == NULL)
			return ZOK;
		*s = '/';
	}
}

/*
 * ZooKeeper's time now: writes ROOT/clock and returns its mtime (unix ms).
 * *local_mid gets the local clock halfway through the write.
 */
static int zk_server_now(zhandle_t *zh, const char *root, uint64_t (*local)(void *), void *arg,
			 uint64_t *server, uint64_t *local_mid)
{
	char p[PATH_LEN];
	struct Stat st;
	snprintf(p, sizeof(p), "%s/clock", root);
	uint64_t a = local(arg);
	int rc = zoo_set2(zh, p, "t", 1, -1, &st);
	uint64_t b = local(arg);
	if (rc == ZNONODE) {
		rc = zk_create_if_missing(zh, p);
		if (rc == ZOK)
			rc = zoo_set2(zh, p, "t", 1, -1, &st);
	}
	if (rc != ZOK)
		return rc;
	*server = (uint64_t)st.mtime;
	if (local_mid)
		*local_mid = a + (b - a) / 2;
	return ZOK;
}

static uint64_t local_cb(void *arg)
{
	return now_unix(arg);
}

static uint64_t realtime_cb(void *arg)
{
	(void)arg;
	return realtime_ms();
}

/* The root exists and holds our layout (written by the first member). */
static int zk_root_check(zhandle_t *zh, const char *root, const struct fw_layout *l, char *err,
			 size_t errlen)
{
	char want[DATA_LEN], buf[DATA_LEN], p[PATH_LEN];
	struct Stat st;
	int rc = zk_ensure_path(zh, root);
	for (int tries = 0; rc == ZOK && tries < 5; tries++) {
		int len = sizeof(buf);
		rc = zoo_get(zh, root, 0, buf, &len, &st);
		if (rc != ZOK)
			break;
		if (len <= 0) {
			int wl = layout_format(want, sizeof(want), l);
			rc = zoo_set(zh, root, want, wl, st.version);
			if (rc == ZBADVERSION)
				rc = ZOK; /* someone else wrote it: read it */
			continue;
		}
		struct fw_layout have;
		if (layout_parse(buf, len, &have) != 0) {
			set_err(err, errlen, "fleet: %s holds no flakewire fleet layout", root);
			return FW_EFLEET_LAYOUT;
		}
		if (have.epoch_ms != l->epoch_ms || have.dc_bits != l->dc_bits ||
		    have.worker_bits != l->worker_bits || have.seq_bits != l->seq_bits) {
			set_err(err, errlen,
				"fleet: %s is a fleet with layout epoch %" PRIu64
				" datacenter_bits %u worker_bits %u sequence_bits %u; this node "
				"has "
				"epoch %" PRIu64 " datacenter_bits %u worker_bits %u sequence_bits "
				"%u: every member of a fleet needs the same [id] layout",
				root, have.epoch_ms, have.dc_bits, have.worker_bits, have.seq_bits,
				l->epoch_ms, l->dc_bits, l->worker_bits, l->seq_bits);
			return FW_EFLEET_LAYOUT;
		}
		static const char *const subs[] = {"workers", "nodes", "clock"};
		for (size_t i = 0; i < FW_ARRAY_SIZE(subs) && rc == ZOK; i++) {
			snprintf(p, sizeof(p), "%s/%s", root, subs[i]);
			rc = zk_create_if_missing(zh, p);
		}
		if (rc == ZOK)
			return 0;
	}
	set_err(err, errlen, "fleet: ZooKeeper: preparing %s: %s", root, zerror(rc));
	return FW_EFLEET_ZK;
}

/* ---- the registry ---- */

void fw_fleet_config_default(struct fw_fleet_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->lease_ms = 24ull * 3600 * 1000;
	cfg->renew_ms = 60 * 1000;
	cfg->session_timeout_ms = 10000;
	cfg->start_wait_ms = 10000;
	cfg->max_offset_ms = 1000;
	cfg->layout.epoch_ms = FW_DEFAULT_EPOCH_MS;
	cfg->layout.time_bits = 41;
	cfg->layout.worker_bits = 10;
	cfg->layout.seq_bits = 12;
}

int fw_fleet_create(const struct fw_fleet_config *cfg, uint32_t n_slots, struct fw_fleet **out,
		    char *err, size_t errlen)
{
	if (cfg == NULL || out == NULL)
		return -EINVAL;
	if (cfg->connect == NULL || !cfg->connect[0] || strlen(cfg->connect) >= 1024) {
		set_err(err, errlen, "fleet: empty or too long ZooKeeper connect string");
		return -EINVAL;
	}
	if (cfg->root == NULL || cfg->root[0] != '/' || strlen(cfg->root) < 2 ||
	    strlen(cfg->root) >= 200 || cfg->root[strlen(cfg->root) - 1] == '/' ||
	    strstr(cfg->root, "//") != NULL) {
		set_err(err, errlen,
			"fleet: root '%s': must be an absolute ZooKeeper path such as "
			"/flakewire/dc1, without a trailing '/'",
			cfg->root ? cfg->root : "");
		return -EINVAL;
	}
	if (cfg->identity == NULL || !identity_ok(cfg->identity)) {
		set_err(err, errlen,
			"fleet: identity '%s': must be 1-127 characters of A-Z a-z 0-9 . _ - :",
			cfg->identity ? cfg->identity : "");
		return -EINVAL;
	}
	if (cfg->renew_ms == 0 || cfg->lease_ms < 2 * cfg->renew_ms) {
		set_err(err, errlen,
			"fleet: lease_ms %" PRIu64 " must be at least twice renew_ms %" PRIu64,
			cfg->lease_ms, cfg->renew_ms);
		return -EINVAL;
	}
	if (n_slots == 0 || n_slots > FW_FLEET_SLOTS_MAX ||
	    n_slots > (1u << cfg->layout.worker_bits)) {
		set_err(err, errlen, "fleet: %u workers: out of range (1-%u)", n_slots,
			FW_MIN(FW_FLEET_SLOTS_MAX, 1u << cfg->layout.worker_bits));
		return -EINVAL;
	}
	if (cfg->cache_file && strlen(cfg->cache_file) >= PATH_MAX - 8) {
		set_err(err, errlen, "fleet: cache file name too long");
		return -EINVAL;
	}
	struct fw_fleet *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->cfg = *cfg;
	snprintf(f->connect, sizeof(f->connect), "%s", cfg->connect);
	snprintf(f->root, sizeof(f->root), "%s", cfg->root);
	snprintf(f->identity, sizeof(f->identity), "%s", cfg->identity);
	snprintf(f->cache, sizeof(f->cache), "%s", cfg->cache_file ? cfg->cache_file : "");
	f->cfg.connect = f->connect;
	f->cfg.root = f->root;
	f->cfg.identity = f->identity;
	f->cfg.cache_file = f->cache;
	f->n = n_slots;
	f->pub = calloc(n_slots, sizeof(*f->pub));
	f->slot = calloc(n_slots, sizeof(*f->slot));
	f->replace_req = calloc(n_slots, sizeof(*f->replace_req));
	if (!f->pub || !f->slot || !f->replace_req) {
		fw_fleet_free(f);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n_slots; i++) {
		f->pub[i].worker = FW_FLEET_WORKER_NONE;
		f->slot[i].worker = FW_FLEET_WORKER_NONE;
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	*out = f;
	return 0;
}

/* ---- the cache file ---- */

static int cache_write(struct fw_fleet *f)
{
	char tmp[PATH_MAX + 8], text[64 + 96 * FW_FLEET_SLOTS_MAX + 512];
	int len;
	if (!f->cache[0])
		return 0;
	len = snprintf(text, sizeof(text),
		       "flakewire-fleet-cache v1\nroot=%s\nidentity=%s\nlayout=%" PRIu64
		       "/%u/%u/%u\n",
		       f->root, f->identity, f->cfg.layout.epoch_ms, f->cfg.layout.dc_bits,
		       f->cfg.layout.worker_bits, f->cfg.layout.seq_bits);
	for (uint32_t i = 0; i < f->n; i++) {
		const struct held *h = &f->slot[i];
		if (h->worker == FW_FLEET_WORKER_NONE)
			continue;
		len += snprintf(text + len, sizeof(text) - (size_t)len,
				"slot=%u worker=%d version=%d lease_until=%" PRIu64
				" floor=%" PRIu64 "\n",
				i, h->worker, h->version, h->lease, h->floor);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", f->cache);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (write(fd, text, (size_t)len) != len || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, f->cache) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* Loads the cache into f->slot. Returns the number of slots loaded, or -errno. */
static int cache_read(struct fw_fleet *f)
{
	char line[512], want[512];
	FILE *fp = fopen(f->cache, "re");
	int loaded = 0;
	if (fp == NULL)
		return -errno;
	if (!fgets(line, sizeof(line), fp) || strcmp(line, "flakewire-fleet-cache v1\n"))
		goto bad;
	snprintf(want, sizeof(want), "root=%s\n", f->root);
	if (!fgets(line, sizeof(line), fp) || strcmp(line, want))
		goto other;
	snprintf(want, sizeof(want), "identity=%s\n", f->identity);
	if (!fgets(line, sizeof(line), fp) || strcmp(line, want))
		goto other;
	snprintf(want, sizeof(want), "layout=%" PRIu64 "/%u/%u/%u\n", f->cfg.layout.epoch_ms,
		 f->cfg.layout.dc_bits, f->cfg.layout.worker_bits, f->cfg.layout.seq_bits);
	if (!fgets(line, sizeof(line), fp) || strcmp(line, want))
		goto other;
	while (fgets(line, sizeof(line), fp)) {
		unsigned slot;
		int worker, version;
		unsigned long long lease, floor;
		if (sscanf(line, "slot=%u worker=%d version=%d lease_until=%llu floor=%llu", &slot,
			   &worker, &version, &lease, &floor) != 5 ||
		    worker < 0 || (uint32_t)worker >= (1u << f->cfg.layout.worker_bits))
			goto bad;
		if (slot >= f->n)
			continue;
		f->slot[slot] = (struct held){worker, version, lease, floor, false, true};
		loaded++;
	}
	fclose(fp);
	return loaded;
other:
	fclose(fp);
	return -ESTALE;
bad:
	fclose(fp);
	for (uint32_t i = 0; i < f->n; i++)
		f->slot[i].worker = FW_FLEET_WORKER_NONE;
	return FW_ESTATE_CORRUPT;
}

/* ---- publishing (the owner reads these) ---- */

static void publish(struct fw_fleet *f, uint32_t i, enum fw_fleet_source src)
{
	const struct held *h = &f->slot[i];
	bool lost = h->lost;
	pthread_mutex_lock(&f->mu);
	struct fw_fleet_slot *p = &f->pub[i];
	if (p->worker != h->worker || p->floor_ms != h->floor)
		p->gen++;
	p->worker = h->worker;
	p->floor_ms = h->floor;
	p->lease_ms = h->worker == FW_FLEET_WORKER_NONE ? 0 : h->lease;
	p->source = h->worker == FW_FLEET_WORKER_NONE ? FW_FLEET_SRC_NONE : (uint32_t)src;
	p->lost = lost;
	pthread_mutex_unlock(&f->mu);
	f->cache_dirty = true;
}

static void count(struct fw_fleet *f, uint64_t *c)
{
	pthread_mutex_lock(&f->mu);
	(*c)++;
	pthread_mutex_unlock(&f->mu);
}

/* ---- claiming ---- */

enum cand_kind { K_TAKEBACK = 0, K_CREATE, K_FREE, K_EXPIRED };

struct cand {
	int32_t worker;
	int32_t version;
	enum cand_kind kind;
	struct wdata d;
	uint64_t mtime;
	bool used;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int kx = x->kind == K_CREATE ? K_FREE : (int)x->kind;
	int ky = y->kind == K_CREATE ? K_FREE : (int)y->kind;
	if (kx != ky)
		return kx - ky;
	uint64_t vx = x->kind == K_EXPIRED ? x->d.lease : x->d.floor;
	uint64_t vy = y->kind == K_EXPIRED ? y->d.lease : y->d.floor;
	if (vx != vy)
		return vx < vy ? -1 : 1;
	return x->worker - y->worker;
}

static bool held_by_us(const struct fw_fleet *f, int32_t w)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (f->slot[i].worker == w && !f->slot[i].lost)
			return true;
	for (uint32_t i = 0; i < f->n_retiring; i++)
		if (f->retiring[i].worker == w)
			return true;
	return false;
}

/*
 * Reads every worker znode and lists what can be claimed, in claim order.
 * *msg gets the owners of the others (for the exhaustion message).
 */
static int scan(struct fw_fleet *f, uint64_t server_unix, struct cand **out, uint32_t *n_out,
		uint32_t *n_owned, char *msg, size_t msglen)
{
	char p[PATH_LEN], buf[DATA_LEN];
	uint32_t total = 1u << f->cfg.layout.worker_bits;
	struct String_vector kids = {0, NULL};
	uint64_t server_l = to_layout(f, server_unix);
	size_t ml = 0;
	uint32_t owned = 0;

	snprintf(p, sizeof(p), "%s/workers", f->root);
	int rc = zoo_get_children(f->zh, p, 0, &kids);
	if (rc != ZOK)
		return rc;
	bool *exists = calloc(total, 1);
	struct cand *c = calloc(total, sizeof(*c));
	uint32_t n = 0;
	if (!exists || !c) {
		free(exists);
		free(c);
		deallocate_String_vector(&kids);
		return ZSYSTEMERROR;
	}
	msg[0] = '\0';
	for (int32_t k = 0; k < kids.count; k++) {
		char *end;
		unsigned long w = strtoul(kids.data[k], &end, 10);
		if (*end || w >= total)
			continue; /* not ours (another layout would have been refused) */
		exists[w] = true;
		if (held_by_us(f, (int32_t)w))
			continue;
		struct Stat st;
		int len = sizeof(buf);
		snprintf(p, sizeof(p), "%s/workers/%s", f->root, kids.data[k]);
		rc = zoo_get(f->zh, p, 0, buf, &len, &st);
		if (rc == ZNONODE)
			continue;
		if (rc != ZOK)
			goto out;
		struct cand x = {
			.worker = (int32_t)w, .version = st.version, .mtime = (uint64_t)st.mtime};
		if (wdata_parse(buf, len, &x.d) != 0)
			continue; /* garbled: never touched */
		if (!strcmp(x.d.owner, f->identity))
			x.kind = K_TAKEBACK;
		else if (!x.d.owner[0])
			x.kind = K_FREE;
		else if (x.d.lease < server_l)
			x.kind = K_EXPIRED;
		else {
			char ts[FW_ISO8601_LEN];
			owned++;
			if (ml < msglen)
				ml += (size_t)snprintf(
					msg + ml, msglen - ml, "%s%lu by %s until %s",
					owned > 1 ? ", " : "", w, x.d.owner,
					fw_format_iso8601(x.d.lease + f->cfg.layout.epoch_ms, ts));
			continue;
		}
		c[n++] = x;
	}
	for (uint32_t w = 0; w < total; w++)
		if (!exists[w] && !held_by_us(f, (int32_t)w))
			c[n++] = (struct cand){.worker = (int32_t)w, .kind = K_CREATE};
	qsort(c, n, sizeof(*c), cand_cmp);
	rc = ZOK;
out:
	free(exists);
	deallocate_String_vector(&kids);
	if (rc != ZOK) {
		free(c);
		return rc;
	}
	*out = c;
	*n_out = n;
	*n_owned = owned;
	return ZOK;
}

/* Tries to claim @x for us. ZOK: *h set. ZNODEEXISTS/ZBADVERSION/ZNONODE: raced, skip. */
static int claim_one(struct fw_fleet *f, struct cand *x, struct held *h)
{
	char p[PATH_LEN], buf[DATA_LEN];
	struct wdata d = {.token = f->token};
	uint64_t now_l = to_layout(f, now_unix(f));
	struct Stat st;
	int rc;

	snprintf(d.owner, sizeof(d.owner), "%s", f->identity);
	snprintf(p, sizeof(p), "%s/workers/%05d", f->root, x->worker);
	switch (x->kind) {
	case K_TAKEBACK: /* our own: the local mark fences our previous run */
		d.floor = x->d.floor;
		break;
	case K_CREATE:
		d.floor = 0;
		break;
	case K_FREE: /* a release already raised the floor over the last lease */
	case K_EXPIRED:
		d.floor = FW_MAX(x->d.floor, x->d.lease);
		break;
	}
	d.lease = FW_MAX(now_l, d.floor) + f->cfg.lease_ms;
	if (x->kind == K_TAKEBACK)
		d.lease = FW_MAX(d.lease, x->d.lease);
	int len = wdata_format(buf, sizeof(buf), &d);
	if (x->kind == K_CREATE) {
		rc = zoo_create(f->zh, p, buf, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
		st.version = 0;
	} else {
		rc = zoo_set2(f->zh, p, buf, len, x->version, &st);
	}
	if (rc != ZOK)
		return rc;
	*h = (struct held){x->worker, st.version, d.lease, d.floor, false, false};
	return ZOK;
}

/* Gives back a worker ID this process issued nothing with above @last. */
static int release_held(struct fw_fleet *f, const struct held *h, uint64_t last)
{
	char p[PATH_LEN], buf[DATA_LEN];
	struct wdata d = {.token = 0};
	d.floor = FW_MAX(h->floor, last);
	d.lease = d.floor;
	snprintf(p, sizeof(p), "%s/workers/%05d", f->root, h->worker);
	int len = wdata_format(buf, sizeof(buf), &d);
	return zoo_set(f->zh, p, buf, len, h->version);
}

/*
 * Claims a worker ID for every slot without one (or lost, or to be
 * replaced). At start, not enough IDs refuses before writing anything.
 */
static int claim_round(struct fw_fleet *f, bool at_start, char *err, size_t errlen)
{
	uint32_t need[FW_FLEET_SLOTS_MAX], n_need = 0;
	bool repl[FW_FLEET_SLOTS_MAX];

	pthread_mutex_lock(&f->mu);
	for (uint32_t i = 0; i < f->n; i++) {
		repl[i] = f->replace_req[i] && f->slot[i].worker != FW_FLEET_WORKER_NONE;
		if (f->slot[i].worker == FW_FLEET_WORKER_NONE || f->slot[i].lost || repl[i])
			need[n_need++] = i;
	}
	pthread_mutex_unlock(&f->mu);
	if (n_need == 0)
		return 0;

	uint64_t server = 0;
	int rc = zk_server_now(f->zh, f->root, local_cb, f, &server, NULL);
	if (rc != ZOK)
		goto zkfail;
	struct cand *c = NULL;
	uint32_t n_c = 0, n_owned = 0;
	char owners[MSG_LEN - 256];
	rc = scan(f, server, &c, &n_c, &n_owned, owners, sizeof(owners));
	if (rc != ZOK)
		goto zkfail;

	uint32_t total = 1u << f->cfg.layout.worker_bits;
	if (n_c < n_need) {
		set_err(err, errlen,
			"fleet: %s needs %u worker ID(s) and only %u can be claimed: %u of %u "
			"worker IDs in %s are held by other live leases: %s",
			f->identity, n_need, n_c, n_owned, total, f->root, owners);
		free(c);
		return FW_EFLEET_FULL;
	}

	struct held got[FW_FLEET_SLOTS_MAX];
	enum cand_kind kind[FW_FLEET_SLOTS_MAX];
	uint32_t filled = 0, next = 0;
	for (uint32_t k = 0; k < n_need; k++) {
		uint32_t i = need[k];
		got[k].worker = FW_FLEET_WORKER_NONE;
		while (next < n_c) {
			struct cand *x = &c[next++];
			rc = claim_one(f, x, &got[k]);
			if (rc == ZOK) {
				kind[k] = x->kind;
				static const char *const how[] = {"taken back", "claimed (new)",
								  "claimed (free)", "taken over"};
				char ts[FW_ISO8601_LEN];
				flog(f, FW_FLEET_INFO,
				     "fleet: worker %d %s for slot %u, lease until %s, floor "
				     "%" PRIu64 "%s%s",
				     x->worker, how[x->kind], i,
				     fw_format_iso8601(got[k].lease + f->cfg.layout.epoch_ms, ts),
				     got[k].floor, x->kind == K_EXPIRED ? ", from " : "",
				     x->kind == K_EXPIRED ? x->d.owner : "");
				count(f, x->kind == K_TAKEBACK  ? &f->st.takebacks
					 : x->kind == K_EXPIRED ? &f->st.takeovers
								: &f->st.claims);
				break;
			}
			if (zk_conn_error(rc))
				break;
		}
		if (got[k].worker == FW_FLEET_WORKER_NONE)
			break;
		filled++;
	}
	free(c);

	if (filled < n_need && at_start) {
		/*
		 * Nothing was published: give back what this round claimed. Not the
		 * IDs taken back: this identity's previous run may have issued up to
		 * their old lease, which their floor does not cover; they stay ours.
		 */
		for (uint32_t k = 0; k < filled; k++)
			if (kind[k] != K_TAKEBACK)
				release_held(f, &got[k], 0);
		if (zk_conn_error(rc))
			goto zkfail;
		set_err(err, errlen,
			"fleet: %s: worker IDs were claimed by others while "
			"claiming; retry",
			f->identity);
		return FW_EFLEET_FULL;
	}
	for (uint32_t k = 0; k < filled; k++) {
		uint32_t i = need[k];
		if (repl[i]) {
			if (f->n_retiring < FW_FLEET_SLOTS_MAX)
				f->retiring[f->n_retiring++] = f->slot[i];
			pthread_mutex_lock(&f->mu);
			f->replace_req[i] = false;
			pthread_mutex_unlock(&f->mu);
		}
		f->slot[i] = got[k];
		publish(f, i, FW_FLEET_SRC_ZK);
	}
	if (filled < n_need) {
		if (zk_conn_error(rc))
			goto zkfail;
		return FW_EFLEET_FULL;
	}
	return 0;
zkfail:
	set_err(err, errlen, "fleet: ZooKeeper: %s", zerror(rc));
	return FW_EFLEET_ZK;
}

/* ---- renewing ---- */

static void offset_update(struct fw_fleet *f, uint64_t local_mid, uint64_t server)
{
	int64_t off = (int64_t)(local_mid - server);
	bool over = (off < 0 ? -off : off) > (int64_t)f->cfg.max_offset_ms;
	bool was;
	pthread_mutex_lock(&f->mu);
	was = f->st.offset_over;
	f->st.offset_ms = off;
	f->st.offset_valid = true;
	f->st.offset_over = over;
	pthread_mutex_unlock(&f->mu);
	if (over && !was)
		flog(f, FW_FLEET_WARN,
		     "fleet: this node's clock is %" PRId64 " ms off ZooKeeper's (bound %u ms): "
		     "IDs stay unique, but their order across nodes is off by as much",
		     off, f->cfg.max_offset_ms);
	else if (!over && was)
		flog(f, FW_FLEET_INFO,
		     "fleet: clock offset to ZooKeeper back within %u ms (%" PRId64 " ms)",
		     f->cfg.max_offset_ms, off);
}

/* Renews slot @i. ZOK, or a connection error (round failed). */
static int renew_one(struct fw_fleet *f, uint32_t i)
{
	char p[PATH_LEN], buf[DATA_LEN];
	struct held *h = &f->slot[i];
	struct wdata d = {.token = f->token, .floor = h->floor};
	struct Stat st;
	uint64_t a = now_unix(f);

	snprintf(d.owner, sizeof(d.owner), "%s", f->identity);
	d.lease = FW_MAX(h->lease, to_layout(f, a) + f->cfg.lease_ms);
	snprintf(p, sizeof(p), "%s/workers/%05d", f->root, h->worker);
	int len = wdata_format(buf, sizeof(buf), &d);
	int rc = zoo_set2(f->zh, p, buf, len, h->version, &st);
	uint64_t b = now_unix(f);
	if (rc == ZOK) {
		h->version = st.version;
		h->lease = d.lease;
		h->cached = false;
		offset_update(f, a + (b - a) / 2, (uint64_t)st.mtime);
		publish(f, i, FW_FLEET_SRC_ZK);
		count(f, &f->st.renewals);
		return ZOK;
	}
	if (zk_conn_error(rc))
		return rc;
	/* Not our version: our own write whose reply was lost, or a takeover. */
	struct wdata now;
	len = sizeof(buf);
	rc = zoo_get(f->zh, p, 0, buf, &len, &st);
	if (zk_conn_error(rc))
		return rc;
	/* ... or, for a claim from the cache, a write of this identity's previous
	 * run that the cache missed (a crash between the write and the cache):
	 * the same owner, as a take-back at start would be */
	if (rc == ZOK && wdata_parse(buf, len, &now) == 0 && !strcmp(now.owner, f->identity) &&
	    (now.token == f->token || h->cached)) {
		h->version = st.version;
		h->lease = now.lease;
		publish(f, i, FW_FLEET_SRC_ZK);
		return ZOK;
	}
	char ts[FW_ISO8601_LEN];
	flog(f, FW_FLEET_WARN,
	     "fleet: worker %d was taken over%s%s: slot %u stops at its confirmed lease %s and "
	     "claims another worker ID",
	     h->worker, rc == ZOK ? " by " : "",
	     rc == ZOK ? (now.owner[0] ? now.owner : "(released)") : "", i,
	     fw_format_iso8601(h->lease + f->cfg.layout.epoch_ms, ts));
	count(f, &f->st.lost);
	h->lost = true;
	publish(f, i, FW_FLEET_SRC_ZK);
	return ZOK;
}

static int alive_check(struct fw_fleet *f, bool at_start, char *err, size_t errlen)
{
	char p[PATH_LEN], data[64];
	struct Stat st;
	int len = snprintf(data, sizeof(data), "pid=%d\n", (int)getpid());
	snprintf(p, sizeof(p), "%s/nodes/%s", f->root, f->identity);
	uint64_t deadline = realtime_ms() + (at_start ? f->cfg.session_timeout_ms + 2000 : 0);
	for (;;) {
		int rc = zoo_create(f->zh, p, data, len, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL,
				    0);
		if (rc == ZOK) {
			f->alive_ok = true;
			return 0;
		}
		if (rc != ZNODEEXISTS) {
			set_err(err, errlen, "fleet: ZooKeeper: %s: %s", p, zerror(rc));
			return FW_EFLEET_ZK;
		}
		rc = zoo_exists(f->zh, p, 0, &st);
		if (rc == ZOK && st.ephemeralOwner == zoo_client_id(f->zh)->client_id) {
			f->alive_ok = true;
			return 0;
		}
		if (rc == ZNONODE)
			continue;
		if (realtime_ms() >= deadline)
			break;
		sleep_ms(200);
	}
	set_err(err, errlen,
		"fleet: identity %s is in use by another live ZooKeeper session (%s exists): "
		"another process with this identity, or this node's previous process less than "
		"a session timeout ago; give each node its own [fleet] identity",
		f->identity, p);
	return FW_EFLEET_IDENTITY;
}

static void drop_session(struct fw_fleet *f)
{
	if (f->zh)
		zookeeper_close(f->zh);
	f->zh = NULL;
	f->root_ok = f->alive_ok = false;
	pthread_mutex_lock(&f->mu);
	f->st.connected = false;
	pthread_mutex_unlock(&f->mu);
}

/* A connected session with the root checked. 0, or an error (logged by the caller). */
static int ensure_session(struct fw_fleet *f, uint32_t wait_ms, bool at_start, char *err,
			  size_t errlen)
{
	if (f->zh && zoo_state(f->zh) != ZOO_CONNECTED_STATE) {
		int s = zoo_state(f->zh);
		if (s == ZOO_EXPIRED_SESSION_STATE || s == ZOO_AUTH_FAILED_STATE || s == 0) {
			drop_session(f);
		} else {
			/* The client reconnects by itself within the session: wait a little. */
			for (uint32_t t = 0; t < wait_ms && zoo_state(f->zh) != ZOO_CONNECTED_STATE;
			     t += 20) {
				if (f->stop)
					break;
				sleep_ms(20);
			}
		}
	}
	if (f->zh == NULL) {
		f->zh = zk_open(f->connect, f->cfg.session_timeout_ms, wait_ms, &f->stop);
		if (f->zh == NULL) {
			set_err(err, errlen, "fleet: ZooKeeper %s does not answer", f->connect);
			return FW_EFLEET_ZK;
		}
	}
	if (zoo_state(f->zh) != ZOO_CONNECTED_STATE) {
		set_err(err, errlen, "fleet: ZooKeeper %s: not connected", f->connect);
		return FW_EFLEET_ZK;
	}
	pthread_mutex_lock(&f->mu);
	f->st.connected = true;
	pthread_mutex_unlock(&f->mu);
	if (!f->root_ok) {
		int rc = zk_root_check(f->zh, f->root, &f->cfg.layout, err, errlen);
		if (rc != 0)
			return rc;
		f->root_ok = true;
	}
	if (!f->alive_ok) {
		char e[MSG_LEN];
		int rc = alive_check(f, at_start, e, sizeof(e));
		if (rc != 0 && at_start) {
			set_err(err, errlen, "%s", e);
			return rc;
		}
		/* Running: our own previous session's node (a reconnect after the
		 * session expired) goes within a session timeout; renewals, being
		 * compare-and-set, stay safe meanwhile. Retried every round. */
	}
	return 0;
}

static void retire_pending(struct fw_fleet *f)
{
	struct retire_req q[FW_FLEET_SLOTS_MAX];
	uint32_t n;
	pthread_mutex_lock(&f->mu);
	n = f->n_retire_q;
	memcpy(q, f->retire_q, n * sizeof(q[0]));
	pthread_mutex_unlock(&f->mu);
	uint32_t done = 0;
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t j = 0; j < f->n_retiring; j++) {
			if (f->retiring[j].worker != q[k].worker)
				continue;
			int rc = release_held(f, &f->retiring[j], q[k].last);
			if (zk_conn_error(rc))
				goto out;
			flog(f, FW_FLEET_INFO,
			     "fleet: worker %d retired: released with floor %" PRIu64 " (%s)",
			     q[k].worker, FW_MAX(f->retiring[j].floor, q[k].last),
			     rc == ZOK ? "done" : zerror(rc));
			count(f, &f->st.releases);
			f->retiring[j] = f->retiring[--f->n_retiring];
			break;
		}
		done++;
	}
out:
	pthread_mutex_lock(&f->mu);
	memmove(f->retire_q, f->retire_q + done, (f->n_retire_q - done) * sizeof(q[0]));
	f->n_retire_q -= done;
	pthread_mutex_unlock(&f->mu);
}

/* One round: session, retirements, claims, renewals. 0 or an error. */
static int round_once(struct fw_fleet *f, char *err, size_t errlen)
{
	int rc = ensure_session(f, f->cfg.session_timeout_ms, false, err, errlen);
	if (rc != 0)
		return rc;
	retire_pending(f);
	int crc = claim_round(f, false, err, errlen);
	if (crc == FW_EFLEET_ZK)
		return crc;
	if (crc == FW_EFLEET_FULL) {
		flog(f, FW_FLEET_WARN, "%s", err);
	}
	for (uint32_t i = 0; i < f->n; i++) {
		if (f->slot[i].worker == FW_FLEET_WORKER_NONE)
			continue;
		if (f->slot[i].lost)
			continue;
		rc = renew_one(f, i);
		if (rc != ZOK) {
			set_err(err, errlen, "fleet: renewing worker %d: %s", f->slot[i].worker,
				zerror(rc));
			return FW_EFLEET_ZK;
		}
	}
	return 0;
}

static uint64_t backoff_ms(struct fw_fleet *f)
{
	uint64_t b = 250ull << FW_MIN(f->renew_fails, 12u);
	b = FW_MIN(b, f->cfg.renew_ms);
	/* +-25 % jitter so a fleet cut off together does not come back in step */
	uint64_t j = b / 2 ? rand64() % (b / 2) : 0;
	return b - b / 4 + j;
}

static void *thread_main(void *arg)
{
	struct fw_fleet *f = arg;
	char err[MSG_LEN];
	for (;;) {
		pthread_mutex_lock(&f->mu);
		bool stop = f->stop;
		pthread_mutex_unlock(&f->mu);
		if (stop)
			break;
		int rc = round_once(f, err, sizeof(err));
		uint64_t wait;
		if (rc == 0) {
			if (f->renew_fails || f->logged_down)
				flog(f, FW_FLEET_INFO,
				     "fleet: ZooKeeper reachable again; leases renewed");
			f->renew_fails = 0;
			f->logged_down = false;
			pthread_mutex_lock(&f->mu);
			f->st.last_renew_unix = now_unix(f);
			pthread_mutex_unlock(&f->mu);
			wait = f->cfg.renew_ms;
		} else {
			if (!f->logged_down) {
				flog(f, FW_FLEET_WARN,
				     "%s; retrying with backoff, issuing continues "
				     "within the confirmed leases",
				     err);
				f->logged_down = true;
			}
			count(f, &f->st.renew_failures);
			f->renew_fails++;
			wait = backoff_ms(f);
		}
		if (f->cache_dirty && cache_write(f) == 0)
			f->cache_dirty = false;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + wait * 1000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_mutex_lock(&f->mu);
		bool wake = false;
		for (uint32_t i = 0; i < f->n; i++)
			wake |= f->replace_req[i];
		if (!f->stop && !wake && f->n_retire_q == 0)
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
		pthread_mutex_unlock(&f->mu);
	}
	drop_session(f);
	return NULL;
}

int fw_fleet_start(struct fw_fleet *f, bool *from_cache, char *err, size_t errlen)
{
	char e[MSG_LEN];
	bool cached = false;
	f->token = rand64();
	if (from_cache)
		*from_cache = false;

	int rc = ensure_session(f, f->cfg.start_wait_ms, true, e, sizeof(e));
	if (rc == 0) {
		rc = claim_round(f, true, e, sizeof(e));
		if (rc == 0) {
			/* The first renewal comes a renew interval after the claims. */
			cache_write(f);
			f->cache_dirty = false;
		}
	}
	if (rc == FW_EFLEET_LAYOUT || rc == FW_EFLEET_IDENTITY || rc == FW_EFLEET_FULL) {
		set_err(err, errlen, "%s", e);
		drop_session(f);
		return rc;
	}
	if (rc != 0) {
		/* ZooKeeper unreachable: the cache, or nothing. */
		int n = f->cache[0] ? cache_read(f) : -ENOENT;
		if (n > 0) {
			char ts[FW_ISO8601_LEN];
			uint64_t until = UINT64_MAX;
			for (uint32_t i = 0; i < f->n; i++) {
				if (f->slot[i].worker != FW_FLEET_WORKER_NONE) {
					publish(f, i, FW_FLEET_SRC_CACHE);
					until = FW_MIN(until, f->slot[i].lease);
				}
			}
			cached = true;
			flog(f, FW_FLEET_WARN,
			     "%s; starting from the cache %s: %d worker ID(s), leases until %s at "
			     "least; reconnecting",
			     e, f->cache, n, fw_format_iso8601(until + f->cfg.layout.epoch_ms, ts));
		} else {
			flog(f, FW_FLEET_ERR,
			     "%s and %s: no worker ID is held, every reply is NO_LEASE until "
			     "ZooKeeper answers; retrying",
			     e,
			     !f->cache[0]   ? "no [fleet] cache_file is set"
			     : n == -ENOENT ? "the cache file does not exist"
			     : n == -ESTALE
				     ? "the cache file is for another root, identity or layout"
				     : "the cache file is unreadable");
			for (uint32_t i = 0; i < f->n; i++)
				f->slot[i].worker = FW_FLEET_WORKER_NONE;
		}
		f->logged_down = true;
		f->renew_fails = 1;
	}
	pthread_mutex_lock(&f->mu);
	f->st.started_from_cache = cached;
	f->stop = false;
	pthread_mutex_unlock(&f->mu);
	if (from_cache)
		*from_cache = cached;
	if (pthread_create(&f->thread, NULL, thread_main, f) != 0) {
		set_err(err, errlen, "fleet: cannot start the registry thread");
		drop_session(f);
		return -EAGAIN;
	}
	f->thread_on = true;
	return 0;
}

int fw_fleet_slot(struct fw_fleet *f, uint32_t i, struct fw_fleet_slot *out)
{
	if (f == NULL || out == NULL || i >= f->n)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	*out = f->pub[i];
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int fw_fleet_replace(struct fw_fleet *f, uint32_t i)
{
	if (f == NULL || i >= f->n)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	f->replace_req[i] = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int fw_fleet_retire(struct fw_fleet *f, int32_t worker, uint64_t last_ms)
{
	if (f == NULL)
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	int rc = -ENOENT;
	if (f->n_retire_q < FW_FLEET_SLOTS_MAX) {
		f->retire_q[f->n_retire_q++] = (struct retire_req){worker, last_ms};
		pthread_cond_signal(&f->cv);
		rc = 0;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void fw_fleet_status(struct fw_fleet *f, struct fw_fleet_status *st)
{
	pthread_mutex_lock(&f->mu);
	*st = f->st;
	pthread_mutex_unlock(&f->mu);
}

void fw_fleet_stop(struct fw_fleet *f)
{
	if (f == NULL)
		return;
	if (f->thread_on) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->thread, NULL);
		f->thread_on = false;
	}
	if (f->cache_dirty && cache_write(f) == 0)
		f->cache_dirty = false;
	drop_session(f);
}

void fw_fleet_free(struct fw_fleet *f)
{
	if (f == NULL)
		return;
	if (f->pub != NULL) {
		fw_fleet_stop(f);
		pthread_mutex_destroy(&f->mu);
		pthread_cond_destroy(&f->cv);
	}
	free(f->pub);
	free(f->slot);
	free(f->replace_req);
	free(f);
}

/* ---- operators ---- */

static int admin_open(const char *connect, uint32_t timeout_ms, zhandle_t **zh, char *err,
		      size_t errlen)
{
	*zh = zk_open(connect, FW_MAX(timeout_ms, 2000u), timeout_ms, NULL);
	if (*zh == NULL) {
		set_err(err, errlen, "fleet: ZooKeeper %s does not answer within %u ms", connect,
			timeout_ms);
		return FW_EFLEET_ZK;
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct fw_fleet_entry *x = a, *y = b;
	return x->worker < y->worker ? -1 : x->worker > y->worker;
}

int fw_fleet_list_read(const char *connect, const char *root, uint32_t timeout_ms,
		       struct fw_fleet_list *out, char *err, size_t errlen)
{
	zhandle_t *zh;
	char p[PATH_LEN], buf[DATA_LEN];
	struct String_vector kids = {0, NULL};
	struct Stat st;
	int len = sizeof(buf), rc;

	memset(out, 0, sizeof(*out));
	rc = admin_open(connect, timeout_ms, &zh, err, errlen);
	if (rc != 0)
		return rc;
	rc = zoo_get(zh, root, 0, buf, &len, &st);
	if (rc == ZNONODE || (rc == ZOK && layout_parse(buf, len, &out->layout) != 0)) {
		set_err(err, errlen, "fleet: no flakewire fleet at %s", root);
		zookeeper_close(zh);
		return -ENOENT;
	}
	if (rc == ZOK)
		rc = zk_server_now(zh, root, realtime_cb, NULL, &out->server_unix, NULL);
	snprintf(p, sizeof(p), "%s/workers", root);
	if (rc == ZOK)
		rc = zoo_get_children(zh, p, 0, &kids);
	if (rc != ZOK)
		goto zkfail;
	out->v = calloc((size_t)kids.count + 1, sizeof(*out->v));
	if (out->v == NULL) {
		rc = ZSYSTEMERROR;
		goto zkfail;
	}
	for (int32_t k = 0; k < kids.count; k++) {
		struct fw_fleet_entry *e = &out->v[out->n];
		struct wdata d;
		char *end;
		unsigned long w = strtoul(kids.data[k], &end, 10);
		if (*end)
			continue;
		len = sizeof(buf);
		snprintf(p, sizeof(p), "%s/workers/%s", root, kids.data[k]);
		rc = zoo_get(zh, p, 0, buf, &len, &st);
		if (rc == ZNONODE)
			continue;
		if (rc != ZOK)
			goto zkfail;
		if (wdata_parse(buf, len, &d) != 0)
			snprintf(d.owner, sizeof(d.owner), "?garbled");
		e->worker = (uint32_t)w;
		snprintf(e->owner, sizeof(e->owner), "%s", d.owner);
		e->lease_ms = d.lease;
		e->floor_ms = d.floor;
		e->renewed_unix = (uint64_t)st.mtime;
		if (d.owner[0] && identity_ok(d.owner)) {
			snprintf(p, sizeof(p), "%s/nodes/%s", root, d.owner);
			rc = zoo_exists(zh, p, 0, &st);
			if (rc != ZOK && rc != ZNONODE)
				goto zkfail;
			e->alive = rc == ZOK;
		}
		out->n++;
	}
	rc = ZOK;
	qsort(out->v, out->n, sizeof(*out->v), entry_cmp);
zkfail:
	deallocate_String_vector(&kids);
	zookeeper_close(zh);
	if (rc != ZOK) {
		set_err(err, errlen, "fleet: ZooKeeper: %s", zerror(rc));
		fw_fleet_list_free(out);
		return FW_EFLEET_ZK;
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

int fw_fleet_release(const char *connect, const char *root, uint32_t worker, uint32_t timeout_ms,
		     char *err, size_t errlen)
{
	zhandle_t *zh;
	char p[PATH_LEN], buf[DATA_LEN];
	int rc = admin_open(connect, timeout_ms, &zh, err, errlen);
	if (rc != 0)
		return rc;
	snprintf(p, sizeof(p), "%s/workers/%05u", root, worker);
	for (int tries = 0; tries < 10; tries++) {
		struct Stat st;
		struct wdata d;
		int len = sizeof(buf);
		rc = zoo_get(zh, p, 0, buf, &len, &st);
		if (rc == ZNONODE) {
			set_err(err, errlen, "fleet: worker %u has never been claimed in %s",
				worker, root);
			zookeeper_close(zh);
			return -ENOENT;
		}
		if (rc != ZOK)
			break;
		if (wdata_parse(buf, len, &d) != 0) {
			set_err(err, errlen, "fleet: %s is garbled; not touched", p);
			zookeeper_close(zh);
			return FW_EFLEET_ZK;
		}
		d.owner[0] = '\0';
		d.token = 0;
		d.floor = FW_MAX(d.floor, d.lease);
		d.lease = d.floor;
		len = wdata_format(buf, sizeof(buf), &d);
		rc = zoo_set(zh, p, buf, len, st.version);
		if (rc != ZBADVERSION)
			break;
	}
	zookeeper_close(zh);
	if (rc != ZOK) {
		set_err(err, errlen, "fleet: ZooKeeper: releasing worker %u: %s", worker,
			zerror(rc));
		return FW_EFLEET_ZK;
	}
	return 0;
}

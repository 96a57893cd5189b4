/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 50: etcd's client (etcd_call) sends a request again when a try's
 * reply does not come within its timeout (a quarter of request_ms, at least
 * 250 ms). A txn whose first try committed and whose reply came late is
 * then answered "failed" by the second try: a create-if-absent finds the
 * record it just made, a CAS finds the version its own write moved. The
 * real etcd store over a fake etcd gateway on loopback (one thread, HTTP/1.1,
 * /v3/kv/range and /v3/kv/txn only) that applies a txn and answers it 400 ms
 * late: the store answers -EEXIST / -ESTALE, and the recipe's claim
 * recognises its own record by this run's token and succeeds with that
 * worker ID (before the fix it took the next one and left this one leased
 * to nobody for lease_ms).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "etcd_http.h"
#include "fw_fleet_recipe.h"
#include "fw_fleet_store_etcd.h"

#define ROOT "/t"

/* The server thread cannot use cmocka's asserts (they jump out of the test's thread). */
#define SRV_CHECK(x)                                                                       \
	do {                                                                               \
		if (!(x)) {                                                                \
			fprintf(stderr, "fake etcd: %s:%d: %s\n", __FILE__, __LINE__, #x); \
			abort();                                                           \
		}                                                                          \
	} while (0)
#define EPOCH 1767225600000ull

/* ---- the fake gateway ---- */

struct kv {
	char key[256];
	char val[FW_FLEET_REC_MAX];
	int len;
	int64_t crev, mrev;
};

static struct {
	int lfd;
	uint16_t port;
	pthread_t th;
	atomic_bool stop;
	atomic_int delay_ms; /* the next txn: applied, answered this late */
	atomic_int txns, puts;
	struct kv kv[16];
	int n;
	int64_t rev;
} G;

static struct kv *find(const char *key)
{
	for (int i = 0; i < G.n; i++)
		if (!strcmp(G.kv[i].key, key))
			return &G.kv[i];
	return NULL;
}

static void unb64(struct json_object *o, const char *name, char *buf, size_t cap, int *len)
{
	int n = etcd_unb64(o, name, buf, cap - 1);
	SRV_CHECK(n >= 0);
	buf[n] = '\0';
	if (len)
		*len = n;
}

static struct json_object *kv_json(const struct kv *k)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "key", etcd_b64(k->key, strlen(k->key)));
	json_object_object_add(o, "value", etcd_b64(k->val, (size_t)k->len));
	json_object_object_add(o, "create_revision", etcd_i64s(k->crev));
	json_object_object_add(o, "mod_revision", etcd_i64s(k->mrev));
	return o;
}

static struct json_object *range_of(const char *key)
{
	struct json_object *r = json_object_new_object(), *kvs = json_object_new_array();
	struct kv *k = find(key);
	if (k)
		json_object_array_add(kvs, kv_json(k));
	json_object_object_add(r, "kvs", kvs);
	return r;
}

static struct json_object *header(void)
{
	struct json_object *h = json_object_new_object();
	json_object_object_add(h, "revision", etcd_i64s(G.rev));
	return h;
}

static struct json_object *do_range(struct json_object *req)
{
	char key[256];
	unb64(req, "key", key, sizeof(key), NULL);
	struct json_object *r = range_of(key);
	json_object_object_add(r, "header", header());
	return r;
}

static struct json_object *do_txn(struct json_object *req)
{
	struct json_object *cmp = json_object_object_get(req, "compare"), *op, *r;
	bool ok = true;
	atomic_fetch_add(&G.txns, 1);
	for (size_t i = 0; i < json_object_array_length(cmp); i++) {
		struct json_object *c = json_object_array_get_idx(cmp, i);
		char key[256];
		unb64(c, "key", key, sizeof(key), NULL);
		struct kv *k = find(key);
		bool create = !strcmp(json_object_get_string(json_object_object_get(c, "target")),
				      "CREATE");
		int64_t want = etcd_i64(c, create ? "create_revision" : "mod_revision");
		ok = ok && (k ? (create ? k->crev : k->mrev) : 0) == want;
	}
	struct json_object *res = json_object_new_object(), *resp = json_object_new_array();
	op = json_object_array_get_idx(json_object_object_get(req, ok ? "success" : "failure"), 0);
	if (ok) {
		struct json_object *put = json_object_object_get(op, "request_put");
		char key[256];
		unb64(put, "key", key, sizeof(key), NULL);
		struct kv *k = find(key);
		if (k == NULL) {
			SRV_CHECK(G.n < 16);
			k = &G.kv[G.n++];
			snprintf(k->key, sizeof(k->key), "%s", key);
			k->crev = G.rev + 1;
		}
		unb64(put, "value", k->val, sizeof(k->val), &k->len);
		k->mrev = ++G.rev;
		atomic_fetch_add(&G.puts, 1);
		r = json_object_new_object();
		json_object_object_add(r, "response_put", json_object_new_object());
	} else {
		char key[256];
		unb64(json_object_object_get(op, "request_range"), "key", key, sizeof(key), NULL);
		r = json_object_new_object();
		json_object_object_add(r, "response_range", range_of(key));
	}
	json_object_array_add(resp, r);
	json_object_object_add(res, "header", header());
	json_object_object_add(res, "succeeded", json_object_new_boolean(ok));
	json_object_object_add(res, "responses", resp);
	return res;
}

/* One connection: requests until the client closes it. */
static void serve_conn(int fd)
{
	char buf[16384];
	size_t have = 0;
	for (;;) {
		char *end = have ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
		if (end == NULL) {
			if (have == sizeof(buf))
				return;
			/* idle keep-alive: give up when the test stops (a failed test
			 * leaves its store's connection open) */
			struct pollfd p = {fd, POLLIN, 0};
			while (!atomic_load(&G.stop) && poll(&p, 1, 100) == 0)
				;
			if (atomic_load(&G.stop))
				return;
			ssize_t n = read(fd, buf + have, sizeof(buf) - have);
			if (n <= 0)
				return;
			have += (size_t)n;
			continue;
		}
		size_t hlen = (size_t)(end - buf) + 4, blen = 0;
		for (char *p = buf; p < end; p = strstr(p, "\r\n") + 2)
			if (!strncasecmp(p, "Content-Length:", 15))
				blen = strtoul(p + 15, NULL, 10);
		while (have < hlen + blen) {
			ssize_t n = read(fd, buf + have, sizeof(buf) - have);
			if (n <= 0)
				return;
			have += (size_t)n;
		}
		char path[64] = "";
		sscanf(buf, "POST %63s", path);
		char body[8192];
		memcpy(body, buf + hlen, blen);
		body[blen] = '\0';
		memmove(buf, buf + hlen + blen, have - hlen - blen);
		have -= hlen + blen;
		struct json_object *req = json_tokener_parse(body), *res;
		SRV_CHECK(req != NULL && blen < sizeof(body));
		int delay = 0;
		if (!strcmp(path, "/v3/kv/txn")) {
			res = do_txn(req);
			delay = atomic_exchange(&G.delay_ms, 0);
		} else {
			SRV_CHECK(!strcmp(path, "/v3/kv/range"));
			res = do_range(req);
		}
		json_object_put(req);
		if (delay) /* applied; the reply after the client's try gave up */
			usleep((useconds_t)delay * 1000u);
		const char *js = json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN);
		char out[16384];
		int n = snprintf(out, sizeof(out),
				 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: %zu\r\n\r\n%s",
				 strlen(js), js);
		ssize_t w = send(fd, out, (size_t)n, MSG_NOSIGNAL);
		json_object_put(res);
		if (w != n)
			return; /* the client left (its try timed out) */
	}
}

static void *server_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&G.stop)) {
		struct pollfd p = {G.lfd, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0)
			continue;
		int fd = accept(G.lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve_conn(fd);
		close(fd);
	}
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	memset(&G, 0, sizeof(G));
	G.rev = 100;
	G.lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (G.lfd < 0 || bind(G.lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(G.lfd, 8) != 0 || getsockname(G.lfd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	G.port = ntohs(a.sin_port);
	return pthread_create(&G.th, NULL, server_main, NULL);
}

static int teardown(void **state)
{
	(void)state;
	atomic_store(&G.stop, true);
	pthread_join(G.th, NULL);
	close(G.lfd);
	return 0;
}

/* ---- the store and the recipe over it ---- */

static struct fw_fleet_store *store(void)
{
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", G.port);
	/* each try 250 ms (a quarter of 1000, at least 250): a reply 400 ms late is a resend */
	struct fw_fleet_etcd_opts o = {.endpoints = ep, .session_ms = 3000, .request_ms = 1000};
	struct fw_fleet_store *s = fw_fleet_store_etcd_new(&o, ROOT);
	assert_non_null(s);
	return s;
}

static uint64_t wall(void *arg)
{
	(void)arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct fw_fleet_recipe recipe(struct fw_fleet_store *s, uint64_t token)
{
	struct fw_fleet_recipe r = {.store = s,
				    .identity = "node-a",
				    .token = token,
				    .lease_ms = 60000,
				    .now_ms = wall};
	r.layout = (struct fw_layout){
		.epoch_ms = EPOCH, .time_bits = 41, .worker_bits = 2, .seq_bits = 20};
	return r;
}

/* What the store does: the first try landed, the second answers "exists". */
static void test_store_resends_a_committed_txn(void **state)
{
	(void)state;
	struct fw_fleet_store *s = store();
	struct fw_fleet_ver v;
	atomic_store(&G.delay_ms, 400);
	assert_int_equal(s->ops->create(s, 3, "x", 1, &v), -EEXIST);
	assert_true(atomic_load(&G.txns) >= 2);    /* sent again */
	assert_int_equal(atomic_load(&G.puts), 1); /* applied once */
	s->ops->free(s);
}

/* A claim (create) whose first try landed: the claim is this run's, with that worker ID. */
static void test_claim_create_resent(void **state)
{
	(void)state;
	struct fw_fleet_store *s = store();
	struct fw_fleet_recipe r = recipe(s, 0x1234);
	struct fw_fleet_cand c = {.worker = 0, .kind = FW_FLEET_NEW};
	struct fw_fleet_held h;
	struct fw_fleet_rec rec;
	struct fw_fleet_ver v;
	atomic_store(&G.delay_ms, 400);
	assert_int_equal(fw_fleet_claim_one(&r, &c, &h), 0);
	assert_true(atomic_load(&G.txns) >= 2);
	assert_int_equal(h.worker, 0);
	assert_int_equal(fw_fleet_read(s, 0, &rec, &v), 0);
	assert_int_equal(h.version, v.version); /* the record's revision, as read */
	assert_int_equal(h.lease, rec.lease);
	assert_int_equal(rec.token, 0x1234);
	/* renewals CAS on it: the version held is the record's */
	uint64_t mid, mtime;
	assert_int_equal(fw_fleet_renew(&r, &h, &mid, &mtime, NULL, 0), FW_FLEET_RENEWED);
	/* another run's create of it is refused: it is not taken for theirs */
	struct fw_fleet_recipe other = recipe(s, 0x9999);
	assert_int_equal(fw_fleet_claim_one(&other, &c, &h), -EEXIST);
	s->ops->free(s);
}

/* A claim by CAS (a released record) whose first try landed: the same. */
static void test_claim_cas_resent(void **state)
{
	(void)state;
	struct fw_fleet_store *s = store();
	struct fw_fleet_recipe r = recipe(s, 0x5678);
	struct fw_fleet_held h;
	struct fw_fleet_rec rec = {.token = 0, .lease = 1000, .floor = 1000};
	struct fw_fleet_ver v;
	char buf[FW_FLEET_REC_MAX];
	int len = fw_fleet_rec_format(buf, sizeof(buf), &rec);
	assert_int_equal(s->ops->create(s, 1, buf, len, &v), 0);
	struct fw_fleet_cand c = {
		.worker = 1, .kind = FW_FLEET_FREE, .version = v.version, .rec = rec};
	atomic_store(&G.delay_ms, 400);
	assert_int_equal(fw_fleet_claim_one(&r, &c, &h), 0);
	assert_int_equal(h.worker, 1);
	assert_int_equal(h.floor, 1000);
	assert_int_equal(fw_fleet_read(s, 1, &rec, &v), 0);
	assert_int_equal(h.version, v.version);
	assert_int_equal(rec.token, 0x5678);
	assert_string_equal(rec.owner, "node-a");
	s->ops->free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_resends_a_committed_txn, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_claim_create_resent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_cas_resent, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

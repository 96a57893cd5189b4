/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "etcd_http.h"
#include "fw_time.h"

int fw_fleet_etcd_endpoints_check(const char *endpoints, char *why, size_t whylen)
{
	char tmp[1], *w = why ? why : tmp;
	size_t wl = why ? whylen : sizeof(tmp);
	int n = 0;
	if (endpoints == NULL || !endpoints[0]) {
		snprintf(w, wl, "no endpoint (want http://HOST:PORT[,...])");
		return -EINVAL;
	}
	for (const char *p = endpoints; *p;) {
		size_t len = strcspn(p, ",");
		const char *rest = NULL;
		if (!strncmp(p, "http://", 7))
			rest = p + 7;
		else if (!strncmp(p, "https://", 8))
			rest = p + 8;
		size_t hl = rest ? len - (size_t)(rest - p) : 0;
		if (memchr(p, '@', len) != NULL) {
			snprintf(w, wl,
				 "endpoint %d holds user info (USER:PASSWORD@, not shown): give "
				 "credentials in [fleet] etcd_user and etcd_password_file",
				 n + 1);
			return -EINVAL;
		}
		if (rest == NULL || hl == 0 || len > 255 || memchr(rest, '/', hl) != NULL) {
			snprintf(w, wl, "'%.*s' is not http://HOST:PORT or https://HOST:PORT",
				 (int)FW_MIN(len, 255u), p);
			return -EINVAL;
		}
		if (++n > FW_FLEET_ETCD_ENDPOINTS_MAX) {
			snprintf(w, wl, "more than %d endpoints", FW_FLEET_ETCD_ENDPOINTS_MAX);
			return -EINVAL;
		}
		p += len;
		if (*p == ',' && !*++p) {
			snprintf(w, wl, "an empty endpoint after ','");
			return -EINVAL;
		}
	}
	return 0;
}

int fw_fleet_etcd_opts_check(const struct fw_fleet_etcd_opts *o, char *why, size_t whylen)
{
	char tmp[1], *w = why ? why : tmp;
	size_t wl = why ? whylen : sizeof(tmp);
	int rc = fw_fleet_etcd_endpoints_check(o->endpoints, w, wl);
	if (rc != 0 || o->user == NULL || !o->user[0] || o->plain_password)
		return rc;
	for (const char *p = o->endpoints; *p;) {
		size_t len = strcspn(p, ",");
		if (!strncmp(p, "http://", 7)) {
			snprintf(w, wl,
				 "%.*s is plain http://: etcd_user's password would cross the "
				 "network in clear; use https:// endpoints, or set [fleet] "
				 "etcd_plain_password = yes on a network you trust",
				 (int)len, p);
			return -EINVAL;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (sodium_init() < 0)
		abort(); /* libsodium cannot work at all: no store either */
}

static int copy(char *dst, size_t cap, const char *src)
{
	if (src == NULL)
		src = "";
	if (strlen(src) >= cap)
		return -EINVAL;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

int etcd_shared_init(struct etcd_shared *sh, const struct fw_fleet_etcd_opts *o, char *why,
		     size_t whylen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	memset(sh, 0, sizeof(*sh));
	/* the endpoints, and a password only over https (before anything is copied) */
	if (fw_fleet_etcd_opts_check(o, why, whylen) != 0)
		return -EINVAL;
	for (const char *p = o->endpoints; *p; sh->n_ep++) {
		size_t len = strcspn(p, ",");
		memcpy(sh->ep[sh->n_ep], p, len);
		p += len + (p[len] == ',');
	}
	if (copy(sh->ca, sizeof(sh->ca), o->ca_file) ||
	    copy(sh->cert, sizeof(sh->cert), o->cert_file) ||
	    copy(sh->key, sizeof(sh->key), o->key_file) ||
	    copy(sh->user, sizeof(sh->user), o->user) ||
	    copy(sh->password, sizeof(sh->password), o->password)) {
		snprintf(why, whylen, "a file name, user or password too long");
		return -EINVAL;
	}
	if (copy(sh->proxy, sizeof(sh->proxy), o->proxy)) {
		snprintf(why, whylen, "the proxy URL is too long");
		sodium_memzero(sh->password, sizeof(sh->password));
		return -EINVAL;
	}
	sh->request_ms = o->request_ms ? o->request_ms : 2000;
	pthread_once(&once, global_init);
	pthread_mutex_init(&sh->mu, NULL);
	return 0;
}

void etcd_shared_fini(struct etcd_shared *sh)
{
	sodium_memzero(sh->password, sizeof(sh->password));
	pthread_mutex_destroy(&sh->mu);
}

int etcd_conn_init(struct etcd_conn *c, struct etcd_shared *sh)
{
	memset(c, 0, sizeof(*c));
	c->sh = sh;
	c->curl = curl_easy_init();
	return c->curl ? 0 : -ENOMEM;
}

void etcd_conn_fini(struct etcd_conn *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

struct body {
	char *p;
	size_t len, cap;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;
	if (b->len + add + 1 > b->cap) {
		size_t cap = FW_MAX(b->cap * 2, b->len + add + 1);
		if (cap > (1u << 24))
			return 0; /* no reply of ours is 16 MiB: refuse (curl fails the call) */
		char *p = realloc(b->p, cap);
		if (p == NULL)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, add);
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct etcd_conn *c = arg;
	size_t len = size * n;
	if (len > 5 && len < 128 && !strncasecmp(data, "Date:", 5)) {
		char line[128];
		memcpy(line, data + 5, len - 5);
		line[len - 5] = '\0';
		time_t t = curl_getdate(line, NULL);
		if (t > 0)
			c->date_ms = (uint64_t)t * 1000u;
	}
	return len;
}

/* One POST to one endpoint. 0 (HTTP answered: *out parsed), -ENOTCONN (transport), -EIO. */
static int post_one(struct etcd_conn *c, const char *url, const char *json, bool auth,
		    struct json_object **out)
{
	CURL *h = c->curl;
	struct etcd_shared *sh = c->sh;
	struct body b = {0};
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	char tok[sizeof(sh->token) + 32];
	if (auth) {
		pthread_mutex_lock(&sh->mu);
		snprintf(tok, sizeof(tok), "Authorization: %s", sh->token);
		pthread_mutex_unlock(&sh->mu);
		hdr = curl_slist_append(hdr, tok);
	}
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	uint32_t tmo = c->timeout_ms ? c->timeout_ms : sh->request_ms;
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)tmo);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)FW_MIN(tmo, 1000u));
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	/* no proxy unless configured: the environment's would see the credentials */
	curl_easy_setopt(h, CURLOPT_PROXY, sh->proxy);
	if (!sh->proxy[0])
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (sh->ca[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, sh->ca);
	if (sh->cert[0])
		curl_easy_setopt(h, CURLOPT_SSLCERT, sh->cert);
	if (sh->key[0])
		curl_easy_setopt(h, CURLOPT_SSLKEY, sh->key);
	c->date_ms = 0;
	CURLcode rc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK) {
		snprintf(c->err, sizeof(c->err), "%s: %s", url, curl_easy_strerror(rc));
		free(b.p);
		return rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CACERT_BADFILE ? -EIO
										     : -ENOTCONN;
	}
	*out = b.p ? json_tokener_parse(b.p) : NULL;
	if (*out == NULL || !json_object_is_type(*out, json_type_object)) {
		snprintf(c->err, sizeof(c->err), "%s: HTTP %ld, not an etcd reply: %.200s", url,
			 status, b.p ? b.p : "");
		json_object_put(*out);
		*out = NULL;
		free(b.p);
		return -EIO;
	}
	free(b.p);
	return 0;
}

/* An error reply's gRPC code and message into c->err; 0 when the reply is not an error. */
static int reply_error(struct etcd_conn *c, struct json_object *o)
{
	struct json_object *e, *code;
	if (!json_object_object_get_ex(o, "error", &e))
		return 0;
	int k = json_object_object_get_ex(o, "code", &code) ? json_object_get_int(code) : -1;
	snprintf(c->err, sizeof(c->err), "%s", json_object_get_string(e)); /* "etcdserver: ..." */
	return k ? k : -1;
}

static int authenticate(struct etcd_conn *c, const char *base)
{
	struct etcd_shared *sh = c->sh;
	struct json_object *req = json_object_new_object(), *out = NULL, *tok;
	char url[300];
	json_object_object_add(req, "name", json_object_new_string(sh->user));
	json_object_object_add(req, "password", json_object_new_string(sh->password));
	snprintf(url, sizeof(url), "%s/v3/auth/authenticate", base);
	int rc = post_one(c, url, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN),
			  false, &out);
	json_object_put(req);
	if (rc != 0)
		return rc;
	if (reply_error(c, out) != 0) {
		json_object_put(out);
		return -EIO;
	}
	if (!json_object_object_get_ex(out, "token", &tok)) {
		snprintf(c->err, sizeof(c->err), "authentication gave no token");
		json_object_put(out);
		return -EIO;
	}
	const char *t = json_object_get_string(tok);
	if (t == NULL || strlen(t) >= sizeof(sh->token)) {
		snprintf(c->err, sizeof(c->err),
			 "authentication gave a token of %zu bytes (at most %zu)",
			 t ? strlen(t) : 0, sizeof(sh->token) - 1);
		json_object_put(out);
		return -EIO;
	}
	pthread_mutex_lock(&sh->mu);
	snprintf(sh->token, sizeof(sh->token), "%s", t);
	pthread_mutex_unlock(&sh->mu);
	json_object_put(out);
	return 0;
}

/*
 * An error reply that says the cluster is between leaders (or the member
 * cannot reach it): another member, or the same one a moment later, answers.
 */
static bool transient(const char *err)
{
	return strstr(err, "leader") != NULL || strstr(err, "timed out") != NULL ||
	       strstr(err, "connection closed") != NULL || strstr(err, "too many requests");
}

/* One try against endpoint @i: 0, -ENOTCONN (try another), -EIO (final). */
static int call_one(struct etcd_conn *c, int i, const char *path, const char *json,
		    struct json_object **out, int *code)
{
	struct etcd_shared *sh = c->sh;
	bool auth = sh->user[0] != '\0';
	char url[300];
	int rc = -ENOTCONN;
	snprintf(url, sizeof(url), "%s%s", sh->ep[i], path);
	for (int tries = 0; tries < 2; tries++) {
		if (auth && (tries > 0 || !sh->token[0])) {
			rc = authenticate(c, sh->ep[i]);
			if (rc != 0)
				return rc;
		}
		rc = post_one(c, url, json, auth, out);
		if (rc != 0)
			return rc;
		int k = reply_error(c, *out);
		if (k == 0)
			return 0;
		json_object_put(*out);
		*out = NULL;
		if (code)
			*code = k;
		if (transient(c->err))
			return -ENOTCONN;
		if (!(auth && k == ETCD_UNAUTHENTICATED))
			return -EIO;
	}
	return -EIO;
}

int etcd_call(struct etcd_conn *c, const char *path, struct json_object *req,
	      struct json_object **out, int *code)
{
	struct etcd_shared *sh = c->sh;
	const char *json = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	uint64_t due = fw_mono_ms() + sh->request_ms;
	int rc = -ENOTCONN;
	*out = NULL;
	if (code)
		*code = 0;
	/*
	 * Round the endpoints until one answers or request_ms is spent: a member
	 * killed refuses at once, a cluster electing a leader answers within its
	 * election timeout, so a call rides through a leader's loss.
	 */
	for (int n = 0; rc == -ENOTCONN; n++) {
		int i = (c->cur + n) % sh->n_ep;
		uint64_t now = fw_mono_ms();
		if (now >= due)
			break;
		c->timeout_ms = (uint32_t)FW_MIN(due - now, FW_MAX(sh->request_ms / 4, 250u));
		rc = call_one(c, i, path, json, out, code);
		if (rc == 0)
			c->cur = i;
		else if (rc == -ENOTCONN && (n + 1) % sh->n_ep == 0) {
			fw_sleep_ms(50); /* every member refused: a pause */
		}
	}
	json_object_put(req);
	return rc;
}

struct json_object *etcd_b64(const void *p, size_t len)
{
	size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(cap);
	if (s == NULL)
		return NULL;
	sodium_bin2base64(s, cap, p, len, sodium_base64_VARIANT_ORIGINAL);
	struct json_object *o = json_object_new_string(s);
	free(s);
	return o;
}

int etcd_unb64(struct json_object *o, const char *name, char *buf, size_t cap)
{
	struct json_object *v;
	size_t len = 0;
	if (!json_object_object_get_ex(o, name, &v))
		return 0;
	const char *s = json_object_get_string(v);
	if (sodium_base642bin((unsigned char *)buf, cap, s, strlen(s), NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	return (int)len;
}

int64_t etcd_i64(struct json_object *o, const char *name)
{
	struct json_object *v;
	return json_object_object_get_ex(o, name, &v) ? json_object_get_int64(v) : 0;
}

struct json_object *etcd_i64s(int64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_new_string(s);
}

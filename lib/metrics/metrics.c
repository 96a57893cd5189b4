/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "fw_metrics.h"

#define MAX_COLLECTORS 16
#define MAX_FAMILIES   256

struct fw_metrics {
	size_t n;
	struct {
		fw_metrics_collect_fn fn;
		void *arg;
	} c[MAX_COLLECTORS];
	pthread_mutex_t lock;      /* one scrape at a time */
	fw_metrics_probe_fn probe; /* /healthz, /readyz (set before serving) */
	void *probe_arg;
};

struct fw_metrics_writer {
	char *buf;
	size_t len, cap;
	int err;
	bool in_family;
	size_t n_families;
	const char *families[MAX_FAMILIES]; /* names written in this scrape */
	char family[128];                   /* current one */
};

struct fw_metrics_server {
	struct MHD_Daemon *d;
	struct fw_metrics *m;
	uint16_t port;
};

FW_API struct fw_metrics *fw_metrics_create(void)
{
	struct fw_metrics *m = calloc(1, sizeof(*m));

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	return m;
}

FW_API void fw_metrics_free(struct fw_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

FW_API int fw_metrics_add_collector(struct fw_metrics *m, fw_metrics_collect_fn fn, void *arg)
{
	int rc = 0;

	if (!m || !fn)
		return -EINVAL;
	pthread_mutex_lock(&m->lock); /* a scrape may be running */
	if (m->n == MAX_COLLECTORS) {
		rc = -ENOMEM;
	} else {
		m->c[m->n].fn = fn;
		m->c[m->n].arg = arg;
		m->n++;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static void put(struct fw_metrics_writer *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		while (w->len + n + 1 > cap)
			cap *= 2;
		char *b = realloc(w->buf, cap);
		if (!b) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void puts_(struct fw_metrics_writer *w, const char *s)
{
	put(w, s, strlen(s));
}

static void putf(struct fw_metrics_writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void putf(struct fw_metrics_writer *w, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	put(w, tmp, (size_t)n);
}

/* Escapes \ and newline (help), and " too (label values). */
static void put_escaped(struct fw_metrics_writer *w, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			puts_(w, "\\\\");
		else if (*s == '\n')
			puts_(w, "\\n");
		else if (quote && *s == '"')
			puts_(w, "\\\"");
		else
			put(w, s, 1);
	}
}

static bool valid_name(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (p != s && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static void fail(struct fw_metrics_writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

FW_API void fw_metrics_family(struct fw_metrics_writer *w, const char *name,
			      enum fw_metrics_type type, const char *help)
{
	if (w->err)
		return;
	if (!valid_name(name, true) || strlen(name) >= sizeof(w->family) ||
	    (type == FW_METRICS_COUNTER) != ends_with(name, "_total") ||
	    (type != FW_METRICS_COUNTER && type != FW_METRICS_GAUGE)) {
		fail(w, -EINVAL);
		return;
	}
	for (size_t i = 0; i < w->n_families; i++) {
		if (!strcmp(w->families[i], name)) {
			fail(w, -EINVAL);
			return;
		}
	}
	if (w->n_families == MAX_FAMILIES) {
		fail(w, -ENOMEM);
		return;
	}
	/* the caller's string must outlive the scrape: collectors pass literals */
	w->families[w->n_families++] = name;
	snprintf(w->family, sizeof(w->family), "%s", name);
	w->in_family = true;
	if (help) {
		putf(w, "# HELP ");
		puts_(w, name);
		puts_(w, " ");
		put_escaped(w, help, false);
		puts_(w, "\n");
	}
	puts_(w, "# TYPE ");
	puts_(w, name);
	puts_(w, type == FW_METRICS_COUNTER ? " counter\n" : " gauge\n");
}

static void sample_head(struct fw_metrics_writer *w, const struct fw_metrics_label *l, size_t n)
{
	if (w->err)
		return;
	if (!w->in_family || (n && !l)) {
		fail(w, -EINVAL);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!valid_name(l[i].name, false) || !strncmp(l[i].name, "__", 2) || !l[i].value) {
			fail(w, -EINVAL);
			return;
		}
	}
	puts_(w, w->family);
	if (n) {
		puts_(w, "{");
		for (size_t i = 0; i < n; i++) {
			if (i)
				puts_(w, ",");
			puts_(w, l[i].name);
			puts_(w, "=\"");
			put_escaped(w, l[i].value, true);
			puts_(w, "\"");
		}
		puts_(w, "}");
	}
	puts_(w, " ");
}

FW_API void fw_metrics_u64(struct fw_metrics_writer *w, const struct fw_metrics_label *labels,
			   size_t n, uint64_t v)
{
	sample_head(w, labels, n);
	putf(w, "%" PRIu64 "\n", v);
}

FW_API void fw_metrics_i64(struct fw_metrics_writer *w, const struct fw_metrics_label *labels,
			   size_t n, int64_t v)
{
	sample_head(w, labels, n);
	putf(w, "%" PRId64 "\n", v);
}

FW_API void fw_metrics_f64(struct fw_metrics_writer *w, const struct fw_metrics_label *labels,
			   size_t n, double v)
{
	sample_head(w, labels, n);
	if (isnan(v))
		puts_(w, "NaN\n");
	else if (isinf(v))
		puts_(w, v > 0 ? "+Inf\n" : "-Inf\n");
	else
		putf(w, "%.17g\n", v);
}

FW_API int fw_metrics_render(struct fw_metrics *m, char **text, size_t *len)
{
	struct fw_metrics_writer w;

	if (!m || !text || !len)
		return -EINVAL;
	memset(&w, 0, sizeof(w));
	*text = NULL;
	*len = 0;
	pthread_mutex_lock(&m->lock);
	put(&w, "", 0); /* an empty registry renders "" */
	for (size_t i = 0; i < m->n && !w.err; i++) {
		w.in_family = false; /* a collector starts with its own family */
		m->c[i].fn(&w, m->c[i].arg);
	}
	pthread_mutex_unlock(&m->lock);
	if (w.err) {
		free(w.buf);
		return w.err;
	}
	*text = w.buf;
	*len = w.len;
	return 0;
}

FW_API int fw_metrics_parse_listen(const char *listen, void *sa, size_t cap, size_t *salen)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h;
	size_t hl;
	char *end;

	if (!listen || !sa || !salen)
		return -EINVAL;
	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');
		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = listen + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon || strchr(listen, ':') != colon)
			return -EINVAL;
		h = listen;
		hl = (size_t)(colon - listen);
	}
	if (hl == 0 || hl >= sizeof(host) || !colon[1])
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port > 65535 || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	if (listen[0] == '[') {
		struct sockaddr_in6 s6 = {.sin6_family = AF_INET6,
					  .sin6_port = htons((uint16_t)port)};
		if (cap < sizeof(s6) || inet_pton(AF_INET6, host, &s6.sin6_addr) != 1)
			return -EINVAL;
		memcpy(sa, &s6, sizeof(s6));
		*salen = sizeof(s6);
	} else {
		struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		if (cap < sizeof(s4) || inet_pton(AF_INET, host, &s4.sin_addr) != 1)
			return -EINVAL;
		memcpy(sa, &s4, sizeof(s4));
		*salen = sizeof(s4);
	}
	return 0;
}

FW_API int fw_metrics_listen_is_loopback(const char *listen)
{
	struct sockaddr_storage ss = {0};
	size_t len;

	if (fw_metrics_parse_listen(listen, &ss, sizeof(ss), &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
			     const char *type)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

FW_API void fw_metrics_set_probe(struct fw_metrics *m, fw_metrics_probe_fn fn, void *arg)
{
	if (!m)
		return;
	m->probe = fn;
	m->probe_arg = arg;
}

/* /healthz and /readyz: the responder's probe answers 200 or 503 with its body. */
static enum MHD_Result probe(struct fw_metrics_server *s, struct MHD_Connection *c, bool ready)
{
	char body[2048];
	body[0] = '\0';
	pthread_mutex_lock(&s->m->lock);
	bool ok = s->m->probe(s->m->probe_arg, ready, body, sizeof(body));
	pthread_mutex_unlock(&s->m->lock);
	body[sizeof(body) - 1] = '\0';
	return reply(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, body,
		     "text/plain; charset=utf-8");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct fw_metrics_server *s = cls;
	char *text;
	size_t len;

	(void)version;
	(void)upload;
	(void)con_cls;
	if (*upload_size)
		return MHD_NO; /* no request bodies */
	bool is_probe = s->m->probe && (!strcmp(url, "/healthz") || !strcmp(url, "/readyz"));
	if (strcmp(url, "/metrics") && !is_probe)
		return reply(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", "text/plain");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n", "text/plain");
	if (is_probe)
		return probe(s, c, !strcmp(url, "/readyz"));
	int rc = fw_metrics_render(s->m, &text, &len);
	if (rc)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics could not be rendered\n",
			     "text/plain");
	struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

FW_API int fw_metrics_serve(struct fw_metrics *m, const char *listen,
			    struct fw_metrics_server **out)
{
	struct sockaddr_storage ss = {0};
	size_t salen;

	if (!m || !out || fw_metrics_parse_listen(listen, &ss, sizeof(ss), &salen))
		return -EINVAL;
	struct fw_metrics_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->m = m;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	/* 16 connections, at most 4 per source address (one slow or hostile client
	 * cannot hold them all and starve the scrapes), each idle one closed after 10 s */
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
				MHD_OPTION_CONNECTION_LIMIT, 16u,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, 4u,
				MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	int err = errno;
	if (!s->d) {
		free(s);
		return err ? -err : -EADDRINUSE;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : 0;
	*out = s;
	return 0;
}

FW_API uint16_t fw_metrics_server_port(const struct fw_metrics_server *s)
{
	return s ? s->port : 0;
}

FW_API void fw_metrics_server_stop(struct fw_metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}

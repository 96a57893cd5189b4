/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/metrics: the exposition text, the naming rules it enforces, the listen parser, the server. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_metrics.h"

static void good(struct fw_metrics_writer *w, void *arg)
{
	const struct fw_metrics_label l[] = {{"lcore", "0"}, {"worker", "7"}};
	const struct fw_metrics_label esc[] = {{"reason", "a\"b\\c\nd"}};
	(void)arg;
	fw_metrics_family(w, "fw_requests_total", FW_METRICS_COUNTER, "requests\nanswered \\ all");
	fw_metrics_u64(w, l, 2, UINT64_MAX);
	fw_metrics_u64(w, esc, 1, 3);
	fw_metrics_family(w, "fw_offset_seconds", FW_METRICS_GAUGE, NULL);
	fw_metrics_f64(w, NULL, 0, -0.25);
	fw_metrics_family(w, "fw_nan", FW_METRICS_GAUGE, "x");
	fw_metrics_f64(w, NULL, 0, NAN);
	fw_metrics_f64(w, NULL, 0, -INFINITY);
	fw_metrics_i64(w, NULL, 0, -5);
}

static char *render(fw_metrics_collect_fn fn, int *rc)
{
	struct fw_metrics *m = fw_metrics_create();
	char *text = NULL;
	size_t len = 0;

	assert_non_null(m);
	assert_int_equal(fw_metrics_add_collector(m, fn, NULL), 0);
	*rc = fw_metrics_render(m, &text, &len);
	if (*rc == 0)
		assert_int_equal(len, strlen(text));
	fw_metrics_free(m);
	return text;
}

static void exposition_text(void **state)
{
	(void)state;
	int rc;
	char *t = render(good, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(t, "# HELP fw_requests_total requests\\nanswered \\\\ all\n"
			       "# TYPE fw_requests_total counter\n"
			       "fw_requests_total{lcore=\"0\",worker=\"7\"} 18446744073709551615\n"
			       "fw_requests_total{reason=\"a\\\"b\\\\c\\nd\"} 3\n"
			       "# TYPE fw_offset_seconds gauge\n"
			       "fw_offset_seconds -0.25\n"
			       "# HELP fw_nan x\n"
			       "# TYPE fw_nan gauge\n"
			       "fw_nan NaN\n"
			       "fw_nan -Inf\n"
			       "fw_nan -5\n");
	free(t);
}

static void counter_without_total(struct fw_metrics_writer *w, void *a)
{
	(void)a;
	fw_metrics_family(w, "fw_requests", FW_METRICS_COUNTER, NULL);
	fw_metrics_u64(w, NULL, 0, 1);
}
static void gauge_with_total(struct fw_metrics_writer *w, void *a)
{
	(void)a;
	fw_metrics_family(w, "fw_x_total", FW_METRICS_GAUGE, NULL);
}
static void family_twice(struct fw_metrics_writer *w, void *a)
{
	(void)a;
	fw_metrics_family(w, "fw_x", FW_METRICS_GAUGE, NULL);
	fw_metrics_family(w, "fw_x", FW_METRICS_GAUGE, NULL);
}
static void bad_name(struct fw_metrics_writer *w, void *a)
{
	(void)a;
	fw_metrics_family(w, "9fw", FW_METRICS_GAUGE, NULL);
}
static void sample_first(struct fw_metrics_writer *w, void *a)
{
	(void)a;
	fw_metrics_u64(w, NULL, 0, 1);
}
static void reserved_label(struct fw_metrics_writer *w, void *a)
{
	const struct fw_metrics_label l[] = {{"__name__", "x"}};
	(void)a;
	fw_metrics_family(w, "fw_x", FW_METRICS_GAUGE, NULL);
	fw_metrics_u64(w, l, 1, 1);
}
static void bad_label(struct fw_metrics_writer *w, void *a)
{
	const struct fw_metrics_label l[] = {{"a-b", "x"}};
	(void)a;
	fw_metrics_family(w, "fw_x", FW_METRICS_GAUGE, NULL);
	fw_metrics_u64(w, l, 1, 1);
}

static void rules_enforced(void **state)
{
	(void)state;
	fw_metrics_collect_fn bad[] = {
		counter_without_total, gauge_with_total, family_twice, bad_name,
		sample_first,          reserved_label,   bad_label};
	for (size_t i = 0; i < FW_ARRAY_SIZE(bad); i++) {
		int rc;
		char *t = render(bad[i], &rc);
		assert_int_equal(rc, -EINVAL);
		assert_null(t);
	}
	assert_int_equal(fw_metrics_add_collector(NULL, good, NULL), -EINVAL);
}

/* Two collectors: one family across both is still caught; samples do not leak families. */
static void second(struct fw_metrics_writer *w, void *a)
{
	(void)a;
	fw_metrics_u64(w, NULL, 0, 1); /* no family of its own yet */
}

static void collector_starts_fresh(void **state)
{
	(void)state;
	struct fw_metrics *m = fw_metrics_create();
	char *t;
	size_t len;
	assert_int_equal(fw_metrics_add_collector(m, good, NULL), 0);
	assert_int_equal(fw_metrics_add_collector(m, second, NULL), 0);
	assert_int_equal(fw_metrics_render(m, &t, &len), -EINVAL);
	fw_metrics_free(m);
	/* an empty registry renders an empty text */
	m = fw_metrics_create();
	assert_int_equal(fw_metrics_render(m, &t, &len), 0);
	assert_string_equal(t, "");
	free(t);
	fw_metrics_free(m);
}

static void listen_parse(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	size_t len;
	assert_int_equal(fw_metrics_parse_listen("127.0.0.1:9842", &ss, sizeof(ss), &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9842);
	assert_int_equal(fw_metrics_parse_listen("[::1]:80", &ss, sizeof(ss), &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(fw_metrics_parse_listen("0.0.0.0:0", &ss, sizeof(ss), &len), 0);
	const char *bad[] = {"",        "127.0.0.1",     "127.0.0.1:",    ":80",
			     "::1:80",  "[::1]80",       "1.2.3.4:65536", "1.2.3.4:-1",
			     "host:80", "127.0.0.1:80x", "[1.2.3.4]:80",  "1.2.3.4:+80"};
	for (size_t i = 0; i < FW_ARRAY_SIZE(bad); i++)
		assert_int_equal(fw_metrics_parse_listen(bad[i], &ss, sizeof(ss), &len), -EINVAL);
	assert_true(fw_metrics_listen_is_loopback("127.1.2.3:1"));
	assert_true(fw_metrics_listen_is_loopback("[::1]:1"));
	assert_false(fw_metrics_listen_is_loopback("0.0.0.0:1"));
	assert_false(fw_metrics_listen_is_loopback("[::]:1"));
}

static void http_get(uint16_t port, const char *req, char *out, size_t cap)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd, out + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fd);
}

static void late(struct fw_metrics_writer *w, void *arg)
{
	(void)arg;
	fw_metrics_family(w, "fw_late_seconds", FW_METRICS_GAUGE, "added while serving");
	fw_metrics_f64(w, NULL, 0, 1.5);
}

static void server_serves(void **state)
{
	(void)state;
	struct fw_metrics *m = fw_metrics_create();
	struct fw_metrics_server *s = NULL, *s2 = NULL;
	static char buf[8192];
	assert_int_equal(fw_metrics_add_collector(m, good, NULL), 0);
	assert_int_equal(fw_metrics_serve(m, "127.0.0.1:0", &s), 0);
	uint16_t port = fw_metrics_server_port(s);
	assert_true(port > 0);
	http_get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 200 OK\r\n"));
	assert_non_null(strstr(buf, "text/plain; version=0.0.4"));
	assert_non_null(strstr(buf, "\r\n\r\n# HELP fw_requests_total"));
	assert_null(strstr(buf, "fw_late_seconds"));
	/* a collector added while the server runs shows in the next scrape */
	assert_int_equal(fw_metrics_add_collector(m, late, NULL), 0);
	http_get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, "\nfw_late_seconds 1.5\n"));
	http_get(port, "GET / HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 404 "));
	http_get(port, "DELETE /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 405 "));
	/* the same port again: refused, not silently shared */
	char listen[32];
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	assert_true(fw_metrics_serve(m, listen, &s2) < 0);
	assert_int_equal(fw_metrics_serve(m, "nonsense", &s2), -EINVAL);
	fw_metrics_server_stop(s);
	fw_metrics_free(m);
}

/*
 * One source address holding connections open (a slow or hostile client)
 * does not starve the scrapes from another: at most 4 per address (issue
 * 33; before, the 16 connections of the server were all its).
 */
static void server_per_address_cap(void **state)
{
	(void)state;
	struct fw_metrics *m = fw_metrics_create();
	struct fw_metrics_server *s = NULL;
	static char buf[8192];
	int idle[16];
	assert_int_equal(fw_metrics_add_collector(m, good, NULL), 0);
	assert_int_equal(fw_metrics_serve(m, "127.0.0.1:0", &s), 0);
	uint16_t port = fw_metrics_server_port(s);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in from = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	from.sin_addr.s_addr = htonl(0x7f000002); /* 127.0.0.2 */
	for (int i = 0; i < 16; i++) {
		idle[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(idle[i] >= 0);
		assert_int_equal(bind(idle[i], (struct sockaddr *)&from, sizeof(from)), 0);
		assert_int_equal(connect(idle[i], (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(write(idle[i], "GET /met", 8), 8); /* and never the rest */
	}
	usleep(200 * 1000);
	/* a scrape that waits for the idle ones' 10 s timeout has failed (Prometheus
	 * gives up at its own 10 s): 3 s is ample for a loopback answer */
	struct timeval tv = {.tv_sec = 3};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	buf[got > 0 ? got : 0] = '\0';
	close(fd);
	if (strstr(buf, " 200 OK\r\n") == NULL)
		fail_msg("a scrape from 127.0.0.1 while 127.0.0.2 holds 16 connections: '%.60s'",
			 buf);
	for (int i = 0; i < 16; i++)
		close(idle[i]);
	fw_metrics_server_stop(s);
	fw_metrics_free(m);
}

/* The probes: 200 or 503 with the responder's body; 404 without probes. */
static bool probe_said_ready;
static bool fake_probe(void *arg, bool ready, char *body, size_t cap)
{
	(void)arg;
	if (!ready) {
		snprintf(body, cap, "ok\n");
		return true;
	}
	snprintf(body, cap,
		 probe_said_ready ? "ready: 1 of 1 workers issuing\n"
				  : "not ready: 1 of 1 workers cannot issue now\n");
	return probe_said_ready;
}

static void server_probes(void **state)
{
	(void)state;
	struct fw_metrics *m = fw_metrics_create();
	struct fw_metrics_server *s = NULL;
	static char buf[8192];
	assert_int_equal(fw_metrics_serve(m, "127.0.0.1:0", &s), 0);
	uint16_t port = fw_metrics_server_port(s);
	http_get(port, "GET /readyz HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 404 ")); /* no probes set */
	fw_metrics_server_stop(s);
	fw_metrics_set_probe(m, fake_probe, NULL);
	assert_int_equal(fw_metrics_serve(m, "127.0.0.1:0", &s), 0);
	port = fw_metrics_server_port(s);
	http_get(port, "GET /healthz HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 200 OK\r\n"));
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	probe_said_ready = false;
	http_get(port, "GET /readyz HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 503 "));
	assert_non_null(strstr(buf, "\r\n\r\nnot ready: 1 of 1"));
	probe_said_ready = true;
	http_get(port, "GET /readyz HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 200 OK\r\n"));
	http_get(port, "POST /readyz HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, " 405 "));
	fw_metrics_server_stop(s);
	fw_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exposition_text),        cmocka_unit_test(rules_enforced),
		cmocka_unit_test(collector_starts_fresh), cmocka_unit_test(listen_parse),
		cmocka_unit_test(server_serves),          cmocka_unit_test(server_per_address_cap),
		cmocka_unit_test(server_probes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakectl status: one screen for an operator from a responder's /metrics
 * (flakewire or flakesock, [metrics] listen): worker IDs, clock, mark,
 * rates over --interval, drops by reason, fleet leases, and a verdict with
 * a monitoring plugin's exit status (0 OK, 1 WARNING, 2 CRITICAL,
 * 3 UNKNOWN). The thresholds are the alert rules' (config/prometheus).
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "flakectl.h"
#include "fw_layout.h"
#include "fw_time.h"

#define ST_OK       0
#define ST_WARNING  1
#define ST_CRITICAL 2
#define ST_UNKNOWN  3

#define MAX_SAMPLES 4096
#define BODY_MAX    (4u << 20)

struct sample {
	char name[96];
	char labels[160];
	double v;
};

struct scrape {
	size_t n;
	struct sample *s;
};

static void status_help(FILE *f)
{
	fprintf(f, "usage: flakectl status [--metrics HOST:PORT] [--interval S] [--timeout MS]\n"
		   "\n"
		   "One screen from a responder's Prometheus endpoint ([metrics] listen of\n"
		   "flakewire or flakesock): version and uptime, worker IDs, clock offset,\n"
		   "slew and flags, the persisted mark and how far ahead it is, requests,\n"
		   "IDs and replies per second over the interval, drops by reason, fleet\n"
		   "leases, and a verdict. Exit status, as a monitoring plugin's:\n"
		   "0 OK; 1 WARNING (some workers cannot issue, clock stepped back, offset\n"
		   "over 100 ms, over 10 %% RETRY_AFTER or 5 %% drops in the interval);\n"
		   "2 CRITICAL (no worker can issue: flakewire_worker_state, what /readyz\n"
		   "reads; the mark cannot be persisted, issuing stopped at the mark,\n"
		   "CLOCK_UNSAFE replies, a lease ended or ending within 60 s (a quarter\n"
		   "of a lease under 4 minutes), starting); 3 UNKNOWN\n"
		   "(endpoint unreachable, not flakewire metrics, or bad arguments).\n"
		   "\n"
		   "  --metrics HOST:PORT   the endpoint (default 127.0.0.1:9842; [::1]:9842)\n"
		   "  --interval S          seconds between the two scrapes the rates come\n"
		   "                        from, 0-60 (default 1; 0: one scrape, totals only)\n"
		   "  --timeout MS          connect and read timeout, 10-60000 (default 2000)\n");
}

/* GET http://HOST:PORT/metrics into a malloc'd NUL-terminated body. */
static char *http_get(const char *cmd, const char *endpoint, int timeout_ms)
{
	char host[256], port[16];
	const char *colon;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;

	if (endpoint[0] == '[') {
		const char *rb = strchr(endpoint, ']');
		if (!rb || rb[1] != ':' || (size_t)(rb - endpoint - 1) >= sizeof(host))
			goto bad;
		memcpy(host, endpoint + 1, (size_t)(rb - endpoint - 1));
		host[rb - endpoint - 1] = '\0';
		colon = rb + 1;
	} else {
		colon = strrchr(endpoint, ':');
		if (!colon || (size_t)(colon - endpoint) >= sizeof(host) || colon == endpoint)
			goto bad;
		memcpy(host, endpoint, (size_t)(colon - endpoint));
		host[colon - endpoint] = '\0';
	}
	if (!colon[1] || strlen(colon + 1) >= sizeof(port))
		goto bad;
	strcpy(port, colon + 1);
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		fc_err(cmd, "--metrics %s: %s", endpoint, gai_strerror(rc));
		return NULL;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)) {
		fc_err(cmd, "%s: %s", endpoint, strerror(errno));
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	freeaddrinfo(ai);
	char req[512];
	int len = snprintf(req, sizeof(req),
			   "GET /metrics HTTP/1.0\r\nHost: %s\r\nAccept: text/plain\r\n\r\n",
			   endpoint);
	size_t sent = 0, got = 0, cap = 65536;
	char *buf = malloc(cap);
	uint64_t deadline = fw_mono_ms() + (uint64_t)timeout_ms;
	while (buf) {
		uint64_t now = fw_mono_ms();
		int left = now < deadline ? (int)(deadline - now) : 0;
		struct pollfd p = {fd, sent < (size_t)len ? POLLOUT : POLLIN, 0};
		if (left <= 0 || poll(&p, 1, left) <= 0) {
			fc_err(cmd, "%s: no answer within %d ms", endpoint, timeout_ms);
			goto fail;
		}
		if (sent < (size_t)len) {
			ssize_t w = send(fd, req + sent, (size_t)len - sent, MSG_NOSIGNAL);
			if (w < 0) {
				fc_err(cmd, "%s: %s", endpoint, strerror(errno));
				goto fail;
			}
			sent += (size_t)w;
			continue;
		}
		if (got + 1 >= cap) {
			char *b = cap < BODY_MAX ? realloc(buf, cap * 2) : NULL;
			if (!b) {
				fc_err(cmd, "%s: answer too large", endpoint);
				goto fail;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
		if (r < 0) {
			fc_err(cmd, "%s: %s", endpoint, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[got] = '\0';
	if (strncmp(buf, "HTTP/1.", 7) || strncmp(buf + 8, " 200", 4)) {
		fc_err(cmd, "%s: %.40s", endpoint, buf);
		free(buf);
		return NULL;
	}
	char *body = strstr(buf, "\r\n\r\n");
	if (!body) {
		free(buf);
		return NULL;
	}
	memmove(buf, body + 4, strlen(body + 4) + 1);
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
bad:
	fc_err(cmd, "--metrics %s: not HOST:PORT", endpoint);
	return NULL;
}

static int parse(char *text, struct scrape *sc)
{
	sc->n = 0;
	sc->s = calloc(MAX_SAMPLES, sizeof(*sc->s));
	if (!sc->s)
		return -1;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#' || !line[0] || sc->n == MAX_SAMPLES)
			continue;
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		struct sample *s = &sc->s[sc->n];
		char *brace = strchr(line, '{');
		if (brace) {
			*brace = '\0';
			snprintf(s->labels, sizeof(s->labels), "%s", brace + 1);
			char *end = strrchr(s->labels, '}');
			if (end)
				*end = '\0';
		}
		snprintf(s->name, sizeof(s->name), "%s", line);
		s->v = strtod(sp + 1, NULL);
		sc->n++;
	}
	return 0;
}

/* Sum of NAME's samples whose labels contain @match (NULL: all); NAN when absent. */
static double sum(const struct scrape *sc, const char *name, const char *match)
{
	double t = 0;
	bool any = false;
	for (size_t i = 0; i < sc->n; i++) {
		if (strcmp(sc->s[i].name, name) || (match && !strstr(sc->s[i].labels, match)))
			continue;
		t += sc->s[i].v;
		any = true;
	}
	return any ? t : NAN;
}

/* Value of label @key in @labels into @out. */
static const char *label(const char *labels, const char *key, char *out, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "%s=\"", key);
	const char *p = strstr(labels, pat);
	out[0] = '\0';
	if (!p)
		return out;
	p += strlen(pat);
	size_t n = 0;
	while (p[n] && p[n] != '"' && n + 1 < cap)
		n++;
	memcpy(out, p, n);
	out[n] = '\0';
	return out;
}

static void raise_to(int *st, int level, char *why, size_t cap, const char *reason)
{
	if (level > *st)
		*st = level;
	size_t l = strlen(why);
	snprintf(why + l, cap - l, "%s%s", l ? "; " : "", reason);
}

static void print_dur(double s)
{
	if (s >= 86400)
		printf("%.0fd%02.0fh", floor(s / 86400), floor(fmod(s, 86400) / 3600));
	else if (s >= 3600)
		printf("%.0fh%02.0fm", floor(s / 3600), floor(fmod(s, 3600) / 60));
	else
		printf("%.0fm%02.0fs", floor(s / 60), fmod(s, 60));
}

static void free_scrape(struct scrape *s)
{
	free(s->s);
	s->s = NULL;
}

int cmd_status(int argc, char **argv)
{
	const char *cmd = argv[0], *endpoint = "127.0.0.1:9842";
	uint64_t interval = 1, timeout = 2000;
	struct scrape a = {0}, b = {0};
	char why[1024] = "";
	int st = ST_OK;

	for (int i = 1; i < argc; i++) {
		int r;
		if (fc_is_help(argv[i])) {
			status_help(stdout);
			return FC_EXIT_OK;
		}
		if ((r = fc_opt_value(argc, argv, &i, "--metrics", &endpoint)) ||
		    (r = fc_opt_u64(argc, argv, &i, "--interval", 0, 60, &interval)) ||
		    (r = fc_opt_u64(argc, argv, &i, "--timeout", 10, 60000, &timeout))) {
			if (r < 0)
				return ST_UNKNOWN;
			continue;
		}
		fc_unknown_arg(cmd, argv[i]);
		return ST_UNKNOWN;
	}

	char *t0 = http_get(cmd, endpoint, (int)timeout);
	if (!t0 || parse(t0, &a)) {
		free(t0);
		printf("UNKNOWN: %s unreachable\n", endpoint);
		return ST_UNKNOWN;
	}
	free(t0);
	uint64_t t_a = fw_mono_ns();
	if (isnan(sum(&a, "flakewire_build_info", NULL))) {
		printf("UNKNOWN: %s serves no flakewire metrics\n", endpoint);
		free_scrape(&a);
		return ST_UNKNOWN;
	}
	const struct scrape *cur = &a;
	double dt = 0;
	if (interval) {
		fw_sleep_ms((uint32_t)interval * 1000u);
		char *t1 = http_get(cmd, endpoint, (int)timeout);
		if (!t1 || parse(t1, &b)) {
			free(t1);
			free_scrape(&a);
			printf("UNKNOWN: %s unreachable\n", endpoint);
			return ST_UNKNOWN;
		}
		free(t1);
		dt = (double)(fw_mono_ns() - t_a) / 1e9;
		cur = &b;
	}

	char ver[32] = "", resp[32] = "", buf[64];
	for (size_t i = 0; i < cur->n; i++)
		if (!strcmp(cur->s[i].name, "flakewire_build_info")) {
			label(cur->s[i].labels, "version", ver, sizeof(ver));
			label(cur->s[i].labels, "responder", resp, sizeof(resp));
		}
	double start = sum(cur, "flakewire_start_time_seconds", NULL);
	double wall = (double)fw_wall_ms() / 1000.0;
	printf("%-9s %s %s at %s, up ", "responder", resp, ver, endpoint);
	print_dur(wall - start);
	printf("\n%-9s %.0f:", "workers", sum(cur, "flakewire_workers", NULL));
	for (size_t i = 0; i < cur->n; i++) {
		if (strcmp(cur->s[i].name, "flakewire_ids_total"))
			continue;
		char w[16], where[16];
		label(cur->s[i].labels, "worker", w, sizeof(w));
		label(cur->s[i].labels, "lcore", where, sizeof(where));
		if (where[0])
			printf(" %s (lcore %s)", w, where);
		else
			printf(" %s (thread %s)", w,
			       label(cur->s[i].labels, "thread", where, sizeof(where)));
	}
	printf("\n");

	/* the workers' states: what /readyz and the alert rules read (one truth) */
	size_t n_w = 0, n_issuing = 0;
	char states[512] = "";
	size_t sl = 0;
	for (size_t i = 0; i < cur->n; i++) {
		if (strcmp(cur->s[i].name, "flakewire_worker_state") || cur->s[i].v != 1)
			continue;
		char w[16], stn[32];
		label(cur->s[i].labels, "worker", w, sizeof(w));
		label(cur->s[i].labels, "state", stn, sizeof(stn));
		n_w++;
		n_issuing += !strcmp(stn, "issuing");
		if (sl < sizeof(states))
			sl += (size_t)snprintf(states + sl, sizeof(states) - sl, " %s %s", w, stn);
	}
	if (n_w)
		printf("%-9s%s\n", "states", states);

	double off = sum(cur, "flakewire_clock_offset_seconds", NULL);
	if (!isnan(off)) {
		double back = sum(cur, "flakewire_clock_flag", "flag=\"back_step\"");
		double slewing = sum(cur, "flakewire_clock_flag", "flag=\"slewing\"");
		printf("%-9s offset %+.3f ms, slew %+.0f ppm%s%s\n", "clock", off * 1e3,
		       sum(cur, "flakewire_clock_slew_ratio", NULL) * 1e6,
		       back > 0 ? ", BACK_STEP" : "", slewing > 0 ? ", slewing" : "");
		if (back > 0)
			raise_to(&st, ST_WARNING, why, sizeof(why),
				 "system clock stepped back beyond step_ms");
		if (fabs(off) > 0.1)
			raise_to(&st, ST_WARNING, why, sizeof(why), "clock offset over 100 ms");
	} else {
		printf("%-9s system clock (flakesock)\n", "clock");
	}

	double mark = sum(cur, "flakewire_mark_timestamp_seconds", NULL);
	double ahead = sum(cur, "flakewire_mark_ahead_seconds", NULL);
	double failing = sum(cur, "flakewire_mark_failing", NULL);
	char iso[FW_ISO8601_LEN];
	if (isnan(mark))
		printf("%-9s not published yet (starting)\n", "mark");
	else
		printf("%-9s %s, %+.3f s ahead of the system clock, %s (failures %.0f)\n", "mark",
		       fw_format_iso8601((uint64_t)(mark * 1000.0), iso), ahead,
		       failing > 0 ? "NOT PERSISTING" : "persisting",
		       sum(cur, "flakewire_mark_failures_total", NULL));
	if (failing > 0)
		raise_to(&st, ST_CRITICAL, why, sizeof(why), "the mark cannot be persisted");
	if (ahead < 0)
		raise_to(&st, ST_CRITICAL, why, sizeof(why),
			 "issuing stopped at the mark (RETRY_AFTER)");

	if (dt > 0) {
#define RATE(n, m) ((sum(&b, n, m) - sum(&a, n, m)) / dt)
		double req = RATE("flakewire_requests_total", NULL);
		double replies = RATE("flakewire_replies_total", NULL);
		double retry = RATE("flakewire_replies_total", "status=\"retry_after\"");
		double unsafe = RATE("flakewire_replies_total", "status=\"clock_unsafe\"");
		printf("%-9s %.0f requests/s, %.0f IDs/s; replies: ok %.0f/s, retry_after %.0f/s, "
		       "clock_unsafe %.0f/s (over %.1f s)\n",
		       "rates", req, RATE("flakewire_ids_total", NULL),
		       RATE("flakewire_replies_total", "status=\"ok\""), retry, unsafe, dt);
		if (unsafe > 0)
			raise_to(&st, ST_CRITICAL, why, sizeof(why), "CLOCK_UNSAFE replies");
		if (replies > 0 && retry / replies > 0.1)
			raise_to(&st, ST_WARNING, why, sizeof(why), "over 10 % RETRY_AFTER");
		/* drops by reason, the noise of a shared segment left out as in the alert */
		double dsum = 0;
		printf("%-9s", "drops");
		/* per reason, summed over the workers */
		struct {
			char r[32];
			double v;
		} rs[32];
		size_t nr = 0;
		for (size_t i = 0; i < b.n; i++) {
			if (strcmp(b.s[i].name, "flakewire_drops_total"))
				continue;
			char r[32], m[48];
			label(b.s[i].labels, "reason", r, sizeof(r));
			size_t k = 0;
			while (k < nr && strcmp(rs[k].r, r))
				k++;
			if (k == nr && nr < FW_ARRAY_SIZE(rs)) {
				snprintf(rs[nr].r, sizeof(rs[nr].r), "%s", r);
				snprintf(m, sizeof(m), "reason=\"%s\"", r);
				rs[nr].v = RATE("flakewire_drops_total", m);
				nr++;
			}
		}
		bool any = false;
		for (size_t k = 0; k < nr; k++) {
			if (rs[k].v <= 0)
				continue;
			printf(" %s %.0f/s", rs[k].r, rs[k].v);
			any = true;
			if (strcmp(rs[k].r, "not_us") && strcmp(rs[k].r, "not_ip") &&
			    strcmp(rs[k].r, "ip_proto"))
				dsum += rs[k].v;
		}
		/* since start as well: a rate over one interval says "none" right after a flood */
		double total = sum(&b, "flakewire_drops_total", NULL);
		printf("%s (over %.1f s); %.0f since start\n", any ? "" : " none", dt,
		       isnan(total) ? 0.0 : total);
		if (dsum + req > 0 && dsum / (dsum + req) > 0.05)
			raise_to(&st, ST_WARNING, why, sizeof(why), "over 5 % of requests dropped");
#undef RATE
	} else {
		printf("%-9s %.0f requests, %.0f IDs since start (--interval 0: no rates)\n",
		       "totals", sum(cur, "flakewire_requests_total", NULL),
		       sum(cur, "flakewire_ids_total", NULL));
	}

	/* "ending" as in the alert rule: under a minute, or under a quarter of a
	 * lease shorter than 4 minutes (a renewing node never falls that low) */
	double lease_len = sum(cur, "flakewire_fleet_lease_length_seconds", NULL);
	double ending = isnan(lease_len) ? 60 : fmin(60, lease_len / 4);
	bool lease = false;
	for (size_t i = 0; i < cur->n; i++) {
		if (strcmp(cur->s[i].name, "flakewire_fleet_lease_remaining_seconds"))
			continue;
		if (!lease)
			printf("%-9s", "leases");
		lease = true;
		printf(" worker %s %.0f s", label(cur->s[i].labels, "worker", buf, sizeof(buf)),
		       cur->s[i].v);
		if (cur->s[i].v < 0)
			raise_to(&st, ST_CRITICAL, why, sizeof(why), "a fleet lease ended");
		else if (cur->s[i].v < ending) {
			char r[64];
			snprintf(r, sizeof(r), "a fleet lease ends within %.3g s", ending);
			raise_to(&st, ST_CRITICAL, why, sizeof(why), r);
		}
	}
	printf(lease ? "\n" : "%-9s none (no fleet)\n", "leases");
	if (sum(cur, "flakewire_fleet_root_ok", NULL) == 0) {
		printf("%-9s stopped: the fleet's root is missing, of another generation, or the "
		       "registry was restored: no claim, takeover or renewal until 'flakectl fleet "
		       "fence'\n",
		       "root");
		raise_to(&st, ST_WARNING, why, sizeof(why),
			 "the fleet's root is wiped or restored: claims stopped until 'flakectl "
			 "fleet fence'");
	}

	/* after the causes above, so the verdict names the cause first; workers
	 * exported but neither their states nor the mark yet: flakesock started,
	 * its workers not running (/readyz answers 503) */
	if (!n_w && isnan(mark) && sum(cur, "flakewire_workers", NULL) > 0)
		raise_to(&st, ST_CRITICAL, why, sizeof(why),
			 "starting: no worker serves yet (/readyz answers 503)");
	else if (n_w && n_issuing == 0)
		raise_to(&st, ST_CRITICAL, why, sizeof(why),
			 "no worker can issue (see states; /readyz answers 503)");
	else if (n_w && n_issuing < n_w)
		raise_to(&st, ST_WARNING, why, sizeof(why),
			 "some workers cannot issue (see states)");
	static const char *const verdict[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
	printf("%-9s %s%s%s\n", "status", verdict[st], why[0] ? ": " : "", why);
	free_scrape(&a);
	free_scrape(&b);
	return st;
}

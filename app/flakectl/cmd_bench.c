/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client_args.h"
#include "flakectl.h"
#include "fw_err.h"
#include "fw_hist.h"
#include "fw_idcheck.h"
#include "fw_time.h"

/* The set-up INFO (the layout) waits at least this long, whatever --timeout. */
#define BENCH_PROBE_MS     3000
#define BENCH_DURATION_DEF 5
#define BENCH_DURATION_MAX 600
#define BENCH_REQUESTS_MAX 1000000000000ull
#define BENCH_THREADS_MAX  256
#define BENCH_RATE_MAX     100000000ull
/* Ranges kept for the uniqueness check, all threads together (512 MiB). */
#define BENCH_STORE_MAX    (1u << 25)
/* The longest single wait, so a stop (SIGINT, store full) is noticed soon. */
#define POLL_SLICE_MS      50

#define NS_PER_MS 1000000ull

struct bench_cfg {
	struct client_args ca;
	uint64_t duration_s;
	uint64_t requests; /* 0: bounded by the duration only */
	uint64_t count;
	uint64_t threads;
	uint64_t rate; /* requests a second in all; 0: as fast as the replies come */
	bool range;
	bool json;
	const char *out;
	uint8_t op;
	struct fw_layout layout;
	struct sockaddr_storage addr[CLIENT_ARGS_SERVERS_MAX];
	socklen_t addrlen[CLIENT_ARGS_SERVERS_MAX];
};

/* One per thread, written by that thread only; main sums them after join. */
struct bench_thread {
	const struct bench_cfg *cfg;
	pthread_t tid;
	int fd;
	size_t server;
	uint64_t budget; /* requests this thread may send */
	uint64_t deadline_ns;
	uint64_t interval_ns; /* --rate: at least this long between sends; 0: none */

	uint64_t sent, answered, timeouts, abandoned, errors, stale, malformed, invalid;
	uint64_t status[FW_WIRE_ST_COUNT];
	uint64_t ids;
	int first_errno;
	bool store_full;
	struct fw_hist hist;   /* round trips, ns */
	struct fw_idcheck chk; /* order per worker on this thread's socket; its IDs kept */
	uint8_t tx[FW_WIRE_MTU_PAYLOAD];
	uint8_t rx[2048];
	struct fw_wire_reply reply;
} FW_CACHE_ALIGNED;

struct bench_total {
	double elapsed_s;
	uint64_t sent, answered, timeouts, abandoned, errors, stale, malformed, invalid;
	uint64_t status[FW_WIRE_ST_COUNT];
	uint64_t ids;
	int first_errno;
	bool store_full;
	struct fw_hist hist;
	struct fw_idcheck chk; /* every thread's merged: uniqueness across them all */
};

/* Set by SIGINT/SIGTERM or a full store; every thread stops at its next look. */
static atomic_bool bench_stop;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store_explicit(&bench_stop, true, memory_order_relaxed);
}

static bool stopped(void)
{
	return atomic_load_explicit(&bench_stop, memory_order_relaxed);
}

/* Checks and records an OK reply; false if it is invalid (its IDs are not kept). */
static bool take_ids(struct bench_thread *t, const struct fw_wire_reply *r)
{
	uint64_t total = 0;
	unsigned bad = 0;

	if (t->cfg->range) {
		for (unsigned k = 0; k < r->hdr.count; k++) {
			const struct fw_wire_range *g = &r->body.ranges[k];

			if (g->first >> 63 || (g->first + g->n - 1) >> 63)
				return false;
			total += g->n;
		}
	} else {
		for (unsigned k = 0; k < r->hdr.count; k++) {
			if (r->body.ids[k] >> 63)
				return false;
		}
		total = r->hdr.count;
	}
	if (total == 0 || total > t->cfg->count)
		return false;
	if (t->cfg->range)
		for (unsigned k = 0; k < r->hdr.count; k++)
			bad |= fw_idcheck_add(&t->chk, r->body.ranges[k].first, r->body.ranges[k].n,
					      r->hdr.datacenter, r->hdr.worker, 0, 0);
	else
		bad = fw_idcheck_add_list(&t->chk, r->body.ids, r->hdr.count, r->hdr.datacenter,
					  r->hdr.worker, 0, 0);
	/* an ID not from the worker the header names makes the reply invalid */
	bad &= 1u << FW_IDCHECK_WORKER | 1u << FW_IDCHECK_NEGATIVE;
	if (fw_idcheck_full(&t->chk)) {
		t->store_full = true;
		atomic_store_explicit(&bench_stop, true, memory_order_relaxed);
	}
	t->ids += total;
	return !bad;
}

enum wait_result { WAIT_REPLY, WAIT_TIMEOUT, WAIT_ABANDONED, WAIT_ERROR };

/* Waits for the reply to @tag, dropping stale and malformed datagrams. */
static enum wait_result await_reply(struct bench_thread *t, uint64_t tag, uint64_t t0)
{
	uint64_t timeout_at = t0 + t->cfg->ca.timeout_ms * NS_PER_MS;
	uint64_t until = FW_MIN(timeout_at, t->deadline_ns);

	for (;;) {
		struct pollfd pfd = {.fd = t->fd, .events = POLLIN};
		uint64_t now = fw_mono_ns();
		ssize_t len;
		int rc;

		if (now >= until)
			return until == timeout_at ? WAIT_TIMEOUT : WAIT_ABANDONED;
		if (stopped())
			return WAIT_ABANDONED;
		rc = poll(&pfd, 1,
			  (int)FW_MIN((until - now + NS_PER_MS - 1) / NS_PER_MS, POLL_SLICE_MS));
		if (rc < 0 && errno != EINTR) {
			t->first_errno = t->first_errno ? t->first_errno : errno;
			return WAIT_ERROR;
		}
		if (rc <= 0)
			continue;
		len = recv(t->fd, t->rx, sizeof(t->rx), MSG_DONTWAIT | MSG_TRUNC);
		if (len < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			/* ECONNREFUSED: an ICMP error for an earlier datagram. */
			t->first_errno = t->first_errno ? t->first_errno : errno;
			return WAIT_ERROR;
		}
		if ((size_t)len > sizeof(t->rx)) {
			t->malformed++;
			continue;
		}
		rc = fw_wire_parse_reply(t->rx, (size_t)len, &t->reply);
		if (rc == FW_EWIRE_VERSION && t->reply.hdr.tag == tag) {
			t->reply.hdr.status = FW_WIRE_ST_BAD_VERSION;
			return WAIT_REPLY;
		}
		if (rc < 0) {
			t->malformed++;
			continue;
		}
		if (t->reply.hdr.tag != tag) {
			t->stale++;
			continue;
		}
		if ((t->reply.hdr.op & ~FW_WIRE_OP_REPLY) != t->cfg->op) {
			t->malformed++;
			continue;
		}
		return WAIT_REPLY;
	}
}

static void *bench_thread(void *arg)
{
	struct bench_thread *t = arg;
	const struct bench_cfg *cfg = t->cfg;
	uint64_t tag, next = 0;

	if (getrandom(&tag, sizeof(tag), 0) != sizeof(tag))
		tag = fw_mono_ns() ^ (uint64_t)(uintptr_t)t;
	while (t->sent < t->budget && !stopped()) {
		uint64_t t0 = fw_mono_ns(), lat;
		int len;

		if (t0 >= t->deadline_ns)
			break;
		if (t->interval_ns) {
			/* paced: a send slot every interval; one missed (a slow reply)
			 * is not made up with a burst */
			if (t0 < next) {
				/* at most a poll slice, so a stop is noticed soon */
				fw_sleep_ns(FW_MIN(FW_MIN(next, t->deadline_ns) - t0,
						   POLL_SLICE_MS * NS_PER_MS));
				continue; /* the deadline and the stop, checked again */
			}
			next = t0 + t->interval_ns;
		}
		tag++;
		len = fw_wire_write_request(t->tx, sizeof(t->tx), cfg->op, (uint16_t)cfg->count,
					    tag, !cfg->ca.trusted);
		if (len < 0 || send(t->fd, t->tx, (size_t)len, 0) != len) {
			t->errors++;
			t->first_errno =
				t->first_errno ? t->first_errno : (len < 0 ? EMSGSIZE : errno);
			fw_sleep_ns(NS_PER_MS); /* no busy loop against a dead port */
			continue;
		}
		t->sent++;
		switch (await_reply(t, tag, t0)) {
		case WAIT_TIMEOUT:
			t->timeouts++;
			continue;
		case WAIT_ABANDONED:
			t->abandoned++;
			continue;
		case WAIT_ERROR:
			t->errors++;
			fw_sleep_ns(NS_PER_MS);
			continue;
		case WAIT_REPLY:
			break;
		}
		lat = fw_mono_ns() - t0;
		fw_hist_add(&t->hist, lat);
		t->answered++;
		t->status[t->reply.hdr.status]++;
		if (t->reply.hdr.status == FW_WIRE_ST_OK && !take_ids(t, &t->reply))
			t->invalid++;
		if (t->reply.hdr.status == FW_WIRE_ST_RETRY_AFTER) {
			uint64_t wait =
				FW_MIN(t->reply.hdr.retry_after_us, FW_CLIENT_RETRY_AFTER_MAX_US) *
				1000ull;
			uint64_t now = fw_mono_ns();

			if (now < t->deadline_ns)
				fw_sleep_ns(FW_MIN(wait, t->deadline_ns - now));
		}
	}
	return NULL;
}

/* Writes @v in decimal and a newline to @f. */
static void put_u64(FILE *f, uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf);

	*--p = '\n';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), f);
}

/*
 * Merges every thread's checker into tot's, counts IDs seen more than once
 * across them all and writes them, in increasing order, to --out.
 * Returns FC_EXIT_*.
 */
static int check_unique(const struct bench_cfg *cfg, const char *cmd, struct bench_thread *th,
			struct bench_total *tot)
{
	const struct fw_idcheck *all = &tot->chk;
	FILE *f = NULL;
	int rc = FC_EXIT_OK;

	for (uint64_t k = 0; k < cfg->threads; k++) {
		if (fw_idcheck_merge(&tot->chk, &th[k].chk) < 0) {
			fc_err(cmd, "out of memory for %" PRIu64 " ID runs",
			       tot->chk.n_runs + th[k].chk.n_runs);
			return FC_EXIT_FAIL;
		}
	}
	fw_idcheck_finish(&tot->chk);
	if (cfg->out) {
		f = fopen(cfg->out, "w");
		if (!f) {
			fc_err(cmd, "--out %s: %s", cfg->out, strerror(errno));
			rc = FC_EXIT_FAIL;
		}
	}
	for (uint64_t i = 0; f && i < all->n_runs; i++) {
		uint64_t last = all->runs[i].first + all->runs[i].n;

		for (uint64_t id = all->runs[i].first; id < last; id++)
			put_u64(f, id);
	}
	if (f) {
		bool bad = fflush(f) != 0 || ferror(f);

		if (fclose(f) != 0 || bad) {
			fc_err(cmd, "--out %s: write error", cfg->out);
			rc = FC_EXIT_FAIL;
		}
	}
	return rc;
}

static void sum_threads(const struct bench_cfg *cfg, const struct bench_thread *th,
			struct bench_total *tot)
{
	for (uint64_t k = 0; k < cfg->threads; k++) {
		const struct bench_thread *t = &th[k];

		tot->sent += t->sent;
		tot->answered += t->answered;
		tot->timeouts += t->timeouts;
		tot->abandoned += t->abandoned;
		tot->errors += t->errors;
		tot->stale += t->stale;
		tot->malformed += t->malformed;
		tot->invalid += t->invalid;
		tot->ids += t->ids;
		tot->store_full |= t->store_full;
		if (!tot->first_errno)
			tot->first_errno = t->first_errno;
		for (unsigned s = 0; s < FW_WIRE_ST_COUNT; s++)
			tot->status[s] += t->status[s];
		fw_hist_merge(&tot->hist, &t->hist);
	}
}

static uint64_t duplicates(const struct bench_total *t)
{
	return t->chk.v[FW_IDCHECK_DUPLICATE];
}

static uint64_t order_violations(const struct bench_total *t)
{
	return t->chk.v[FW_IDCHECK_ORDER];
}

/* IDs kept for the uniqueness check, counted once. */
static uint64_t unique(const struct bench_total *t)
{
	return t->chk.ids_stored - duplicates(t);
}

/* Quantiles: the upper bound of the bucket (fw_hist.h), so never below the true value. */
static const double quantiles[] = {0.5, 0.9, 0.99, 0.999};
static const char *const quantile_names[] = {"p50", "p90", "p99", "p99.9"};

static void print_text(const struct bench_cfg *cfg, const struct bench_total *t)
{
	double s = t->elapsed_s > 0 ? t->elapsed_s : 1;

	printf("bench          %" PRIu64 " thread(s), %zu server(s), %s requests for %" PRIu64
	       " ID(s), %s, %.2f s\n",
	       cfg->threads, cfg->ca.n, fw_wire_op_name(cfg->op), cfg->count,
	       cfg->ca.trusted ? "unpadded" : "padded", t->elapsed_s);
	printf("requests       %" PRIu64 " sent, %" PRIu64 " answered, %.0f/s\n", t->sent,
	       t->answered, (double)t->answered / s);
	printf("ids            %" PRIu64 ", %.0f/s\n", t->ids, (double)t->ids / s);
	printf("latency (us)  ");
	for (size_t q = 0; q < FW_ARRAY_SIZE(quantiles); q++)
		printf(" %s %.1f ", quantile_names[q],
		       (double)fw_hist_quantile(&t->hist, quantiles[q]) / 1e3);
	printf(" max %.1f\n", (double)t->hist.max / 1e3);
	printf("replies       ");
	for (unsigned st = 0; st < FW_WIRE_ST_COUNT; st++) {
		if (st == FW_WIRE_ST_OK || t->status[st])
			printf(" %s %" PRIu64, fw_wire_status_name((uint8_t)st), t->status[st]);
	}
	printf("\ntimeouts       %" PRIu64 "\n", t->timeouts);
	printf("errors         %" PRIu64 "%s%s%s\n", t->errors, t->first_errno ? " (first: " : "",
	       t->first_errno ? strerror(t->first_errno) : "", t->first_errno ? ")" : "");
	if (t->abandoned || t->stale || t->malformed || t->invalid)
		printf("other          %" PRIu64 " in flight at the end, %" PRIu64
		       " stale, %" PRIu64 " malformed, %" PRIu64 " invalid\n",
		       t->abandoned, t->stale, t->malformed, t->invalid);
	printf("unique         %" PRIu64 " IDs, %" PRIu64 " duplicate(s)\n", unique(t),
	       duplicates(t));
	printf("order          %" PRIu64 " violation(s)\n", order_violations(t));
}

static void print_json(const struct bench_cfg *cfg, const struct bench_total *t)
{
	double s = t->elapsed_s > 0 ? t->elapsed_s : 1;

	printf("{\"threads\":%" PRIu64 ",\"servers\":%zu,\"op\":\"%s\",\"count\":%" PRIu64
	       ",\"padded\":%s,\"elapsed_s\":%.3f,\"sent\":%" PRIu64 ",\"answered\":%" PRIu64
	       ",\"requests_per_s\":%.1f,\"ids\":%" PRIu64 ",\"ids_per_s\":%.1f,\"latency_us\":{",
	       cfg->threads, cfg->ca.n, fw_wire_op_name(cfg->op), cfg->count,
	       cfg->ca.trusted ? "false" : "true", t->elapsed_s, t->sent, t->answered,
	       (double)t->answered / s, t->ids, (double)t->ids / s);
	for (size_t q = 0; q < FW_ARRAY_SIZE(quantiles); q++)
		printf("\"%s\":%.1f,", quantile_names[q],
		       (double)fw_hist_quantile(&t->hist, quantiles[q]) / 1e3);
	printf("\"max\":%.1f},\"status\":{", (double)t->hist.max / 1e3);
	for (unsigned st = 0; st < FW_WIRE_ST_COUNT; st++)
		printf("%s\"%s\":%" PRIu64, st ? "," : "", fw_wire_status_name((uint8_t)st),
		       t->status[st]);
	printf("},\"timeouts\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"in_flight_at_end\":%" PRIu64
	       ",\"stale\":%" PRIu64 ",\"malformed\":%" PRIu64 ",\"invalid\":%" PRIu64
	       ",\"unique\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"order_violations\":%" PRIu64
	       "}\n",
	       t->timeouts, t->errors, t->abandoned, t->stale, t->malformed, t->invalid, unique(t),
	       duplicates(t), order_violations(t));
}

static void bench_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl bench [--server HOST:PORT]... [--duration S] [--requests N]\n"
		"                      [--count N] [--range] [--concurrency K] [--out FILE]\n"
		"                      [--rate R] [--json] [--timeout MS] [--trusted]\n"
		"\n"
		"Loads responders over kernel UDP sockets: K threads, each with its own socket,\n"
		"send a request and wait for its reply, until the duration or the request\n"
		"count runs out. Prints requests/s, IDs/s, latency percentiles, replies by\n"
		"status and timeouts, and checks every ID: unique across all threads, and\n"
		"increasing per (datacenter, worker) within each thread. Exits 1 on a\n"
		"duplicate, an order violation, an invalid reply, or when nothing answered.\n"
		"\n"
		"  --duration S          stop after S seconds, 1-%d (default %d)\n"
		"  --requests N          stop after N requests in all, 1-%llu (default: no limit)\n"
		"  --count N             IDs per request: 1 (an ID request) to %d (LIST), or\n"
		"                        with --range to %d (default 1)\n"
		"  --range               RANGE requests\n"
		"  --concurrency K       threads, 1-%d (default 1); thread k uses server k mod\n"
		"                        the number of servers\n"
		"  --rate R              at most R requests a second in all (each thread R/K,\n"
		"                        evenly spaced), 1-%llu (default: each thread sends\n"
		"                        its next request as soon as the last is answered)\n"
		"  --out FILE            write every ID received, decimal, one per line, in\n"
		"                        increasing order (duplicates included)\n"
		"  --json                the results as one JSON object\n",
		BENCH_DURATION_MAX, BENCH_DURATION_DEF, BENCH_REQUESTS_MAX, FW_WIRE_LIST_MAX,
		FW_WIRE_RANGE_IDS_MAX, BENCH_THREADS_MAX, BENCH_RATE_MAX);
	client_args_help(f, CLIENT_ARGS_BENCH);
}

/* Returns FC_EXIT_OK to go on, -1 after --help, or FC_EXIT_USAGE. */
static int bench_parse(struct bench_cfg *cfg, int argc, char **argv)
{
	client_args_init(&cfg->ca);
	cfg->duration_s = BENCH_DURATION_DEF;
	cfg->count = 1;
	cfg->threads = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = client_args_parse(&cfg->ca, argc, argv, &i);

		if (r == 0)
			r = fc_opt_u64(argc, argv, &i, "--duration", 1, BENCH_DURATION_MAX,
				       &cfg->duration_s);
		if (r == 0)
			r = fc_opt_u64(argc, argv, &i, "--requests", 1, BENCH_REQUESTS_MAX,
				       &cfg->requests);
		if (r == 0)
			r = fc_opt_u64(argc, argv, &i, "--count", 1, FW_WIRE_RANGE_IDS_MAX,
				       &cfg->count);
		if (r == 0)
			r = fc_opt_u64(argc, argv, &i, "--concurrency", 1, BENCH_THREADS_MAX,
				       &cfg->threads);
		if (r == 0)
			r = fc_opt_u64(argc, argv, &i, "--rate", 1, BENCH_RATE_MAX, &cfg->rate);
		if (r == 0)
			r = fc_opt_value(argc, argv, &i, "--out", &cfg->out);
		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (fc_is_help(a)) {
			bench_help(stdout);
			return -1;
		} else if (!strcmp(a, "--range")) {
			cfg->range = true;
		} else if (!strcmp(a, "--json")) {
			cfg->json = true;
		} else {
			return fc_unknown_arg(argv[0], a);
		}
	}
	if (!cfg->range && cfg->count > FW_WIRE_LIST_MAX) {
		fc_err(argv[0],
		       "--count %" PRIu64 ": out of range (allowed 1-%d; up to %d with --range)",
		       cfg->count, FW_WIRE_LIST_MAX, FW_WIRE_RANGE_IDS_MAX);
		return FC_EXIT_USAGE;
	}
	if (cfg->out && *cfg->out == '\0') {
		fc_err(argv[0], "--out: empty file name");
		return FC_EXIT_USAGE;
	}
	client_args_finish(&cfg->ca);
	cfg->op = cfg->range ? FW_WIRE_OP_RANGE : cfg->count == 1 ? FW_WIRE_OP_ID : FW_WIRE_OP_LIST;
	return FC_EXIT_OK;
}

/* Resolves the servers and learns the layout from the first one's INFO. */
static int bench_prepare(struct bench_cfg *cfg, const char *cmd)
{
	struct fw_client *c;
	struct fw_wire_info info;
	int rc;

	for (size_t k = 0; k < cfg->ca.n; k++) {
		if (client_args_resolve(cfg->ca.servers[k], &cfg->addr[k], &cfg->addrlen[k]) < 0) {
			fc_err(cmd, "--server %s: %s (expected HOST:PORT, HOST, [IPV6]:PORT)",
			       cfg->ca.servers[k], fw_strerror(FW_ERESOLVE));
			return FC_EXIT_USAGE;
		}
		/* a LIST request and its reply must fit one IPv6 datagram: 1452 bytes */
		if (cfg->addr[k].ss_family == AF_INET6 && cfg->op == FW_WIRE_OP_LIST &&
		    cfg->count > 178) {
			fc_err(cmd, "--count %" PRIu64 ": over IPv6 (--server %s) LIST takes 1-178",
			       cfg->count, cfg->ca.servers[k]);
			return FC_EXIT_USAGE;
		}
	}
	/*
	 * The INFO that learns the layout is set-up, not load: --timeout is the
	 * wait for each request of the load (200 ms in the soak and fault
	 * tests), and a fresh client's first reply on a busy machine can take
	 * longer. It waits at least BENCH_PROBE_MS, resent as any request is.
	 */
	struct client_args probe = cfg->ca;

	probe.timeout_ms = FW_MAX(probe.timeout_ms, (uint64_t)BENCH_PROBE_MS);
	rc = client_args_open(&probe, 0, 1, cmd, &c);
	if (rc != FC_EXIT_OK)
		return rc;
	rc = fw_client_info(c, &info, NULL);
	if (rc < 0) {
		struct client_args first = probe;

		first.n = 1;
		client_args_report(&first, cmd, c, rc);
		fw_client_close(c);
		return FC_EXIT_FAIL;
	}
	fw_client_close(c);
	rc = client_args_layout(&info, &cfg->layout);
	if (rc < 0) {
		fc_err(cmd, "--server %s reports an unusable layout: %s", cfg->ca.servers[0],
		       fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	return FC_EXIT_OK;
}

/* Starts the threads, waits for them and sums their counters into *tot. */
static int bench_run(const struct bench_cfg *cfg, const char *cmd, struct bench_thread *th,
		     struct bench_total *tot)
{
	uint64_t start = fw_mono_ns(), started = 0;
	/* order and uniqueness, no time bound: responders under test may run a skewed clock */
	struct fw_idcheck_conf chk = {.layout = cfg->layout, .time_bound_ms = FW_IDCHECK_NO_TIME};
	int rc = FC_EXIT_OK;

	for (uint64_t k = 0; k < cfg->threads; k++) {
		struct bench_thread *t = &th[k];
		int e;

		t->cfg = cfg;
		t->server = k % cfg->ca.n;
		t->budget = cfg->requests ? cfg->requests / cfg->threads +
						    (k < cfg->requests % cfg->threads)
					  : UINT64_MAX;
		t->deadline_ns = start + cfg->duration_s * 1000 * NS_PER_MS;
		t->interval_ns = cfg->rate ? cfg->threads * 1000 * NS_PER_MS / cfg->rate : 0;
		fw_hist_init(&t->hist);
		chk.max_runs = BENCH_STORE_MAX / cfg->threads;
		if (fw_idcheck_init(&t->chk, &chk) < 0) {
			fc_err(cmd, "--concurrency %" PRIu64 ": out of memory", cfg->threads);
			rc = FC_EXIT_FAIL;
			break;
		}
		t->fd = socket(cfg->addr[t->server].ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (t->fd < 0 || connect(t->fd, (const struct sockaddr *)&cfg->addr[t->server],
					 cfg->addrlen[t->server]) < 0) {
			fc_err(cmd, "--server %s: socket: %s", cfg->ca.servers[t->server],
			       strerror(errno));
			rc = FC_EXIT_FAIL;
			break;
		}
		e = pthread_create(&t->tid, NULL, bench_thread, t);
		if (e != 0) {
			fc_err(cmd, "--concurrency %" PRIu64 ": thread %" PRIu64 ": %s",
			       cfg->threads, k, strerror(e));
			rc = FC_EXIT_FAIL;
			break;
		}
		started++;
	}
	if (rc != FC_EXIT_OK)
		atomic_store_explicit(&bench_stop, true, memory_order_relaxed);
	for (uint64_t k = 0; k < started; k++)
		pthread_join(th[k].tid, NULL);
	tot->elapsed_s = (double)(fw_mono_ns() - start) / 1e9;
	sum_threads(cfg, th, tot);
	return rc;
}

int cmd_bench(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct bench_cfg cfg = {0};
	struct bench_thread *th;
	struct bench_total *tot;
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
	int rc = bench_parse(&cfg, argc, argv);

	if (rc != FC_EXIT_OK)
		return rc < 0 ? FC_EXIT_OK : rc;
	rc = bench_prepare(&cfg, cmd);
	if (rc != FC_EXIT_OK)
		return rc;
	th = aligned_alloc(FW_CACHE_LINE, cfg.threads * sizeof(*th));
	tot = calloc(1, sizeof(*tot));
	if (tot) {
		struct fw_idcheck_conf all = {.layout = cfg.layout,
					      .time_bound_ms = FW_IDCHECK_NO_TIME,
					      .max_runs = BENCH_STORE_MAX};

		fw_hist_init(&tot->hist);
		if (fw_idcheck_init(&tot->chk, &all) < 0) {
			free(tot);
			tot = NULL;
		}
	}
	if (!th || !tot) {
		free(th);
		free(tot);
		fc_err(cmd, "out of memory");
		return FC_EXIT_FAIL;
	}
	memset(th, 0, cfg.threads * sizeof(*th));
	for (uint64_t k = 0; k < cfg.threads; k++)
		th[k].fd = -1;

	/* Ctrl-C ends the run early and still reports it. */
	atomic_store(&bench_stop, false);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	rc = bench_run(&cfg, cmd, th, tot);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);

	if (rc == FC_EXIT_OK)
		rc = check_unique(&cfg, cmd, th, tot);
	if (rc == FC_EXIT_OK) {
		if (cfg.json)
			print_json(&cfg, tot);
		else
			print_text(&cfg, tot);
		if (tot->store_full)
			fc_err(cmd, "stopped early: %u ID runs kept, the most the check holds",
			       BENCH_STORE_MAX);
		if (duplicates(tot) || order_violations(tot) || tot->invalid) {
			fc_err(cmd,
			       "%" PRIu64 " duplicate ID(s), %" PRIu64
			       " order violation(s), %" PRIu64 " invalid repl%s",
			       duplicates(tot), order_violations(tot), tot->invalid,
			       tot->invalid == 1 ? "y" : "ies");
			rc = FC_EXIT_FAIL;
		} else if (tot->answered == 0) {
			fc_err(cmd, "no replies to %" PRIu64 " request(s)", tot->sent);
			rc = FC_EXIT_FAIL;
		}
	}
	for (uint64_t k = 0; k < cfg.threads; k++) {
		if (th[k].fd >= 0)
			close(th[k].fd);
		fw_idcheck_free(&th[k].chk);
	}
	fw_idcheck_free(&tot->chk);
	free(th);
	free(tot);
	return rc;
}

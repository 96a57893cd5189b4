/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flakesock.h"
#include "fw_responder_conf.h"
#include "fw_err.h"
#include "fw_metrics.h"
#include "fw_time.h"
#include "fw_version.h"
#include "fw_time.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *f)
{
	static char help[16384];
	fw_conf_help(help, sizeof(help), FW_CONF_F_NO_PORTS);
	fprintf(f,
		"usage: flakesock [-c FILE] [--set SECTION.KEY=VALUE]... [--listen ADDR]\n"
		"                 [--threads N]\n"
		"Kernel-socket ID responder: one thread per worker ID, SO_REUSEPORT,\n"
		"recvmmsg/sendmmsg. Reads the same INI file as flakewire ([port*] ignored).\n\n"
		"  -c, --config FILE   INI file (default: none, built-in defaults)\n"
		"  -s, --set K=V       override one key, e.g. --set id.worker_base=3\n"
		"  -l, --listen ADDR   IPv4 or IPv6 address to bind (default 127.0.0.1);\n"
		"                      :: (or [::]) listens on every address of both families\n"
		"  -t, --threads N     worker threads (default: entries in [id] workers, or 1)\n"
		"      --check-config  check the configuration (and --listen, --threads),\n"
		"                      print \"configuration OK\" and exit (0), or the error (2)\n"
		"      --print-config  print the configuration in effect (defaults, -c FILE and\n"
		"                      --set applied) as an INI file, and exit\n"
		"      --version       print the version and exit\n"
		"  -h, --help          this text\n\nSettings:\n%s",
		help);
}

static int parse_listen(struct fsock_ctx *ctx, const char *addr)
{
	uint16_t port = (uint16_t)ctx->conf.net.udp_port;
	memset(&ctx->listen, 0, sizeof(ctx->listen));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ctx->listen;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ctx->listen;
	if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		ctx->listen_len = sizeof(*v4);
		return 0;
	}
	char a6[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(addr);
	if (n >= 2 && n < sizeof(a6) && addr[0] == '[' && addr[n - 1] == ']') {
		memcpy(a6, addr + 1, n - 2);
		a6[n - 2] = '\0';
		addr = a6;
	}
	if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		ctx->listen_len = sizeof(*v6);
		return 0;
	}
	return -1;
}

static int start_workers(struct fsock_ctx *ctx)
{
	struct fw_gen_config gc;
	struct fw_serve_config sc;
	fw_serve_config_default(&sc);
	sc.list_max = (uint16_t)ctx->conf.net.list_max;
	sc.ranges_max = (uint16_t)ctx->conf.net.ranges_max;
	sc.mark_retry_us = ctx->conf.id.retry_us;
	sc.range_ids_max = ctx->conf.net.max_ids_per_request;

	for (uint32_t i = 0; i < ctx->n_workers; i++) {
		struct fsock_worker *w = &ctx->workers[i];
		fw_gen_config_default(&gc);
		gc.datacenter = ctx->conf.id.datacenter;
		gc.worker = (uint32_t)fw_responder_worker(ctx->core, i);
		gc.max_borrow_ms = ctx->conf.id.max_borrow_ms;
		gc.max_backstep_ms = ctx->conf.id.max_backstep_ms;
		int rc = fw_serve_init(&w->serve, &ctx->layout, &gc, &sc);
		if (rc != 0) {
			fprintf(stderr, "flakesock: worker %u: %s\n", gc.worker, fw_strerror(rc));
			return -1;
		}
		w->ctx = ctx;
		w->index = i;
		fw_keeper_worker_init(&w->kw, &fw_keeper_slots(ctx->keeper, NULL)[i],
				      &w->serve.gen);
		rc = fsock_worker_open(ctx, w);
		if (rc != 0) {
			fprintf(stderr, "flakesock: cannot bind UDP port %u: %s\n",
				ctx->conf.net.udp_port, strerror(-rc));
			return -1;
		}
		if (pthread_create(&w->thread, NULL, fsock_worker_run, w) != 0) {
			fprintf(stderr, "flakesock: cannot start worker thread\n");
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"set", required_argument, NULL, 's'},
		{"listen", required_argument, NULL, 'l'},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"check-config", no_argument, NULL, 'C'},
		{"print-config", no_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	static struct fsock_ctx ctx;
	const char *config = NULL, *listen = "127.0.0.1";
	const char *sets[64];
	int n_sets = 0, threads = 0, c;
	bool check_only = false, print_config = false;
	char err[512];

	while ((c = getopt_long(argc, argv, "c:s:l:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 's':
			if (n_sets == (int)FW_ARRAY_SIZE(sets)) {
				fprintf(stderr, "flakesock: too many --set\n");
				return 2;
			}
			sets[n_sets++] = optarg;
			break;
		case 'l':
			listen = optarg;
			break;
		case 't':
			threads = atoi(optarg);
			if (threads < 1 || threads > FSOCK_MAX_WORKERS) {
				fprintf(stderr, "flakesock: --threads %s: out of range (1-%d)\n",
					optarg, FSOCK_MAX_WORKERS);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("flakesock %s\n", FW_VERSION);
			return 0;
		case 'C':
			check_only = true;
			break;
		case 'P':
			print_config = true;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}

	fw_conf_init(&ctx.conf);
	if (config != NULL &&
	    fw_conf_load(&ctx.conf, config, FW_CONF_F_NO_PORTS, err, sizeof(err))) {
		fprintf(stderr, "flakesock: %s\n", err);
		return 2;
	}
	for (int i = 0; i < n_sets; i++)
		if (fw_conf_set(&ctx.conf, sets[i], FW_CONF_F_NO_PORTS, err, sizeof(err))) {
			fprintf(stderr, "flakesock: %s\n", err);
			return 2;
		}
	if (fw_conf_check(&ctx.conf, FW_CONF_F_NO_PORTS, err, sizeof(err))) {
		fprintf(stderr, "flakesock: %s\n", err);
		return 2;
	}
	if (print_config)
		return fw_conf_print(stdout, &ctx.conf, FW_CONF_F_NO_PORTS) ? 1 : 0;
	int rc = fw_layout_init(&ctx.layout, ctx.conf.id.epoch_ms, ctx.conf.id.datacenter_bits,
				ctx.conf.id.worker_bits, ctx.conf.id.sequence_bits, fw_wall_ms());
	if (rc != 0) {
		fprintf(stderr, "flakesock: config: [id] layout: %s\n", fw_strerror(rc));
		return 2;
	}
	ctx.n_workers =
		threads ? (uint32_t)threads : (ctx.conf.id.workers.n ? ctx.conf.id.workers.n : 1);
	if (fw_conf_worker(&ctx.conf, ctx.n_workers - 1) < 0) {
		fprintf(stderr, "flakesock: --threads %u but [id] workers lists only %u IDs\n",
			ctx.n_workers, ctx.conf.id.workers.n);
		return 2;
	}
	if (parse_listen(&ctx, listen) != 0) {
		fprintf(stderr, "flakesock: --listen %s: not an IPv4 or IPv6 address\n", listen);
		return 2;
	}

	if (fsock_policy_init(&ctx) != 0)
		return 2;
	struct sockaddr_storage mss;
	size_t msl;
	if (ctx.conf.metrics.listen[0] &&
	    fw_metrics_parse_listen(ctx.conf.metrics.listen, &mss, sizeof(mss), &msl)) {
		fprintf(stderr,
			"flakesock: config: [metrics] listen = %s: not ADDR:PORT (127.0.0.1:9842, "
			"[::1]:9842)\n",
			ctx.conf.metrics.listen);
		return 2;
	}
	if (check_only) {
		printf("flakesock: configuration OK\n");
		return 0;
	}
	ctx.stop = &stop_flag;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	ctx.workers = aligned_alloc(FW_CACHE_LINE, sizeof(*ctx.workers) * ctx.n_workers);
	if (ctx.workers == NULL)
		return 1;
	memset(ctx.workers, 0, sizeof(*ctx.workers) * ctx.n_workers);
	char lerr[512];
	if (fw_responder_state_lock(&ctx.conf, ctx.n_workers, &ctx.lock, lerr, sizeof(lerr)) != 0) {
		fprintf(stderr, "flakesock: %s\nflakesock: refusing to start\n", lerr);
		return 1;
	}
	if (fsock_responder_create(&ctx) != 0)
		return 1;
	if (fw_responder_metrics_start(ctx.core) != 0) {
		fw_responder_free(ctx.core);
		return 2;
	}
	if (fw_responder_keeper_start(ctx.core) != 0) {
		fw_responder_free(ctx.core);
		return 1;
	}
	ctx.keeper = fw_responder_keeper(ctx.core);
	if (start_workers(&ctx) != 0) {
		stop_flag = 1;
		fw_responder_metrics_stop(ctx.core);
		for (uint32_t i = 0; i < ctx.n_workers; i++)
			if (ctx.workers[i].thread)
				pthread_join(ctx.workers[i].thread, NULL);
		fw_responder_keeper_stop(ctx.core);
		fw_responder_free(ctx.core);
		return 1;
	}
	atomic_store_explicit(&ctx.running, true, memory_order_release); /* for /metrics */
	char ids[256];
	size_t il = 0;
	ids[0] = '\0';
	for (uint32_t i = 0; i < ctx.n_workers && il < sizeof(ids); i++) {
		il += (size_t)snprintf(ids + il, sizeof(ids) - il, "%s%u", i ? "," : "",
				       (uint32_t)fw_responder_worker(ctx.core, i));
		if (il >= sizeof(ids) - 8 && i + 1 < ctx.n_workers) {
			snprintf(ids + il, sizeof(ids) - il, ",...");
			break;
		}
	}
	fprintf(stderr,
		"flakesock: listening on %s port %u, %u worker(s), worker ID(s) %s%s, layout "
		"%u/%u/%u/%u epoch %llu, mark file %s\n",
		listen, ctx.conf.net.udp_port, ctx.n_workers, ids,
		fw_responder_has_fleet(ctx.core)
			? " (fleet; a slot without a lease shows 0 and answers NO_LEASE)"
			: "",
		ctx.layout.time_bits, ctx.layout.dc_bits, ctx.layout.worker_bits,
		ctx.layout.seq_bits, (unsigned long long)ctx.layout.epoch_ms, ctx.conf.state.file);

	fw_responder_run(ctx.core);
	fw_responder_metrics_stop(ctx.core);
	for (uint32_t i = 0; i < ctx.n_workers; i++)
		pthread_join(ctx.workers[i].thread, NULL);
	/* the final mark first, while the leases are still held (as flakewire); then the fleet */
	rc = fw_responder_keeper_stop(ctx.core);
	if (rc == 0) /* the final mark persisted: the worker IDs go back */
		fw_responder_fleet_release(ctx.core);
	fw_responder_free(ctx.core);  /* the fleet stops */
	fw_state_lock_free(ctx.lock); /* after the final mark */
	for (uint32_t i = 0; i < ctx.n_workers; i++)
		close(ctx.workers[i].fd);
	free(ctx.workers);
	return rc == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* flakeload: parses options and wires the parts together. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "fl.h"

static volatile bool force_quit;

static void on_signal(int sig)
{
	(void)sig;
	force_quit = true;
}

static void stamp(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

/* Everything after the EAL is up. Returns the exit status. */
static int run(struct fl_ctx *c)
{
	if (fl_port_open(c) || fl_loop_init(c))
		return 2;
	if (!c->o.have_dst_mac && fl_arp_resolve(c))
		return 2;
	if (fl_probe(c))
		return 2;
	struct fw_idcheck_conf vc = {.layout = c->o.layout,
				     .time_bound_ms = c->o.time_bound_ms,
				     .max_runs = c->o.max_intervals,
				     .prealloc = true};
	if (fw_idcheck_init(&c->ver, &vc)) {
		fprintf(stderr,
			"flakeload: cannot allocate %lu intervals (lower --max-intervals)\n",
			(unsigned long)c->o.max_intervals);
		return 2;
	}
	if (!c->o.quiet)
		printf("flakeload: %s, layout %u/%u/%u/%u epoch %lu; sending for %.1f s%s\n",
		       c->o.expect_echo ? "peer echoes" : "responder answers",
		       c->o.layout.time_bits, c->o.layout.dc_bits, c->o.layout.worker_bits,
		       c->o.layout.seq_bits, (unsigned long)c->o.layout.epoch_ms, c->o.duration_s,
		       c->have_layout ? " (layout from INFO)" : "");
	stamp(c->started_at, sizeof(c->started_at));
	fl_run(c);
	fw_idcheck_finish(&c->ver);
	fl_report_print(c);
	if (c->o.json) {
		int rc = fl_report_json(c, c->o.json);
		if (rc)
			fprintf(stderr, "flakeload: cannot write %s: %s\n", c->o.json,
				strerror(-rc));
	}
	if (c->o.linger_s > 0) {
		/* the summary is out; the peer is stopped while our port is still up */
		uint64_t end = rte_get_tsc_cycles() + (uint64_t)(c->o.linger_s * (double)c->hz);
		while (!*c->quit && rte_get_tsc_cycles() < end)
			rte_delay_us_sleep(10000);
	}
	if (fl_violations(c))
		return 1;
	return c->st.replies ? 0 : 3;
}

int main(int argc, char **argv)
{
	struct fl_ctx *c = calloc(1, sizeof(*c));
	int eal_argc = argc, first = argc;

	if (!c)
		return 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			eal_argc = i;
			first = i + 1;
			break;
		}
	}
	/* "flakeload --help" needs no EAL arguments */
	if (first == argc && argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		first = 1;
	char **v = calloc((size_t)(argc - first) + 2, sizeof(*v));
	if (!v)
		return 2;
	v[0] = argv[0];
	for (int i = first; i < argc; i++)
		v[i - first + 1] = argv[i];
	int rc = fl_options_parse(argc - first + 1, v, &c->o);
	free(v);
	if (rc)
		return rc > 0 ? 0 : 2;

	optind = 1; /* getopt again in EAL */
	if (rte_eal_init(eal_argc, argv) < 0) {
		fprintf(stderr, "flakeload: EAL initialisation failed: %s\n",
			rte_strerror(rte_errno));
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	c->quit = &force_quit;
	c->hz = rte_get_tsc_hz();

	rc = run(c);

	fl_port_close(c);
	fl_loop_free(c);
	fw_idcheck_free(&c->ver);
	/*
	 * No rte_eal_cleanup(): with DPDK 22.11's net_memif as the server, closing
	 * the port leaves the listener socket's interrupt callback registered
	 * (its handle in DPDK's heap), and rte_eal_cleanup() unmaps the heap while
	 * the EAL interrupt thread still runs: when that thread rebuilds its epoll
	 * set at that moment it reads the unmapped handle and the process dies
	 * with SIGSEGV after the run (seen about 1 exit in 20 under load; core:
	 * rte_intr_fd_get <- eal_intr_thread_main, main thread in rte_mem_unmap).
	 * With --no-shconf nothing outlives the process, so exiting is the cleanup.
	 */
	free(c);
	return rc;
}

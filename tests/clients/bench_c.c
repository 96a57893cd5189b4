/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IDs/s through fw_client_next() from THREADS threads, the C row of
 * scripts/bench/clients.sh (same options as the language benches), after a
 * warm-up of 0.3 s with the same threads.
 * usage: bench_c SERVER THREADS SECONDS [tuned|defaults|baseline]   (prints "ids_per_s N")
 *   tuned (the default): trusted, prefetch 4096, low water 1024;
 *   defaults: fw_client_opts_init()'s (padded, prefetch 1024, low water 256);
 *   baseline: no client, an in-process atomic counter (atomic_fetch_add):
 *   the ceiling of any client-side hand-out.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_client.h"
#include "fw_err.h"

static struct fw_client *client;
static double stop_at;
static atomic_ullong total;
static bool baseline;
static atomic_ullong counter;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
	unsigned long long n = 0;
	uint64_t id;

	(void)arg;
	while (now_s() < stop_at) {
		for (int i = 0; i < 256; i++) {
			int rc = 0;

			if (baseline)
				id = atomic_fetch_add(&counter, 1);
			else
				rc = fw_client_next(client, &id);
			if (rc < 0) {
				fprintf(stderr, "bench_c: %s\n", fw_strerror(rc));
				exit(1);
			}
		}
		n += 256;
	}
	atomic_fetch_add(&total, n);
	return NULL;
}

/* One timed run of @secs with @threads threads: IDs/s. */
static double measure(int threads, double secs)
{
	pthread_t th[64];
	double t0 = now_s();

	atomic_store(&total, 0);
	stop_at = t0 + secs;
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, run, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	return (double)atomic_load(&total) / (now_s() - t0);
}

int main(int argc, char **argv)
{
	struct fw_client_opts o;
	const char *servers[1];
	uint64_t id;
	int threads, rc;

	if (argc < 4 || argc > 5 || (threads = atoi(argv[2])) < 1 || threads > 64 ||
	    (argc == 5 && strcmp(argv[4], "tuned") && strcmp(argv[4], "defaults") &&
	     strcmp(argv[4], "baseline"))) {
		fprintf(stderr,
			"usage: bench_c SERVER THREADS(1..64) SECONDS [tuned|defaults|baseline]\n");
		return 2;
	}
	servers[0] = argv[1];
	baseline = argc == 5 && !strcmp(argv[4], "baseline");
	fw_client_opts_init(&o);
	if (argc == 4 || !strcmp(argv[4], "tuned")) {
		o.trusted = true;
		o.prefetch = 4096;
		o.low_water = 1024;
	}
	rc = fw_client_open(servers, 1, &o, &client);
	if (rc == 0)
		rc = fw_client_next(client, &id);
	if (rc < 0) {
		fprintf(stderr, "bench_c: %s\n", fw_strerror(rc));
		return 1;
	}
	measure(threads, 0.3); /* warm-up: the threads' shares, refills grown */
	printf("ids_per_s %.0f\n", measure(threads, atof(argv[3])));
	fw_client_close(client);
	return 0;
}

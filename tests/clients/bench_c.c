/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IDs/s through fw_client_next() from THREADS threads, the C row of
 * scripts/bench-clients.sh (same options as the language benches).
 * usage: bench_c SERVER THREADS SECONDS [tuned|defaults]   (prints "ids_per_s N")
 *   tuned (the default): trusted, prefetch 4096, low water 1024;
 *   defaults: fw_client_opts_init()'s (padded, prefetch 1024, low water 256).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_client.h"
#include "fw_err.h"

static struct fw_client *client;
static double stop_at;
static atomic_ullong total;

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
			int rc = fw_client_next(client, &id);

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

int main(int argc, char **argv)
{
	struct fw_client_opts o;
	pthread_t th[64];
	const char *servers[1];
	uint64_t id;
	double t0;
	int threads, rc;

	if (argc < 4 || argc > 5 || (threads = atoi(argv[2])) < 1 || threads > 64 ||
	    (argc == 5 && strcmp(argv[4], "tuned") && strcmp(argv[4], "defaults"))) {
		fprintf(stderr, "usage: bench_c SERVER THREADS(1..64) SECONDS [tuned|defaults]\n");
		return 2;
	}
	servers[0] = argv[1];
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
	t0 = now_s();
	stop_at = t0 + atof(argv[3]);
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, run, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("ids_per_s %.0f\n", (double)atomic_load(&total) / (now_s() - t0));
	fw_client_close(client);
	return 0;
}

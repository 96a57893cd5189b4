/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C caller of scripts/drill.sh (issue 49): one client (fw_client_open,
 * lib/client's public API) shared by two threads, one calling
 * fw_client_next() and one fw_client_get() (one round trip), each at a fixed
 * rate for a bounded time, one line per call on stdout:
 *   WALL_S MODE LATENCY_US ok|err [MESSAGE]
 * WALL_S is the call's start (Unix seconds, CLOCK_REALTIME, 6 decimals);
 * the drill places its events on the same clock. A call late on its slot
 * does not make up the missed ones (no burst after a stall).
 *
 * usage: drill_c SERVERS RATE SECONDS TIMEOUT_MS
 *   SERVERS     comma-separated, tried in that order
 *   RATE        calls a second per mode (1..10000)
 *   SECONDS     how long each mode calls (1..600)
 *   TIMEOUT_MS  the client's timeout option; 0 keeps the client's default
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_client.h"
#include "fw_err.h"

#define DRILL_MAX_SERVERS 8

struct drill {
	struct fw_client *c;
	pthread_mutex_t out_lock;
	double rate;
	double secs;
};

struct drill_mode {
	struct drill *d;
	const char *name;
	int (*call)(struct fw_client *c, uint64_t *id);
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double mono)
{
	double d = mono - mono_s();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

static void *run_mode(void *arg)
{
	struct drill_mode *m = arg;
	struct drill *d = m->d;
	double period = 1.0 / d->rate, start = mono_s(), slot = start;
	long max_calls = (long)(d->rate * d->secs) + 1;

	for (long i = 0; i < max_calls && mono_s() < start + d->secs; i++) {
		double w, t0, lat;
		uint64_t id;
		int rc;

		sleep_until(slot);
		w = wall_s();
		t0 = mono_s();
		rc = m->call(d->c, &id);
		lat = (mono_s() - t0) * 1e6;
		pthread_mutex_lock(&d->out_lock);
		if (rc == 0)
			printf("%.6f %s %.0f ok\n", w, m->name, lat);
		else
			printf("%.6f %s %.0f err %s\n", w, m->name, lat, fw_strerror(rc));
		pthread_mutex_unlock(&d->out_lock);
		slot += period;
		if (slot < mono_s())
			slot = mono_s(); /* late: no burst to make up missed slots */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *servers[DRILL_MAX_SERVERS];
	struct fw_client_opts o;
	struct drill d = {.out_lock = PTHREAD_MUTEX_INITIALIZER};
	struct drill_mode modes[2] = {
		{&d, "next", fw_client_next},
		{&d, "get", fw_client_get},
	};
	pthread_t th[2];
	size_t n = 0;
	char *list, *tok, *save = NULL;
	long timeout_ms;
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: drill_c SERVERS RATE SECONDS TIMEOUT_MS\n");
		return 2;
	}
	list = strdup(argv[1]);
	for (tok = strtok_r(list, ",", &save); tok && n < DRILL_MAX_SERVERS;
	     tok = strtok_r(NULL, ",", &save))
		servers[n++] = tok;
	d.rate = atof(argv[2]);
	d.secs = atof(argv[3]);
	timeout_ms = atol(argv[4]);
	if (n == 0 || d.rate < 1 || d.rate > 10000 || d.secs < 1 || d.secs > 600 ||
	    timeout_ms < 0) {
		fprintf(stderr, "drill_c: bad arguments\n");
		return 2;
	}
	fw_client_opts_init(&o);
	if (timeout_ms > 0)
		o.timeout_ms = (uint32_t)timeout_ms;
	rc = fw_client_open(servers, n, &o, &d.c);
	if (rc < 0) {
		fprintf(stderr, "drill_c: fw_client_open: %s\n", fw_strerror(rc));
		return 1;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, run_mode, &modes[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	fflush(stdout);
	fw_client_shutdown(d.c);
	fw_client_close(d.c);
	free(list);
	return 0;
}

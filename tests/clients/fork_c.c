/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C client (libflakewire-client.so) in a process that forks, against a
 * live flakesock (issue 48): run by live.sh loop, which exports FW_TRUSTED.
 *
 * 1. The probe under load: a first fw_client_next(), then two
 *    threads keep taking IDs while the parent forks 3 children; each child
 *    and the parent take 300 IDs.
 * 2. Forks while refills run: a thread takes IDs from a client with a
 *    16-ID prefetch in LIST requests (at most 181 IDs a round trip, so its
 *    refiller is nearly always in a round trip or between two, holding the
 *    client's lock, and the thread cannot exhaust flakesock's 4,096 IDs a
 *    millisecond, which RANGE refills grown to 2^14 IDs did: RETRY_AFTER),
 *    and the parent forks 40 children one after another, each taking 300
 *    IDs.
 * Every child must hand out all its IDs within KID_WAIT_MS (else it is
 * killed and the run fails) and no ID may appear twice among every ID of
 * every process. Prints "ok ..." or "FAIL ..." per check; exits 1 on a
 * failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fw_client.h"
#include "fw_err.h"

#define PER_PROC    300
#define KID_WAIT_MS 10000
#define LOOP_KIDS   40
#define LOAD_MAX    (1u << 20)

static int fails;

static void check(bool ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	fflush(stdout);
	fails += !ok;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* IDs of every process, checked for duplicates at the end. */
static uint64_t *all;
static size_t nall, capall;

static void keep(const uint64_t *ids, size_t n)
{
	if (nall + n > capall) {
		capall = (nall + n) * 2;
		all = realloc(all, capall * sizeof(*all));
		if (!all) {
			perror("realloc");
			exit(2);
		}
	}
	memcpy(all + nall, ids, n * sizeof(*ids));
	nall += n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* IDs that appear more than once in all[0..nall). */
static size_t duplicates(void)
{
	size_t d = 0;

	qsort(all, nall, sizeof(*all), cmp_u64);
	for (size_t i = 1; i < nall; i++)
		d += all[i] == all[i - 1];
	return d;
}

struct kid {
	pid_t pid;
	int fd;
};

/* A child: PER_PROC IDs with fw_client_next(), written to @fd, then _exit. */
static struct kid kid_start(struct fw_client *c)
{
	struct kid k = {-1, -1};
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return k;
	k.pid = fork();
	if (k.pid == 0) {
		uint64_t ids[PER_PROC];
		size_t off = 0;

		close(p[0]);
		for (int i = 0; i < PER_PROC; i++) {
			int rc = fw_client_next(c, &ids[i]);

			if (rc != 0) {
				fprintf(stderr, "child %d: ID %d: %s\n", (int)getpid(), i,
					fw_strerror(rc));
				_exit(2);
			}
		}
		while (off < sizeof(ids)) {
			ssize_t n = write(p[1], (uint8_t *)ids + off, sizeof(ids) - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				_exit(3);
			off += (size_t)n;
		}
		_exit(0);
	}
	close(p[1]);
	k.fd = p[0];
	return k;
}

/* Reads a child's IDs and reaps it within KID_WAIT_MS (killed past that).
 * Returns true when it exited 0 with all PER_PROC IDs (kept). */
static bool kid_collect(struct kid *k)
{
	uint64_t ids[PER_PROC], deadline = mono_ms() + KID_WAIT_MS;
	size_t got = 0;
	int status = 0;

	if (k->pid < 0)
		return false;
	while (got < sizeof(ids) && mono_ms() < deadline) {
		struct pollfd p = {.fd = k->fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 10) <= 0)
			continue;
		n = read(k->fd, (uint8_t *)ids + got, sizeof(ids) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(k->fd);
	while (waitpid(k->pid, &status, WNOHANG) == 0) {
		if (mono_ms() >= deadline) {
			fprintf(stderr, "child %d hung: killed after %u ms\n", (int)k->pid,
				KID_WAIT_MS);
			kill(k->pid, SIGKILL);
			waitpid(k->pid, &status, 0);
			return false;
		}
		poll(NULL, 0, 5);
	}
	if (got == sizeof(ids))
		keep(ids, PER_PROC);
	return got == sizeof(ids) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct load {
	struct fw_client *c;
	atomic_bool stop;
	int rc;
	size_t n;
	uint64_t *ids;
};

static void *load_run(void *arg)
{
	struct load *l = arg;
	uint64_t id;

	/* Kept: the first LOAD_MAX IDs. */
	for (uint64_t i = 1; !atomic_load(&l->stop) && l->rc == 0; i++) {
		l->rc = fw_client_next(l->c, &id);
		if (l->rc == 0 && l->n < LOAD_MAX)
			l->ids[l->n++] = id;
		if (i % 1000 == 0)
			poll(NULL, 0, 1); /* at most ~1 M IDs/s: below flakesock's 4 M */
	}
	return NULL;
}

static void load_start(struct load *l, pthread_t *t, struct fw_client *c)
{
	memset(l, 0, sizeof(*l));
	l->c = c;
	l->ids = malloc(LOAD_MAX * sizeof(*l->ids));
	if (!l->ids || pthread_create(t, NULL, load_run, l) != 0) {
		fprintf(stderr, "cannot start a load thread\n");
		exit(2);
	}
}

static void load_stop(struct load *l, pthread_t t)
{
	atomic_store(&l->stop, true);
	pthread_join(t, NULL);
	check(l->rc == 0, "the parent's load thread got every ID it asked for");
	keep(l->ids, l->n);
	free(l->ids);
}

static struct fw_client *open_client(const char *server, uint32_t prefetch, uint32_t low,
				     bool use_range)
{
	struct fw_client_opts o;
	struct fw_client *c = NULL;
	int rc;

	fw_client_opts_init(&o);
	o.prefetch = prefetch;
	o.low_water = low;
	o.timeout_ms = 1000;
	o.use_range = use_range;
	rc = fw_client_open(&server, 1, &o, &c);
	if (rc < 0) {
		fprintf(stderr, "fw_client_open %s: %s\n", server, fw_strerror(rc));
		exit(2);
	}
	return c;
}

static void probe(const char *server)
{
	struct fw_client *c = open_client(server, 1024, 256, true);
	struct kid kids[3];
	struct load loads[2];
	pthread_t t[2];
	uint64_t own[PER_PROC];
	int ok = 0, rc = 0;
	size_t dups;
	char what[160];

	nall = 0;
	rc = fw_client_next(c, &own[0]);
	for (int i = 0; i < 2; i++)
		load_start(&loads[i], &t[i], c);
	for (int i = 0; i < 3; i++)
		kids[i] = kid_start(c);
	for (int i = 1; i < PER_PROC && rc == 0; i++)
		rc = fw_client_next(c, &own[i]);
	check(rc == 0, "the parent takes its 300 IDs");
	keep(own, PER_PROC);
	for (int i = 0; i < 2; i++)
		load_stop(&loads[i], t[i]);
	for (int i = 0; i < 3; i++)
		ok += kid_collect(&kids[i]);
	snprintf(what, sizeof(what),
		 "3 children forked under load each hand out their 300 IDs (%d did)", ok);
	check(ok == 3, what);
	dups = duplicates();
	snprintf(what, sizeof(what), "no ID twice among %zu (children, parent, load threads): %zu",
		 nall, dups);
	check(dups == 0, what);
	fw_client_close(c);
}

static void fork_loop(const char *server)
{
	struct fw_client *c = open_client(server, 16, 8, false);
	struct load load;
	pthread_t t;
	uint64_t first;
	int ok = 0;
	size_t dups;
	char what[160];

	nall = 0;
	check(fw_client_next(c, &first) == 0, "a first ID before the fork loop");
	keep(&first, 1);
	load_start(&load, &t, c);
	for (int i = 0; i < LOOP_KIDS; i++) {
		struct kid k = kid_start(c);

		ok += kid_collect(&k);
	}
	load_stop(&load, t);
	snprintf(
		what, sizeof(what),
		"%d children forked while refills ran (prefetch 16) each hand out 300 IDs (%d did)",
		LOOP_KIDS, ok);
	check(ok == LOOP_KIDS, what);
	dups = duplicates();
	snprintf(what, sizeof(what), "no ID twice among %zu (children, parent's load): %zu", nall,
		 dups);
	check(dups == 0, what);
	fw_client_close(c);
}

int main(int argc, char **argv)
{
	const char *server = argc > 1 ? argv[1] : getenv("FW_TRUSTED");

	if (!server) {
		fprintf(stderr, "usage: fork_c SERVER (or FW_TRUSTED, as live.sh loop sets)\n");
		return 2;
	}
	probe(server);
	fork_loop(server);
	free(all);
	return fails ? 1 : 0;
}

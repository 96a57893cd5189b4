/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The consumer program of tests/clients/consumer.sh for the C client: one
 * ID, 1,000 through fw_client_next(), 5 UUIDv7, kill -9 of responder A,
 * 3,000 more, every ID unique and increasing per worker, FW_ECLOSED after
 * fw_client_shutdown(); then the failover
 * figures (one fw_client_get() from [dead port, B] and [silent host, B],
 * default options), printed, never asserted. Addresses from FW_A, FW_B,
 * FW_DEAD, FW_SILENT; A's PID from FW_A_PID.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"

#define N_IDS (1 + 1000 + 3000 + 1)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, rc ? fw_strerror(rc) : "");
	exit(1);
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v)
		fail(name, 0);
	return v;
}

/* Milliseconds one fw_client_get() takes from a client of {@a, @b}. */
static double timed(const char *a, const char *b)
{
	const char *servers[] = {a, b};
	struct fw_client *c;
	uint64_t id;
	double t;
	int rc = fw_client_open(servers, 2, NULL, &c);

	if (rc < 0)
		fail("fw_client_open", rc);
	t = now_ms();
	rc = fw_client_get(c, &id);
	t = now_ms() - t;
	if (rc < 0)
		fail("fw_client_get", rc);
	fw_client_close(c);
	return t;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	static uint64_t ids[N_IDS], sorted[N_IDS];
	const char *servers[] = {env("FW_A"), env("FW_B")};
	uint8_t uuids[5][FW_UUID_LEN];
	uint64_t last[2] = {0, 0};
	uint32_t worker[2] = {0, 0};
	size_t n = 0, got, nworkers = 0;
	struct fw_wire_info info;
	struct fw_layout l;
	struct fw_client *c;
	double worst = 0;
	uint64_t id;
	int rc;

	rc = fw_client_open(servers, 2, NULL, &c);
	if (rc < 0)
		fail("fw_client_open", rc);
	if ((rc = fw_client_get(c, &ids[n++])) < 0)
		fail("fw_client_get", rc);
	for (int i = 0; i < 1000; i++)
		if ((rc = fw_client_next(c, &ids[n++])) < 0)
			fail("fw_client_next", rc);
	if ((rc = fw_client_get_uuid7(c, uuids, 5, &got)) < 0 || got != 5)
		fail("fw_client_get_uuid7", rc);
	if ((rc = fw_client_info(c, &info, NULL)) < 0)
		fail("fw_client_info", rc);
	if (kill((pid_t)atoi(env("FW_A_PID")), SIGKILL) < 0)
		fail("kill -9 A", 0);
	for (int i = 0; i < 3000; i++) {
		double t = now_ms();

		if ((rc = fw_client_next(c, &ids[n++])) < 0)
			fail("fw_client_next after kill -9 of A", rc);
		t = now_ms() - t;
		worst = t > worst ? t : worst;
	}
	if ((rc = fw_client_get(c, &ids[n++])) < 0)
		fail("fw_client_get after kill -9 of A", rc);
	fw_client_shutdown(c);
	if ((rc = fw_client_next(c, &id)) != FW_ECLOSED)
		fail("fw_client_next after fw_client_shutdown", rc);
	if ((rc = fw_client_get(c, &id)) != FW_ECLOSED)
		fail("fw_client_get after fw_client_shutdown", rc);
	fw_client_close(c);

	if ((rc = fw_layout_init(&l, info.epoch_ms, info.dc_bits, info.worker_bits, info.seq_bits,
				 0)) < 0)
		fail("fw_layout_init", rc);
	memcpy(sorted, ids, sizeof(ids));
	qsort(sorted, N_IDS, sizeof(sorted[0]), cmp_u64);
	for (size_t i = 1; i < N_IDS; i++)
		if (sorted[i] == sorted[i - 1])
			fail("duplicate ID", 0);
	for (size_t i = 0; i < N_IDS; i++) {
		struct fw_id_parts p;
		size_t k;

		if ((rc = fw_layout_decode(&l, ids[i], &p)) < 0)
			fail("fw_layout_decode", rc);
		for (k = 0; k < nworkers && worker[k] != (p.datacenter << 16 | p.worker); k++)
			;
		if (k == nworkers) {
			if (nworkers == 2)
				fail("IDs from more than 2 workers", 0);
			worker[nworkers++] = p.datacenter << 16 | p.worker;
		}
		if (ids[i] <= last[k])
			fail("an ID not above the last of its worker", 0);
		last[k] = ids[i];
	}
	if (nworkers != 2)
		fail("IDs from one worker only, want 2 (A then B)", 0);
	printf("FAILOVER c dead_port_ms=%.1f silent_host_ms=%.1f after_kill9_worst_call_ms=%.1f\n",
	       timed(env("FW_DEAD"), env("FW_B")), timed(env("FW_SILENT"), env("FW_B")), worst);
	printf("OK c: %d unique IDs increasing per worker, 5 UUIDv7, FW_ECLOSED after shutdown\n",
	       N_IDS);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * [clock] backstep = new_worker end to end without a server or a clock:
 * the registry over the in-memory store (fleet_memstore.h), the fleet glue
 * (fw_fleet_app.h) and a real timekeeper driven by a scripted clock, with
 * 2 and with 4 workers issuing at every keeper tick. The system clock steps
 * back 1 h, 12 times in a row: every time every worker moves to a fresh
 * worker ID, the keeper's time steps back with them, and not one call is
 * refused (CLOCK_UNSAFE, RETRY_AFTER) before, during or after the switch;
 * each worker ID's IDs only increase, and after the switch they follow the
 * stepped clock. (The registry thread publishes while the glue reads the
 * slots, so a glue that swapped each slot as it saw it, stepping once all
 * were new, lets a worker swap a tick before the step: repeating the step
 * makes that race show.)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet_memstore.h"
#include "fw_err.h"
#include "fw_fleet_admin.h"
#include "fw_fleet_app.h"
#include "fw_fleet_registry.h"
#include "fw_gen.h"
#include "fw_keeper.h"

__extension__ typedef unsigned __int128 u128;

#define NS_PER_MS 1000000ULL
#define NS_PER_S  1000000000ULL
#define HZ        2100000000ULL
#define EPOCH_MS  FW_DEFAULT_EPOCH_MS
#define T0_NS     ((EPOCH_MS + 86400000ULL) * NS_PER_MS)
#define MAX_W     4

struct sim {
	uint64_t t;  /* true ns since T0 */
	int64_t off; /* system clock - true, ns */
	uint64_t mark;
	struct fw_keeper_io io;
	struct fw_keeper_config cfg;
	uint32_t workers[MAX_W];
	uint32_t n;
	struct fw_keeper *k;
	struct fw_layout layout;
	struct fw_gen gen[MAX_W];
	struct fw_keeper_worker w[MAX_W];
	struct memsrv *m;
	struct fw_fleet_app *a;
	uint64_t last[1024]; /* highest ID issued per worker ID */
	unsigned unsafe, retry, mark_hits, issued;
};

static int st_read(void *arg, uint64_t *ms)
{
	(void)arg, (void)ms;
	return -ENOENT;
}

static int st_write(void *arg, uint64_t ms)
{
	((struct sim *)arg)->mark = ms;
	return 0;
}

static uint64_t ticks(const struct sim *s)
{
	return 1000 + (uint64_t)((u128)s->t * HZ / NS_PER_S);
}

static uint64_t wall(const struct sim *s)
{
	return T0_NS + s->t + (uint64_t)s->off;
}

static void quiet(void *arg, enum fw_log_level lvl, const char *msg)
{
	(void)arg, (void)lvl;
	if (getenv("FW_TEST_VERBOSE"))
		fprintf(stderr, "  %s\n", msg);
}

static void start(struct sim *s, uint32_t n)
{
	char err[1024];
	struct fw_fleet_config fc;
	struct fw_fleet *reg = NULL;
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->m = memsrv_new();
	fw_fleet_config_default(&fc);
	fc.root = "/t";
	fc.identity = "a";
	fc.lease_ms = 3600 * 1000;
	fc.renew_ms = 100;
	fc.log.fn = quiet;
	struct fw_fleet_store *is = memsrv_client(s->m);
	assert_int_equal(fw_fleet_init_store(is, "/t", &fc.layout, 0, NULL, 100, err, sizeof(err)),
			 FW_FLEET_INIT_CREATED);
	is->ops->free(is);
	assert_int_equal(fw_fleet_create_store(&fc, n, memsrv_client(s->m), &reg, err, sizeof(err)),
			 0);
	assert_int_equal(fw_fleet_start(reg, NULL, err, sizeof(err)), 0);
	assert_int_equal(
		fw_fleet_app_create(reg, n, EPOCH_MS, true, (struct fw_log){quiet, NULL}, &s->a),
		0);

	s->io = (struct fw_keeper_io){st_read, st_write, s};
	fw_keeper_config_default(&s->cfg);
	s->cfg.io = &s->io;
	s->cfg.state_file = NULL;
	s->cfg.mark_ahead_ms = 3000;
	s->cfg.reanchor_ms = 1000;
	s->cfg.clock.horizon_ms = 1000;
	s->cfg.epoch_ms = EPOCH_MS;
	for (uint32_t i = 0; i < n; i++)
		s->workers[i] = fw_fleet_app_worker(s->a, i);
	s->cfg.n_workers = n;
	s->cfg.worker_ids = s->workers;
	s->cfg.name = "test";
	assert_int_equal(fw_keeper_create(&s->cfg, &s->k), 0);
	uint64_t t0 = ticks(s), n0 = wall(s);
	s->t += 100 * NS_PER_MS;
	assert_int_equal(fw_keeper_start(s->k, t0, n0, ticks(s), wall(s), NULL), 0);
	fw_fleet_app_attach(s->a, s->k);
	uint32_t ns;
	struct fw_keeper_slot *slots = fw_keeper_slots(s->k, &ns);
	assert_int_equal(fw_layout_init(&s->layout, EPOCH_MS, 0, 10, 12, 0), 0);
	for (uint32_t i = 0; i < n; i++) {
		struct fw_gen_config gc;
		fw_gen_config_default(&gc);
		gc.worker = s->workers[i];
		assert_int_equal(fw_gen_init(&s->gen[i], &s->layout, &gc), 0);
		fw_keeper_worker_init(&s->w[i], &slots[i], &s->gen[i]);
	}
}

/*
 * One keeper tick (10 ms of script time), the glue's tick, and one ID per
 * worker; then @sleep_us of real time for the registry thread.
 */
static void step(struct sim *s, unsigned sleep_us)
{
	struct fw_keeper_snap snap;
	s->t += 10 * NS_PER_MS;
	uint32_t ev = fw_keeper_tick(s->k, ticks(s), wall(s));
	fw_fleet_app_tick(s->a, s->k, ev, ticks(s), wall(s));
	for (uint32_t i = 0; i < s->n; i++) {
		uint64_t id, now = fw_keeper_worker_burst(&s->w[i], &s->gen[i], ticks(s), &snap);
		int rc = fw_gen_next(&s->gen[i], now, &id);
		if (rc == FW_ECLOCK)
			s->unsafe++;
		else if (rc == FW_ERETRY)
			s->retry++;
		else if (rc == FW_EMARK)
			s->mark_hits++;
		assert_true(rc == 0 || rc == FW_ECLOCK || rc == FW_ERETRY || rc == FW_EMARK);
		if (rc != 0)
			continue;
		uint32_t w = (uint32_t)((id >> 12) & 1023);
		assert_int_equal(w, snap.worker_id);
		assert_true(id > s->last[w]); /* one worker ID's IDs only increase */
		s->last[w] = id;
		s->issued++;
	}
	if (sleep_us)
		usleep(sleep_us);
}

static uint64_t id_unix_ms(uint64_t id)
{
	return (id >> 22) + EPOCH_MS;
}

#define CYCLES 12 /* steps back of 1 h, one after the other */

static void backstep_1h(uint32_t n)
{
	struct sim s;
	uint32_t old[MAX_W];
	start(&s, n);
	for (int c = 0; c < CYCLES; c++) {
		for (int i = 0; i < 150; i++)
			step(&s, 50);
		for (uint32_t i = 0; i < n; i++)
			old[i] = fw_fleet_app_worker(s.a, i);
		s.off -= 3600 * 1000 * (int64_t)NS_PER_MS; /* the system clock steps back 1 h */
		bool fresh = false;
		int i;
		/*
		 * No pause: the glue reads the slots while the registry publishes;
		 * but a 2 ms sleep every 256 steps (about 0.8 s of sleeping within
		 * the step bound), so that on a loaded machine the registry thread
		 * gets a CPU within the bound (it did not, once in 30 runs at a load
		 * of 16 on 2 cores, when this loop only spun).
		 */
		for (i = 0; i < 100000 && !fresh; i++) {
			if (i % 256 == 255)
				usleep(2000);
			step(&s, 0);
			fresh = true;
			for (uint32_t j = 0; j < n; j++) {
				struct fw_keeper_snap snap;
				fw_keeper_read(fw_keeper_slots(s.k, NULL) + j, &snap);
				for (uint32_t o = 0; o < n; o++)
					fresh &= snap.worker_id != old[o];
			}
		}
		if (!fresh)
			fail_msg("%u workers, step %d: not every worker moved to a fresh worker ID",
				 n, c + 1);
		for (int j = 0; j < 30; j++)
			step(&s, 50);
		if (s.unsafe || s.retry || s.mark_hits)
			fail_msg("%u workers, step %d: %u CLOCK_UNSAFE, %u RETRY_AFTER, %u at the "
				 "mark out of %u",
				 n, c + 1, s.unsafe, s.retry, s.mark_hits,
				 s.issued + s.unsafe + s.retry + s.mark_hits);
		/* the IDs follow the stepped system clock, not an hour ahead of it */
		uint64_t stepped = wall(&s) / NS_PER_MS;
		for (uint32_t j = 0; j < n; j++) {
			uint64_t ms = id_unix_ms(s.last[fw_fleet_app_worker(s.a, j)]);
			assert_in_range(ms, stepped - 50, stepped + 50);
		}
		if (getenv("FW_TEST_VERBOSE"))
			fprintf(stderr,
				"  %u workers, step %d: switched %d ticks after it, %u IDs\n", n,
				c + 1, i, s.issued);
	}
	fw_fleet_app_free(s.a);
	fw_keeper_free(s.k);
	memsrv_free(s.m);
}

static void test_backstep_1h_2_workers(void **state)
{
	(void)state;
	backstep_1h(2);
}

static void test_backstep_1h_4_workers(void **state)
{
	(void)state;
	backstep_1h(4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backstep_1h_2_workers),
		cmocka_unit_test(test_backstep_1h_4_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

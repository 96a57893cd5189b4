/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_clock.h"
#include "fw_err.h"
#include "fw_gen.h"
#include "fw_layout.h"
#include "fw_rng.h"
#include "fw_time.h"
#include "fw_uuid.h"
#include "flakectl.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define TSC_SOURCE "rdtsc"
static inline uint64_t read_tsc(void)
{
	return __rdtsc();
}
#else
#define TSC_SOURCE "clock_gettime"
static inline uint64_t read_tsc(void)
{
	return fw_fw_mono_ns();
}
#endif

#define BENCH_RUNS_DEFAULT  7
#define BENCH_ITERS_DEFAULT 1000000
#define BENCH_LIST_MAX      100

/*
 * Make the compiler believe @v is used (or, for keep_mem, that memory was
 * read), so the timed loop cannot be deleted or folded, without the cost of
 * a store to a volatile sink.
 */
static inline void keep(uint64_t v)
{
	__asm__ volatile("" : : "r"(v));
}

static inline void keep_mem(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Hides where @v came from, so its computation cannot be strength-reduced. */
static inline uint64_t opaque(uint64_t v)
{
	__asm__ volatile("" : "+r"(v));
	return v;
}

struct bench_ctx {
	struct fw_layout layout;
	struct fw_clock_cal cal;
	struct fw_gen gen FW_CACHE_ALIGNED; /* as in a responder's per-lcore struct */
	uint32_t seq_bits;
	uint64_t ids[BENCH_LIST_MAX];
	struct fw_uuid7_fmt uuid7;
	struct fw_rng rng;
	uint8_t uuids[BENCH_LIST_MAX][FW_UUID_LEN];
};

/* run() makes @calls calls and sets *ids to the IDs issued (0: not an ID op). */
struct bench_op {
	const char *name;
	int (*run)(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids);
	uint32_t arg;
};

/* A fresh generator per run: every run starts from the same state. */
static int gen_reset(struct bench_ctx *c)
{
	struct fw_gen_config cfg;
	int rc;

	fw_gen_config_default(&cfg);
	rc = fw_gen_init(&c->gen, &c->layout, &cfg);
	if (rc < 0)
		return rc;
	fw_gen_set_mark(&c->gen, fw_layout_end_unix_ms(&c->layout) - c->layout.epoch_ms);
	return 0;
}

/*
 * @calls single IDs, each turned into a UUIDv7 when @uuid (a constant at
 * each call: the timed loop carries no test for it). A steady @now for a
 * whole millisecond's sequence, as an lcore's burst.
 */
static __attribute__((always_inline)) inline int ids_one(struct bench_ctx *c, uint64_t calls,
							 uint64_t *ids, bool uuid)
{
	uint64_t per_ms = 1ULL << c->seq_bits, now = 1, done = 0, id;
	int rc = gen_reset(c);

	if (rc < 0)
		return rc;
	while (done < calls) {
		uint64_t n = FW_MIN(per_ms, calls - done);

		for (uint64_t k = 0; k < n; k++) {
			rc = fw_gen_next(&c->gen, now, &id);
			if (FW_UNLIKELY(rc < 0))
				return rc;
			if (!uuid) {
				keep(id);
				continue;
			}
			rc = fw_uuid7_from_id(&c->uuid7, id, fw_rng_u64(&c->rng), c->uuids[0]);
			if (FW_UNLIKELY(rc < 0))
				return rc;
			keep_mem(c->uuids);
		}
		done += n;
		now++;
	}
	*ids = calls;
	return 0;
}

/*
 * @calls lists of @n IDs (fw_gen_list), each ID turned into a UUIDv7 when
 * @uuid (a constant at each call). @now follows the IDs issued, so the
 * sequence is never exhausted.
 */
static __attribute__((always_inline)) inline int ids_list(struct bench_ctx *c, uint32_t n,
							  uint64_t calls, uint64_t *ids, bool uuid)
{
	uint64_t issued = 0;
	int rc = gen_reset(c);

	if (rc < 0)
		return rc;
	for (uint64_t k = 0; k < calls; k++) {
		rc = fw_gen_list(&c->gen, 1 + (issued >> c->seq_bits), c->ids, n);
		if (FW_UNLIKELY(rc < 0))
			return rc;
		if (uuid) {
			for (int i = 0; i < rc; i++)
				if (FW_UNLIKELY(fw_uuid7_from_id(&c->uuid7, c->ids[i],
								 fw_rng_u64(&c->rng),
								 c->uuids[i]) < 0))
					return FW_ERANGE;
			keep_mem(c->uuids);
		} else {
			keep_mem(c->ids);
		}
		issued += (uint64_t)rc;
	}
	*ids = issued;
	return 0;
}

static int run_next(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	(void)arg;
	return ids_one(c, calls, ids, false);
}

static int run_list(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	return ids_list(c, arg, calls, ids, false);
}

static int run_range(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	uint64_t issued = 0, first;
	int rc = gen_reset(c);

	if (rc < 0)
		return rc;
	for (uint64_t k = 0; k < calls; k++) {
		rc = fw_gen_range(&c->gen, 1 + (issued >> c->seq_bits), arg, &first);
		if (FW_UNLIKELY(rc < 0))
			return rc;
		issued += (uint64_t)rc;
		keep(first);
	}
	*ids = issued;
	return 0;
}

/* One UUIDv7 per call, as a responder makes it: an ID, 64 random bits, the encoding. */
static int run_uuid7(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	(void)arg;
	return ids_one(c, calls, ids, true);
}

/* A UUID7 reply's worth per call: fw_gen_list, then one UUID per ID. */
static int run_uuid7_list(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	return ids_list(c, arg, calls, ids, true);
}

/* The random bits alone: 8 bytes of the ChaCha20 keystream. */
static int run_rng(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	(void)arg;
	for (uint64_t k = 0; k < calls; k++)
		keep(fw_rng_u64(&c->rng));
	*ids = 0;
	return 0;
}

static int run_clock_ms(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	uint64_t tsc = c->cal.base_tsc;

	(void)arg;
	for (uint64_t k = 0; k < calls; k++)
		keep(fw_clock_ms(&c->cal, opaque(tsc + k * 997)));
	*ids = 0;
	return 0;
}

static int run_tsc_clock_ms(struct bench_ctx *c, uint32_t arg, uint64_t calls, uint64_t *ids)
{
	(void)arg;
	for (uint64_t k = 0; k < calls; k++)
		keep(fw_clock_ms(&c->cal, read_tsc()));
	*ids = 0;
	return 0;
}

static const struct bench_op ops[] = {
	{"fw_gen_next", run_next, 1},           {"fw_gen_list 100", run_list, 100},
	{"fw_gen_range 1", run_range, 1},       {"fw_gen_range 100", run_range, 100},
	{"fw_gen_range 4096", run_range, 4096}, {"uuid7 (next + rng)", run_uuid7, 1},
	{"uuid7 list 90", run_uuid7_list, 90},  {"fw_rng_u64 (ChaCha20)", run_rng, 0},
	{"fw_clock_ms", run_clock_ms, 0},       {TSC_SOURCE " + fw_clock_ms", run_tsc_clock_ms, 0},
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts @v and returns its median. */
static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Two samples 20 ms apart: enough to print a sane rate, not a precise one. */
static int calibrate(struct fw_clock_cal *cal)
{
	uint64_t tsc0, ns0, tsc1, ns1;

	ns0 = fw_wall_ns();
	tsc0 = read_tsc();
	fw_sleep_ms(20);
	ns1 = fw_wall_ns();
	tsc1 = read_tsc();
	return fw_clock_calibrate(cal, tsc0, ns0, tsc1, ns1);
}

static void bench_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl bench-core [--runs N] [--iterations N]\n"
		"\n"
		"Micro-benchmark of the ID core on one thread: the generator (fw_gen_next,\n"
		"fw_gen_list, fw_gen_range) on the default layout, UUIDv7 made from it\n"
		"(an ID, 64 bits of the ChaCha20 keystream, the encoding; one at a time and\n"
		"a UUID7 reply's 90), the keystream alone, and the TSC to ms conversion.\n"
		"Reports the median and the minimum over the runs.\n"
		"\n"
		"  --runs N              timed runs per operation (default %d)\n"
		"  --iterations N        calls per run (default %d)\n",
		BENCH_RUNS_DEFAULT, BENCH_ITERS_DEFAULT);
}

/* Times @op @runs times; prints its row. Returns 0 or the generator's error. */
static int bench_row(struct bench_ctx *c, const struct bench_op *op, unsigned runs, uint64_t iters,
		     double *per_call, double *per_id)
{
	char ns_id[32] = "-";
	double call_med;
	uint64_t ids = 0;
	/* Untimed warm-up: caches, branch predictors, CPU frequency. */
	int rc = op->run(c, op->arg, iters / 10 + 1, &ids);

	for (unsigned r = 0; r < runs && rc == 0; r++) {
		uint64_t t0 = fw_mono_ns(), dt;

		rc = op->run(c, op->arg, iters, &ids);
		dt = fw_mono_ns() - t0;
		per_call[r] = (double)dt / (double)iters;
		per_id[r] = ids ? (double)dt / (double)ids : 0;
	}
	if (rc < 0)
		return rc;
	call_med = median(per_call, runs);
	if (ids)
		snprintf(ns_id, sizeof(ns_id), "%7.3f / %7.3f", median(per_id, runs), per_id[0]);
	printf("| %-24s | %7.2f / %7.2f | %-17s | %10" PRIu64 " |\n", op->name, call_med,
	       per_call[0], ns_id, iters);
	return 0;
}

static int bench(const char *cmd, unsigned runs, uint64_t iters)
{
	struct bench_ctx c;
	double *per_call = calloc(runs, sizeof(double));
	double *per_id = calloc(runs, sizeof(double));
	int rc = FC_EXIT_OK;

	if (!per_call || !per_id) {
		fc_err(cmd, "out of memory");
		rc = FC_EXIT_FAIL;
		goto out;
	}
	fw_layout_default(&c.layout);
	c.seq_bits = c.layout.seq_bits;
	rc = fw_uuid7_fmt_init(&c.uuid7, &c.layout, 0, 0);
	if (rc == 0)
		rc = fw_rng_init(&c.rng);
	if (rc < 0) {
		fc_err(cmd, "UUIDv7 set-up: %s", fw_strerror(rc));
		rc = FC_EXIT_FAIL;
		goto out;
	}
	rc = calibrate(&c.cal);
	if (rc < 0) {
		fc_err(cmd, "fw_clock_calibrate: %s", fw_strerror(rc));
		rc = FC_EXIT_FAIL;
		goto out;
	}
	printf("layout %u/%u/%u/%u, %s at %.3f GHz, %u runs of %" PRIu64
	       " calls, ns as median / min\n\n",
	       c.layout.time_bits, c.layout.dc_bits, c.layout.worker_bits, c.layout.seq_bits,
	       TSC_SOURCE, fw_clock_hz(&c.cal) / 1e9, runs, iters);
	printf("| %-24s | %-17s | %-17s | %-10s |\n", "operation", "ns/call", "ns/ID", "calls");
	printf("|--------------------------|-------------------|-------------------|------------|"
	       "\n");
	for (size_t o = 0; o < FW_ARRAY_SIZE(ops); o++) {
		rc = bench_row(&c, &ops[o], runs, iters, per_call, per_id);
		if (rc < 0) {
			fc_err(cmd, "%s: %s", ops[o].name, fw_strerror(rc));
			rc = FC_EXIT_FAIL;
			goto out;
		}
	}
out:
	free(per_id);
	free(per_call);
	return rc;
}

int cmd_bench_core(int argc, char **argv)
{
	uint64_t runs = BENCH_RUNS_DEFAULT, iters = BENCH_ITERS_DEFAULT;

	for (int i = 1; i < argc; i++) {
		int r = fc_opt_u64(argc, argv, &i, "--runs", 1, 1000, &runs);

		if (r == 0)
			r = fc_opt_u64(argc, argv, &i, "--iterations", 1, 1000000000, &iters);
		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (fc_is_help(argv[i])) {
			bench_help(stdout);
			return FC_EXIT_OK;
		}
		return fc_unknown_arg(argv[0], argv[i]);
	}
	return bench(argv[0], (unsigned)runs, iters);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_idcheck.h"

#define GROW_FIRST 4096

static const char *const kind_names[FW_IDCHECK_COUNT] = {
	[FW_IDCHECK_DUPLICATE] = "duplicate",    [FW_IDCHECK_ORDER] = "not_increasing",
	[FW_IDCHECK_TIME] = "time_out_of_bound", [FW_IDCHECK_WORKER] = "worker_mismatch",
	[FW_IDCHECK_NEGATIVE] = "negative",
};

FW_API const char *fw_idcheck_name(unsigned kind)
{
	return kind < FW_IDCHECK_COUNT ? kind_names[kind] : "?";
}

FW_API int fw_idcheck_init(struct fw_idcheck *v, const struct fw_idcheck_conf *conf)
{
	memset(v, 0, sizeof(*v));
	if (!conf->max_runs)
		return -EINVAL;
	v->conf = *conf;
	v->w = calloc(FW_IDCHECK_WORKERS_MAX, sizeof(*v->w));
	if (!v->w)
		return -ENOMEM;
	if (conf->prealloc) {
		v->runs = malloc(conf->max_runs * sizeof(*v->runs));
		if (!v->runs) {
			fw_idcheck_free(v);
			return -ENOMEM;
		}
		v->cap_runs = conf->max_runs;
	}
	return 0;
}

FW_API void fw_idcheck_free(struct fw_idcheck *v)
{
	free(v->w);
	free(v->runs);
	v->w = NULL;
	v->runs = NULL;
	v->n_runs = v->cap_runs = 0;
}

static void found(struct fw_idcheck *v, enum fw_idcheck_kind k, uint64_t id, uint64_t n)
{
	if (!v->v[k])
		v->first_bad[k] = id;
	v->v[k] += n;
}

/* The order slot of @key (datacenter << 16 | worker); NULL once 3/4 of the table is taken. */
static struct fw_idcheck_worker *worker_slot(struct fw_idcheck *v, uint32_t key)
{
	uint32_t k = key + 1;
	uint32_t h = (k * 2654435761u) & (FW_IDCHECK_WORKERS_MAX - 1);

	for (;;) {
		struct fw_idcheck_worker *w = &v->w[h];

		if (w->key == k)
			return w;
		if (!w->key) {
			if (v->n_workers >= FW_IDCHECK_WORKERS_MAX * 3 / 4)
				return NULL;
			v->n_workers++;
			w->key = k;
			return w;
		}
		h = (h + 1) & (FW_IDCHECK_WORKERS_MAX - 1);
	}
}

/* Room for one more run: false when the store is at max_runs (or memory ran out). */
static bool room(struct fw_idcheck *v)
{
	if (v->n_runs < v->cap_runs)
		return true;
	uint64_t cap = FW_MIN(FW_MAX(v->cap_runs * 2, (uint64_t)GROW_FIRST), v->conf.max_runs);
	struct fw_idcheck_run *r;

	if (cap <= v->cap_runs)
		return false;
	r = realloc(v->runs, cap * sizeof(*r));
	if (!r)
		return false;
	v->runs = r;
	v->cap_runs = cap;
	return true;
}

static void store(struct fw_idcheck *v, struct fw_idcheck_worker *w, uint64_t first, uint64_t n)
{
	if (w && w->run) {
		struct fw_idcheck_run *r = &v->runs[w->run - 1];

		if (r->first + r->n == first) {
			r->n += n;
			v->ids_stored += n;
			return;
		}
	}
	if (!room(v)) {
		v->ids_unchecked += n;
		return;
	}
	v->runs[v->n_runs].first = first;
	v->runs[v->n_runs].n = n;
	v->n_runs++;
	v->ids_stored += n;
	if (w)
		w->run = v->n_runs;
}

/* Time bound and ID-space use of a run decoding to @a .. @b. Returns true if out of bound. */
static bool time_and_space(struct fw_idcheck *v, const struct fw_id_parts *a,
			   const struct fw_id_parts *b, uint64_t sent_ms, uint64_t recv_ms)
{
	uint64_t seq_max = fw_layout_ids_per_ms(&v->conf.layout) - 1;
	bool bad = false;

	if (!v->id_ms_first || a->unix_ms < v->id_ms_first)
		v->id_ms_first = a->unix_ms;
	if (b->unix_ms > v->id_ms_last)
		v->id_ms_last = b->unix_ms;
	v->ms_started += (b->ms - a->ms) + (a->sequence == 0);
	v->ms_full += (b->ms - a->ms) + (b->sequence == seq_max);
	if (v->conf.time_bound_ms != FW_IDCHECK_NO_TIME) {
		int64_t before = a->unix_ms < sent_ms ? -(int64_t)(sent_ms - a->unix_ms) : 0;
		int64_t after = b->unix_ms > recv_ms ? (int64_t)(b->unix_ms - recv_ms) : 0;

		v->min_skew_ms = FW_MIN(v->min_skew_ms, before);
		v->max_skew_ms = FW_MAX(v->max_skew_ms, after);
		bad = before < -(int64_t)v->conf.time_bound_ms ||
		      after > (int64_t)v->conf.time_bound_ms;
	}
	return bad;
}

FW_API unsigned fw_idcheck_add(struct fw_idcheck *v, uint64_t first, uint64_t n, uint16_t dc,
			       uint16_t worker, uint64_t sent_ms, uint64_t recv_ms)
{
	struct fw_id_parts a, b;
	uint64_t last = first + n - 1;
	unsigned mask = 0;
	int rc = fw_layout_check_run(&v->conf.layout, first, n, dc, worker, &a, &b);

	v->ids += n;
	if (rc == FW_ENEGATIVE) {
		found(v, FW_IDCHECK_NEGATIVE, first, FW_MAX(n, (uint64_t)1));
		return 1u << FW_IDCHECK_NEGATIVE;
	}
	if (rc) {
		found(v, FW_IDCHECK_WORKER, first, n);
		mask |= 1u << FW_IDCHECK_WORKER;
	}
	if (time_and_space(v, &a, &b, sent_ms, recv_ms)) {
		found(v, FW_IDCHECK_TIME, first, n);
		mask |= 1u << FW_IDCHECK_TIME;
	}
	/* the pair the ID itself names: a mismatched header cannot hide a repeat */
	struct fw_idcheck_worker *w = worker_slot(v, a.datacenter << 16 | a.worker);

	if (w) {
		if (w->last && first <= w->last) {
			found(v, FW_IDCHECK_ORDER, first, 1);
			mask |= 1u << FW_IDCHECK_ORDER;
		}
		w->last = FW_MAX(w->last, last);
	} else {
		v->workers_untracked += n;
	}
	store(v, w, first, n);
	return mask;
}

FW_API unsigned fw_idcheck_add_list(struct fw_idcheck *v, const uint64_t *ids, uint32_t n,
				    uint16_t dc, uint16_t worker, uint64_t sent_ms,
				    uint64_t recv_ms)
{
	unsigned mask = 0;
	uint32_t start = 0;

	if (n == 0)
		return fw_idcheck_add(v, 0, 0, dc, worker, sent_ms, recv_ms);
	for (uint32_t i = 1; i <= n; i++) {
		if (i < n && ids[i] == ids[i - 1] + 1)
			continue;
		mask |= fw_idcheck_add(v, ids[start], i - start, dc, worker, sent_ms, recv_ms);
		start = i;
	}
	return mask;
}

FW_API bool fw_idcheck_full(const struct fw_idcheck *v)
{
	return v->ids_unchecked != 0;
}

FW_API int fw_idcheck_merge(struct fw_idcheck *into, struct fw_idcheck *from)
{
	uint64_t n = into->n_runs + from->n_runs;

	if (into->finished || from->finished)
		return -EINVAL;
	if (n > into->cap_runs) {
		struct fw_idcheck_run *r = realloc(into->runs, n * sizeof(*r));

		if (!r)
			return -ENOMEM;
		into->runs = r;
		into->cap_runs = n;
	}
	if (from->n_runs)
		memcpy(into->runs + into->n_runs, from->runs, from->n_runs * sizeof(*from->runs));
	into->n_runs = n;
	/* into's open runs stay valid: indices below its old n_runs */
	for (unsigned k = 0; k < FW_IDCHECK_COUNT; k++) {
		if (!into->v[k])
			into->first_bad[k] = from->first_bad[k];
		into->v[k] += from->v[k];
	}
	into->ids += from->ids;
	into->ids_stored += from->ids_stored;
	into->ids_unchecked += from->ids_unchecked;
	into->workers_untracked += from->workers_untracked;
	into->min_skew_ms = FW_MIN(into->min_skew_ms, from->min_skew_ms);
	into->max_skew_ms = FW_MAX(into->max_skew_ms, from->max_skew_ms);
	if (from->id_ms_first && (!into->id_ms_first || from->id_ms_first < into->id_ms_first))
		into->id_ms_first = from->id_ms_first;
	into->id_ms_last = FW_MAX(into->id_ms_last, from->id_ms_last);
	into->ms_started += from->ms_started;
	into->ms_full += from->ms_full;
	free(from->runs);
	from->runs = NULL;
	from->n_runs = from->cap_runs = 0;
	from->ids_stored = 0;
	if (from->w) /* no open runs left to extend */
		memset(from->w, 0, FW_IDCHECK_WORKERS_MAX * sizeof(*from->w));
	from->n_workers = 0;
	return 0;
}

static int cmp_run(const void *x, const void *y)
{
	const struct fw_idcheck_run *a = x, *b = y;

	return a->first < b->first ? -1 : a->first > b->first;
}

FW_API void fw_idcheck_finish(struct fw_idcheck *v)
{
	uint64_t end = 0; /* one past the highest ID so far */

	if (v->finished)
		return;
	v->finished = true;
	if (v->n_runs)
		qsort(v->runs, v->n_runs, sizeof(*v->runs), cmp_run);
	for (uint64_t i = 0; i < v->n_runs; i++) {
		const struct fw_idcheck_run *r = &v->runs[i];
		uint64_t e = r->first + r->n;

		if (i && r->first < end)
			found(v, FW_IDCHECK_DUPLICATE, r->first, FW_MIN(e, end) - r->first);
		end = FW_MAX(end, e);
	}
}

FW_API uint64_t fw_idcheck_total(const struct fw_idcheck *v)
{
	uint64_t t = 0;

	for (unsigned k = 0; k < FW_IDCHECK_COUNT; k++)
		t += v->v[k];
	return t;
}

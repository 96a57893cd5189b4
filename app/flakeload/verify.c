/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checks on every ID received. Uniqueness over the whole run is checked at
 * the end: IDs are stored as intervals [first, first + n), and an ID that
 * continues the last interval of its worker extends it, so a worker handing
 * out consecutive IDs (one ms after another, in order) costs a few intervals
 * per ms rather than one entry per ID. At the end the intervals are sorted
 * and any overlap is a duplicate. Order and time are checked on arrival.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fl.h"

const char *const fl_viol_names[FL_V_COUNT] = {
	[FL_V_DUPLICATE] = "duplicate",    [FL_V_ORDER] = "not_increasing",
	[FL_V_TIME] = "time_out_of_bound", [FL_V_WORKER] = "worker_mismatch",
	[FL_V_NEGATIVE] = "negative",      [FL_V_ADDRESS] = "misaddressed",
	[FL_V_STATUS_IDS] = "bad_reply",
};

int fl_verify_init(struct fl_verify *v, const struct fw_layout *l, uint32_t time_bound_ms,
		   uint64_t max_intervals)
{
	memset(v, 0, sizeof(*v));
	v->layout = *l;
	v->time_bound_ms = time_bound_ms;
	v->cap_ival = max_intervals;
	v->min_skew_ms = 0;
	v->max_skew_ms = 0;
	v->ival = malloc(max_intervals * sizeof(*v->ival));
	return v->ival ? 0 : -ENOMEM;
}

void fl_verify_free(struct fl_verify *v)
{
	free(v->ival);
	v->ival = NULL;
}

static void violation(struct fl_verify *v, enum fl_viol k, uint64_t id, uint64_t n)
{
	if (!v->v[k])
		v->first_bad[k] = id;
	v->v[k] += n;
}

static struct fl_worker_last *worker_slot(struct fl_verify *v, uint32_t key)
{
	uint32_t k = key + 1;
	uint32_t h = (k * 2654435761u) & (FL_WORKERS_MAX - 1);

	for (;;) {
		struct fl_worker_last *w = &v->w[h];
		if (w->key == k)
			return w;
		if (!w->key) {
			if (v->n_workers >= FL_WORKERS_MAX * 3 / 4)
				return NULL;
			v->n_workers++;
			w->key = k;
			return w;
		}
		h = (h + 1) & (FL_WORKERS_MAX - 1);
	}
}

static void store(struct fl_verify *v, struct fl_worker_last *w, uint64_t first, uint64_t n)
{
	if (w && w->ival) {
		struct fl_ival *iv = &v->ival[w->ival - 1];
		if (iv->first + iv->n == first) {
			iv->n += n;
			return;
		}
	}
	if (v->n_ival == v->cap_ival) {
		v->ids_unchecked += n;
		return;
	}
	v->ival[v->n_ival].first = first;
	v->ival[v->n_ival].n = n;
	v->n_ival++;
	if (w)
		w->ival = v->n_ival;
}

void fl_verify_ids(struct fl_verify *v, uint64_t first, uint64_t n, uint16_t dc, uint16_t worker,
		   uint64_t sent_ms, uint64_t recv_ms)
{
	struct fw_id_parts a, b;
	uint64_t last = first + n - 1;

	v->ids += n;
	if (fw_layout_decode(&v->layout, first, &a) || fw_layout_decode(&v->layout, last, &b) ||
	    last < first) {
		violation(v, FL_V_NEGATIVE, first, n);
		return;
	}
	/* a range crossing a sequence boundary would carry into the worker field */
	if (a.datacenter != dc || a.worker != worker || b.datacenter != dc || b.worker != worker)
		violation(v, FL_V_WORKER, first, n);

	int64_t before = a.unix_ms < sent_ms ? -(int64_t)(sent_ms - a.unix_ms) : 0;
	int64_t after = b.unix_ms > recv_ms ? (int64_t)(b.unix_ms - recv_ms) : 0;
	if (before < v->min_skew_ms)
		v->min_skew_ms = before;
	if (after > v->max_skew_ms)
		v->max_skew_ms = after;
	if (before < -(int64_t)v->time_bound_ms || after > (int64_t)v->time_bound_ms)
		violation(v, FL_V_TIME, first, n);

	/*
	 * IDs of one run are consecutive integers: within one ms, or crossing
	 * into the next only when the worker and datacenter fields are empty.
	 */
	uint64_t seq_max = fw_layout_ids_per_ms(&v->layout) - 1;
	if (!v->id_ms_first || a.unix_ms < v->id_ms_first)
		v->id_ms_first = a.unix_ms;
	if (b.unix_ms > v->id_ms_last)
		v->id_ms_last = b.unix_ms;
	v->ms_started += (b.ms - a.ms) + (a.sequence == 0);
	v->ms_full += (b.ms - a.ms) + (b.sequence == seq_max);

	struct fl_worker_last *w = worker_slot(v, a.datacenter << 16 | a.worker);
	if (w) {
		if (w->last && first <= w->last)
			violation(v, FL_V_ORDER, first, 1);
		if (last > w->last)
			w->last = last;
	} else {
		v->workers_untracked += n;
	}
	store(v, w, first, n);
}

static int cmp_ival(const void *x, const void *y)
{
	const struct fl_ival *a = x, *b = y;
	return a->first < b->first ? -1 : a->first > b->first;
}

void fl_verify_finish(struct fl_verify *v)
{
	uint64_t end = 0;

	qsort(v->ival, v->n_ival, sizeof(*v->ival), cmp_ival);
	for (uint64_t i = 0; i < v->n_ival; i++) {
		const struct fl_ival *iv = &v->ival[i];
		uint64_t e = iv->first + iv->n;
		if (i && iv->first < end)
			violation(v, FL_V_DUPLICATE, iv->first, (e < end ? e : end) - iv->first);
		if (e > end)
			end = e;
	}
}

uint64_t fl_verify_total(const struct fl_verify *v)
{
	uint64_t t = 0;

	for (int k = 0; k < FL_V_COUNT; k++)
		t += v->v[k];
	return t;
}

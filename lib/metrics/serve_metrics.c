/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fw_metrics_serve.h"
#include "fw_wire.h"

static const char *const op_names[] = {"unknown", "id", "list", "range", "info", "uuid7"};
static const char *const st_names[] = {"ok",      "bad_request",  "bad_version", "retry_after",
				       "refused", "clock_unsafe", "no_lease"};
static const char *const serve_drops[FW_SERVE_DROP_COUNT] = {"wire_short", "wire_magic",
							     "wire_reply"};

FW_API const char *fw_metrics_serve_drop_name(unsigned i)
{
	return i < FW_SERVE_DROP_COUNT ? serve_drops[i] : "wire_other";
}

FW_API const char *fw_metrics_status_name(unsigned st, char *buf, size_t cap)
{
	if (st < FW_ARRAY_SIZE(st_names))
		return st_names[st];
	snprintf(buf, cap, "status_%u", st);
	return buf;
}

static const char *op_name(unsigned op, char *buf, size_t cap)
{
	if (op < FW_ARRAY_SIZE(op_names))
		return op_names[op];
	snprintf(buf, cap, "op_%u", op);
	return buf;
}

/* labels of worker @k plus one more */
static size_t with(const struct fw_metrics_worker *k, struct fw_metrics_label *l, const char *name,
		   const char *value)
{
	size_t n = k->n_labels;
	memcpy(l, k->labels, n * sizeof(*l));
	if (name) {
		l[n].name = name;
		l[n].value = value;
		n++;
	}
	return n;
}

FW_API void fw_metrics_write_workers(struct fw_metrics_writer *w,
				     const struct fw_metrics_worker *wk, size_t n)
{
	struct fw_metrics_label l[FW_METRICS_WORKER_LABELS + 1];
	char buf[32];
	const size_t n_ops = FW_ARRAY_SIZE(wk->ss->ops);
	const size_t n_st = FW_ARRAY_SIZE(wk->ss->status);

	fw_metrics_family(w, "flakewire_requests_total", FW_METRICS_COUNTER,
			  "Requests answered, by op (unknown: an op this responder does not know)");
	for (size_t i = 0; i < n; i++)
		for (unsigned op = 0; op < n_ops; op++)
			fw_metrics_u64(w, l, with(&wk[i], l, "op", op_name(op, buf, sizeof(buf))),
				       wk[i].ss->ops[op]);
	fw_metrics_family(w, "flakewire_replies_total", FW_METRICS_COUNTER,
			  "Replies sent, by status");
	for (size_t i = 0; i < n; i++)
		for (unsigned st = 0; st < n_st; st++)
			fw_metrics_u64(w, l,
				       with(&wk[i], l, "status",
					    fw_metrics_status_name(st, buf, sizeof(buf))),
				       wk[i].ss->status[st]);
	fw_metrics_family(w, "flakewire_ids_total", FW_METRICS_COUNTER, "IDs issued in replies");
	for (size_t i = 0; i < n; i++)
		fw_metrics_u64(w, l, with(&wk[i], l, NULL, NULL), wk[i].ss->ids);
	fw_metrics_family(w, "flakewire_partial_replies_total", FW_METRICS_COUNTER,
			  "Replies carrying fewer IDs than asked (PARTIAL)");
	for (size_t i = 0; i < n; i++)
		fw_metrics_u64(w, l, with(&wk[i], l, NULL, NULL), wk[i].ss->partial);
	fw_metrics_family(w, "flakewire_generator_events_total", FW_METRICS_COUNTER,
			  "ID generator events: borrow (a ms ahead of the clock entered), backstep "
			  "(clock seen going back), retry (sequence used up), unsafe (clock "
			  "unsafe), mark_hit (stopped at the persisted mark)");
	for (size_t i = 0; i < n; i++) {
		const struct fw_gen_stats *g = wk[i].gs;
		const struct {
			const char *name;
			uint64_t v;
		} ev[] = {{"borrow", g->borrowed_ms},
			  {"backstep", g->backsteps},
			  {"retry", g->retries},
			  {"unsafe", g->unsafe},
			  {"mark_hit", g->mark_hits}};
		for (size_t e = 0; e < FW_ARRAY_SIZE(ev); e++)
			fw_metrics_u64(w, l, with(&wk[i], l, "event", ev[e].name), ev[e].v);
	}
	fw_metrics_family(w, "flakewire_last_issued_timestamp_seconds", FW_METRICS_GAUGE,
			  "Unix time of the millisecond of the newest ID issued (0: none yet)");
	for (size_t i = 0; i < n; i++)
		fw_metrics_f64(w, l, with(&wk[i], l, NULL, NULL),
			       (double)wk[i].last_unix_ms / 1000.0);
}

void fw_metrics_write_clock(struct fw_metrics_writer *w, const struct fw_keeper_snap *s,
			    uint64_t clock_events)
{
	struct fw_metrics_label l[1];

	fw_metrics_family(w, "flakewire_clock_offset_seconds", FW_METRICS_GAUGE,
			  "System clock minus the responder's clock at the last re-anchor");
	fw_metrics_f64(w, NULL, 0, (double)s->offset_ns / 1e9);
	fw_metrics_family(w, "flakewire_clock_slew_ratio", FW_METRICS_GAUGE,
			  "Rate change applied to remove the offset (500 ppm = 0.0005)");
	fw_metrics_f64(w, NULL, 0, (double)s->cal.slew_ppb / 1e9);
	fw_metrics_family(w, "flakewire_clock_tsc_hertz", FW_METRICS_GAUGE,
			  "Tick rate (TSC in flakewire, CLOCK_MONOTONIC_RAW ns in flakesock) as "
			  "calibrated against the system clock");
	fw_metrics_f64(w, NULL, 0, fw_clock_hz(&s->cal));
	fw_metrics_family(
		w, "flakewire_clock_flag", FW_METRICS_GAUGE,
		"Clock state flags, 1 when set: back_step (system clock behind by more "
		"than [clock] step_ms), slewing (as replies flag it: an offset of 1 ms or "
		"more being slewed), fwd_step");
	const struct {
		const char *name;
		uint32_t bit;
	} flags[] = {{"back_step", FW_CLOCK_F_BACK_STEP},
		     {"slewing", FW_CLOCK_F_SLEWING},
		     {"fwd_step", FW_CLOCK_F_FWD_STEP}};
	for (size_t f = 0; f < FW_ARRAY_SIZE(flags); f++) {
		l[0] = (struct fw_metrics_label){"flag", flags[f].name};
		/* slewing: what the replies say (FW_WIRE_F_SLEWING: an offset of 1 ms or
		 * more being slewed), not the calibration's bit, set for any offset */
		uint64_t on = flags[f].bit == FW_CLOCK_F_SLEWING
				      ? !!(s->wire_flags & FW_WIRE_F_SLEWING)
				      : !!(s->cal.flags & flags[f].bit);
		fw_metrics_u64(w, l, 1, on);
	}
	fw_metrics_family(w, "flakewire_clock_events_total", FW_METRICS_COUNTER,
			  "Clock steps and backward steps handled by the timekeeper");
	fw_metrics_u64(w, NULL, 0, clock_events);
}

void fw_metrics_write_process(struct fw_metrics_writer *w, const char *version,
			      const char *responder, double start_s, uint32_t n_workers,
			      const char *workers_help)
{
	struct fw_metrics_label l[2] = {{"version", version}, {"responder", responder}};

	fw_metrics_family(w, "flakewire_build_info", FW_METRICS_GAUGE,
			  "Always 1; the labels name the build");
	fw_metrics_u64(w, l, 2, 1);
	fw_metrics_family(w, "flakewire_start_time_seconds", FW_METRICS_GAUGE,
			  "Unix time the responder started");
	fw_metrics_f64(w, NULL, 0, start_s);
	fw_metrics_family(w, "flakewire_workers", FW_METRICS_GAUGE, workers_help);
	fw_metrics_u64(w, NULL, 0, n_workers);
}

void fw_metrics_worker_fill(struct fw_metrics_worker *wk, struct fw_metrics_worker_names *names,
			    const char *key_label, uint32_t key, struct fw_keeper_slot *slot,
			    const struct fw_serve *serve, uint64_t epoch_ms)
{
	struct fw_keeper_snap ks;

	fw_keeper_read(slot, &ks);
	uint64_t last = atomic_load_explicit(&slot->last_ms, memory_order_relaxed);
	snprintf(names->key, sizeof(names->key), "%u", key);
	snprintf(names->worker, sizeof(names->worker), "%u", ks.worker_id);
	*wk = (struct fw_metrics_worker){
		.labels = {{key_label, names->key}, {"worker", names->worker}},
		.n_labels = 2,
		.ss = &serve->stats,
		.gs = fw_gen_stats(&serve->gen),
		.last_unix_ms = last ? last + epoch_ms : 0,
	};
}

void fw_metrics_write_mark(struct fw_metrics_writer *w, const struct fw_metrics_mark *m)
{
	fw_metrics_family(w, "flakewire_mark_timestamp_seconds", FW_METRICS_GAUGE,
			  "Unix time up to which IDs are reserved (persisted high-water mark)");
	fw_metrics_f64(w, NULL, 0, (double)m->mark_unix_ms / 1000.0);
	fw_metrics_family(w, "flakewire_mark_ahead_seconds", FW_METRICS_GAUGE,
			  "Persisted mark minus the system clock (negative: issuing has stopped "
			  "at the mark)");
	fw_metrics_f64(w, NULL, 0, ((double)m->mark_unix_ms - m->now_unix_ms) / 1000.0);
	fw_metrics_family(w, "flakewire_mark_failing", FW_METRICS_GAUGE,
			  "1 while the last attempt to persist the mark failed");
	fw_metrics_u64(w, NULL, 0, m->failing);
	fw_metrics_family(w, "flakewire_mark_failures_total", FW_METRICS_COUNTER,
			  "Attempts to persist the mark that failed");
	fw_metrics_u64(w, NULL, 0, m->failures);
	fw_metrics_family(w, "flakewire_mark_writes_total", FW_METRICS_COUNTER, "Marks persisted");
	fw_metrics_u64(w, NULL, 0, m->writes);
}

void fw_metrics_write_states(struct fw_metrics_writer *w, const struct fw_metrics_worker *wk,
			     const enum fw_keeper_wstate *st, size_t n)
{
	struct fw_metrics_label l[FW_METRICS_WORKER_LABELS + 1];
	bool ready = n > 0;
	fw_metrics_family(
		w, "flakewire_worker_state", FW_METRICS_GAUGE,
		"1 for the state each worker is in: issuing, waiting (RETRY_AFTER until "
		"the clock passes its floor or the mark on disk), no_lease, clock_unsafe");
	for (size_t i = 0; i < n; i++) {
		memcpy(l, wk[i].labels, wk[i].n_labels * sizeof(l[0]));
		l[wk[i].n_labels].name = "state";
		for (int s = 0; s < FW_KEEPER_W_COUNT; s++) {
			l[wk[i].n_labels].value = fw_keeper_wstate_name((enum fw_keeper_wstate)s);
			fw_metrics_u64(w, l, wk[i].n_labels + 1, st[i] == (enum fw_keeper_wstate)s);
		}
		ready = ready && st[i] == FW_KEEPER_W_ISSUING;
	}
	fw_metrics_family(w, "flakewire_ready", FW_METRICS_GAUGE,
			  "1 when every worker can issue now (what /readyz answers)");
	fw_metrics_u64(w, NULL, 0, ready);
}

bool fw_metrics_probe_answer(bool ready, bool serving, const struct fw_metrics_worker *wk,
			     const enum fw_keeper_wstate *st, size_t n, char *body, size_t cap)
{
	size_t len = 0, bad = 0;
	if (!serving || n == 0) {
		snprintf(body, cap, "%s\n",
			 ready ? "not ready: starting or stopping"
			       : "not serving: starting or stopping");
		return false;
	}
	if (!ready) {
		snprintf(body, cap, "ok\n");
		return true;
	}
	for (size_t i = 0; i < n; i++)
		bad += st[i] != FW_KEEPER_W_ISSUING;
	if (bad == 0) {
		snprintf(body, cap, "ready: %zu of %zu workers issuing\n", n, n);
		return true;
	}
	len = (size_t)snprintf(body, cap, "not ready: %zu of %zu workers cannot issue now\n", bad,
			       n);
	for (size_t i = 0; i < n && len < cap; i++) {
		if (st[i] == FW_KEEPER_W_ISSUING)
			continue;
		for (size_t k = 0; k < wk[i].n_labels && len < cap; k++)
			len += (size_t)snprintf(body + len, cap - len, "%s%s=%s", k ? " " : "",
						wk[i].labels[k].name, wk[i].labels[k].value);
		if (len < cap)
			len += (size_t)snprintf(body + len, cap - len, ": %s\n",
						fw_keeper_wstate_name(st[i]));
	}
	return false;
}

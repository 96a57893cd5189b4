/* SPDX-License-Identifier: BSD-3-Clause */
/* The final table and its JSON form. */
#include <errno.h>
#include <stdio.h>

#include "fl.h"

static const char *const op_names[FL_MAX_MIX] = {"id", "list", "range", "info"};

static double per_s(const struct fl_ctx *c, uint64_t n)
{
	return c->elapsed_s > 0 ? (double)n / c->elapsed_s : 0;
}

/* IDs received as a fraction of what the workers seen could issue over @ms. */
static double space_frac(const struct fl_ctx *c, double ms)
{
	const struct fw_idcheck *v = &c->ver;
	double cap = (double)v->n_workers * ms * (double)fw_layout_ids_per_ms(&v->conf.layout);
	return cap > 0 ? (double)v->ids / cap : 0;
}

static uint64_t span_ms(const struct fw_idcheck *v)
{
	return v->ids ? v->id_ms_last - v->id_ms_first + 1 : 0;
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static double idle_pct(const struct fl_ctx *c)
{
	double send_s = c->st.first_tsc ? (double)(c->st.last_send_tsc - c->st.first_tsc) : 0;
	return send_s > 0 ? 100.0 * (double)c->st.idle_tsc / send_s : 0;
}

uint64_t fl_violations(const struct fl_ctx *c)
{
	return fw_idcheck_total(&c->ver) + c->st.misaddressed + c->st.bad_reply;
}

void fl_report_print(const struct fl_ctx *c)
{
	const struct fl_stats *s = &c->st;
	const struct fw_hist *h = &c->hist;
	const struct fw_idcheck *v = &c->ver;
	uint64_t answered = s->replies + s->late;

	printf("\nflakeload: %s, started %s, %.3f s, %s, window %u, rate %s\n", c->o.device,
	       c->started_at, c->elapsed_s, c->o.expect_echo ? "echo mode" : "flakewire mode",
	       c->o.window, c->o.rate ? "fixed" : "open loop");
	printf("  %-22s %14lu   (id %lu, list %lu, range %lu, info %lu)\n", "requests sent",
	       (unsigned long)s->sent, (unsigned long)s->by_op_sent[0],
	       (unsigned long)s->by_op_sent[1], (unsigned long)s->by_op_sent[2],
	       (unsigned long)s->by_op_sent[3]);
	printf("  %-22s %14.0f\n", "sent/s", per_s(c, s->sent));
	printf("  %-22s %14lu\n", "replies matched", (unsigned long)s->replies);
	printf("  %-22s %14.0f\n", "replies/s", per_s(c, s->replies));
	if (c->o.expect_echo)
		printf("  %-22s %14lu\n", "  of which echoes", (unsigned long)s->echoes);
	printf("  %-22s %14lu\n", "IDs", (unsigned long)s->ids);
	printf("  %-22s %14.0f\n", "IDs/s", per_s(c, s->ids));
	for (int i = 0; i < FW_WIRE_ST_COUNT; i++)
		if (s->by_status[i])
			printf("  status %-15s %14lu\n", fw_wire_status_name((uint8_t)i),
			       (unsigned long)s->by_status[i]);
	printf("  %-22s %14lu   borrowed %lu\n", "flag partial", (unsigned long)s->flags_partial,
	       (unsigned long)s->flags_borrowed);
	printf("  %-22s %14lu   (%.4f %% of sent)\n", "timeouts (lost)", (unsigned long)s->timeouts,
	       s->sent ? 100.0 * (double)s->timeouts / (double)s->sent : 0);
	printf("  %-22s %14lu   (answered after %u ms)\n", "late replies", (unsigned long)s->late,
	       c->o.timeout_ms);
	printf("  %-22s %14lu   bad %lu, foreign %lu, rx frames %lu, answered %lu\n",
	       "tx queue full", (unsigned long)s->tx_full, (unsigned long)s->bad,
	       (unsigned long)s->foreign, (unsigned long)s->rx, (unsigned long)answered);
	printf("  %-22s %14lu   generator idle %.1f %% of the send phase\n", "window full (rounds)",
	       (unsigned long)s->window_full, idle_pct(c));
	printf("  latency us: min %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean "
	       "%.1f\n",
	       us(h->n ? h->min : 0), us(fw_hist_quantile(h, 0.5)), us(fw_hist_quantile(h, 0.9)),
	       us(fw_hist_quantile(h, 0.99)), us(fw_hist_quantile(h, 0.999)), us(h->max),
	       us(fw_hist_mean(h)));
	if (!c->o.expect_echo) {
		printf("  verify: %lu IDs from %u worker(s), %lu intervals (cap %lu), %lu IDs not "
		       "in "
		       "the uniqueness check, ID times outside [request sent, reply received] by "
		       "%ld..+%ld ms (bound %u)\n",
		       (unsigned long)v->ids, v->n_workers, (unsigned long)v->n_runs,
		       (unsigned long)v->conf.max_runs, (unsigned long)v->ids_unchecked,
		       (long)v->min_skew_ms, (long)v->max_skew_ms, v->conf.time_bound_ms);
		printf("  ID space: %lu ms spanned by the IDs, %lu ms started, %lu used up; IDs = "
		       "%.4f of %lu per ms per worker over the span, %.4f over the elapsed time\n",
		       (unsigned long)span_ms(v), (unsigned long)v->ms_started,
		       (unsigned long)v->ms_full, space_frac(c, (double)span_ms(v)),
		       (unsigned long)fw_layout_ids_per_ms(&v->conf.layout),
		       space_frac(c, c->elapsed_s * 1000.0));
		printf("  longest pause in replies %.1f us (send phase)\n",
		       (double)s->max_gap_tsc * 1e6 / (double)c->hz);
		for (unsigned k = 0; k < FW_IDCHECK_COUNT; k++)
			if (v->v[k])
				printf("  VIOLATION %-20s %lu (first ID %#lx)\n",
				       fw_idcheck_name(k), (unsigned long)v->v[k],
				       (unsigned long)v->first_bad[k]);
	}
	if (s->misaddressed)
		printf("  VIOLATION %-20s %lu\n", "misaddressed", (unsigned long)s->misaddressed);
	if (s->bad_reply)
		printf("  VIOLATION %-20s %lu\n", "bad_reply", (unsigned long)s->bad_reply);
	printf("  result: %s\n", fl_violations(c) ? "FAILED (violations above)"
				 : s->replies     ? "ok"
						  : "FAILED (no replies)");
}

int fl_report_json(const struct fl_ctx *c, const char *path)
{
	const struct fl_stats *s = &c->st;
	const struct fw_hist *h = &c->hist;
	const struct fw_idcheck *v = &c->ver;
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "{\n  \"device\": \"%s\",\n  \"started\": \"%s\",\n", c->o.device,
		c->started_at);
	fprintf(f, "  \"mode\": \"%s\",\n  \"rate\": %lu,\n  \"window\": %u,\n",
		c->o.expect_echo ? "echo" : "flakewire", (unsigned long)c->o.rate, c->o.window);
	fprintf(f, "  \"elapsed_s\": %.6f,\n  \"sent\": %lu,\n", c->elapsed_s,
		(unsigned long)s->sent);
	for (int i = 0; i < FL_MAX_MIX; i++)
		fprintf(f, "  \"sent_%s\": %lu,\n", op_names[i], (unsigned long)s->by_op_sent[i]);
	for (int i = 0; i < FL_MAX_MIX; i++)
		fprintf(f, "  \"ok_%s\": %lu,\n", op_names[i], (unsigned long)s->by_op_ok[i]);
	fprintf(f, "  \"replies\": %lu,\n  \"echoes\": %lu,\n  \"replies_per_s\": %.1f,\n",
		(unsigned long)s->replies, (unsigned long)s->echoes, per_s(c, s->replies));
	fprintf(f, "  \"ids_asked\": %lu,\n", (unsigned long)s->ids_asked);
	fprintf(f, "  \"ids\": %lu,\n  \"ids_per_s\": %.1f,\n", (unsigned long)s->ids,
		per_s(c, s->ids));
	fprintf(f, "  \"status\": {");
	for (int i = 0; i < FW_WIRE_ST_COUNT; i++)
		fprintf(f, "%s\"%s\": %lu", i ? ", " : "", fw_wire_status_name((uint8_t)i),
			(unsigned long)s->by_status[i]);
	fprintf(f, "},\n  \"partial\": %lu,\n  \"borrowed\": %lu,\n",
		(unsigned long)s->flags_partial, (unsigned long)s->flags_borrowed);
	fprintf(f, "  \"generator_idle_pct\": %.2f,\n", idle_pct(c));
	fprintf(f, "  \"sent_per_s\": %.1f,\n  \"max_reply_gap_us\": %.1f,\n", per_s(c, s->sent),
		(double)s->max_gap_tsc * 1e6 / (double)c->hz);
	fprintf(f,
		"  \"id_space\": {\"ids_per_ms_per_worker\": %lu, \"workers\": %u, "
		"\"span_ms\": %lu, \"ms_started\": %lu, \"ms_full\": %lu, "
		"\"used_of_span\": %.6f, \"used_of_elapsed\": %.6f},\n",
		(unsigned long)fw_layout_ids_per_ms(&v->conf.layout), v->n_workers,
		(unsigned long)span_ms(v), (unsigned long)v->ms_started, (unsigned long)v->ms_full,
		space_frac(c, (double)span_ms(v)), space_frac(c, c->elapsed_s * 1000.0));
	fprintf(f, "  \"timeouts\": %lu,\n  \"late\": %lu,\n  \"bad\": %lu,\n  \"tx_full\": %lu,\n",
		(unsigned long)s->timeouts, (unsigned long)s->late, (unsigned long)s->bad,
		(unsigned long)s->tx_full);
	fprintf(f,
		"  \"latency_ns\": {\"min\": %lu, \"p50\": %lu, \"p90\": %lu, \"p99\": %lu, "
		"\"p99_9\": %lu, \"max\": %lu, \"mean\": %lu},\n",
		(unsigned long)(h->n ? h->min : 0), (unsigned long)fw_hist_quantile(h, 0.5),
		(unsigned long)fw_hist_quantile(h, 0.9), (unsigned long)fw_hist_quantile(h, 0.99),
		(unsigned long)fw_hist_quantile(h, 0.999), (unsigned long)h->max,
		(unsigned long)fw_hist_mean(h));
	fprintf(f,
		"  \"verify\": {\"ids\": %lu, \"workers\": %u, \"intervals\": %lu, "
		"\"ids_unchecked\": %lu",
		(unsigned long)v->ids, v->n_workers, (unsigned long)v->n_runs,
		(unsigned long)v->ids_unchecked);
	for (unsigned k = 0; k < FW_IDCHECK_COUNT; k++)
		fprintf(f, ", \"%s\": %lu", fw_idcheck_name(k), (unsigned long)v->v[k]);
	fprintf(f, ", \"misaddressed\": %lu, \"bad_reply\": %lu", (unsigned long)s->misaddressed,
		(unsigned long)s->bad_reply);
	fprintf(f, "},\n  \"violations\": %lu\n}\n", (unsigned long)fl_violations(c));
	return fclose(f) ? -errno : 0;
}

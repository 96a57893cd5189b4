/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.c: the per-lcore counters summed (no locks: each has one writer) and the stats line. */
#pragma once

#include "fw_serve.h"
#include "pkt.h"

struct fw_app;
struct fw_lcore;

/* The totals at the last stats line, kept by its caller (the control thread). */
struct fw_stats_line {
	struct fw_lcore_stats st;
	struct fw_serve_stats ss;
};

/* Sums every lcore's counters into *st and *ss. */
void fw_stats_sum(const struct fw_app *app, struct fw_lcore_stats *st, struct fw_serve_stats *ss);
/* One lcore's counters as read by telemetry (rate_evictions filled in). */
void fw_stats_lcore(const struct fw_lcore *lc, struct fw_lcore_stats *st);
/*
 * Prints one stats line: rates since *@prev over @interval_s seconds (0:
 * totals only), then stores the totals in *@prev.
 */
void fw_stats_line(const struct fw_app *app, struct fw_stats_line *prev, double interval_s);

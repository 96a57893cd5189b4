/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.c: the per-lcore counters summed (no locks: each has one writer) and the stats line. */
#pragma once

#include "fw_serve.h"
#include "pkt.h"

struct fwire_app;
struct fwire_lcore;

/* The totals at the last stats line, kept by its caller (the control thread). */
struct fwire_stats_line {
	struct fwire_lcore_stats st;
	struct fw_serve_stats ss;
};

/* Sums every lcore's counters into *st and *ss. */
void fwire_stats_sum(const struct fwire_app *app, struct fwire_lcore_stats *st,
		     struct fw_serve_stats *ss);
/* One lcore's counters as read by telemetry (rate_evictions filled in). */
void fwire_stats_lcore(const struct fwire_lcore *lc, struct fwire_lcore_stats *st);
/*
 * Prints one stats line: rates since *@prev over @interval_s seconds (0:
 * totals only), then stores the totals in *@prev.
 */
void fwire_stats_line(const struct fwire_app *app, struct fwire_stats_line *prev,
		      double interval_s);

/* SPDX-License-Identifier: BSD-3-Clause */
/* Sums of the per-lcore counters (read without locks: each has one writer) and the stats line. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "stats.h"

void fwire_stats_lcore(const struct fwire_lcore *lc, struct fwire_lcore_stats *st)
{
	*st = lc->st;
	st->rate_evictions = lc->rate ? fw_rate_evictions(lc->rate) : 0;
}

void fwire_stats_sum(const struct fwire_app *app, struct fwire_lcore_stats *st,
		     struct fw_serve_stats *ss)
{
	memset(st, 0, sizeof(*st));
	memset(ss, 0, sizeof(*ss));
	for (uint32_t i = 0; i < app->n_lcores; i++) {
		const struct fwire_lcore *lc = &app->lcore[i];
		struct fwire_lcore_stats l;
		fwire_stats_lcore(lc, &l);
		st->rx += l.rx;
		st->tx += l.tx;
		st->tx_dropped += l.tx_dropped;
		st->arp += l.arp;
		st->icmp += l.icmp;
		st->udp += l.udp;
		st->nd += l.nd;
		st->rx6 += l.rx6;
		st->icmp6 += l.icmp6;
		st->udp6 += l.udp6;
		for (int d = 0; d < FW_DROP_COUNT; d++)
			st->drop[d] += l.drop[d];
		st->rate_limited += l.rate_limited;
		st->slipped += l.slipped;
		st->rate_evictions += l.rate_evictions;
		fw_serve_stats_add(ss, &lc->serve.stats);
	}
}

static uint64_t drops(const struct fwire_lcore_stats *st)
{
	uint64_t n = st->tx_dropped;

	for (int d = 0; d < FW_DROP_COUNT; d++)
		n += st->drop[d];
	return n;
}

void fwire_stats_line(const struct fwire_app *app, struct fwire_stats_line *prev, double interval_s)
{
	struct fw_keeper_status ks = {0};
	struct fwire_lcore_stats st;
	struct fw_serve_stats ss;

	if (app->keeper)
		fw_keeper_status(app->keeper, &ks);

	fwire_stats_sum(app, &st, &ss);
	if (interval_s > 0) {
		printf("stats: %.0f rx/s %.0f tx/s %.0f replies/s %.0f IDs/s | total rx %lu tx %lu "
		       "replies %lu IDs %lu retry %lu unsafe %lu drops %lu | mark %lu%s\n",
		       (double)(st.rx - prev->st.rx) / interval_s,
		       (double)(st.tx - prev->st.tx) / interval_s,
		       (double)(ss.requests - prev->ss.requests) / interval_s,
		       (double)(ss.ids - prev->ss.ids) / interval_s, (unsigned long)st.rx,
		       (unsigned long)st.tx, (unsigned long)ss.requests, (unsigned long)ss.ids,
		       (unsigned long)ss.status[FW_WIRE_ST_RETRY_AFTER],
		       (unsigned long)ss.status[FW_WIRE_ST_CLOCK_UNSAFE], (unsigned long)drops(&st),
		       (unsigned long)ks.mark_unix_ms, ks.mark_failing ? " (NOT PERSISTING)" : "");
	} else {
		printf("stats: total rx %lu tx %lu arp %lu icmp %lu replies %lu IDs %lu drops "
		       "%lu\n",
		       (unsigned long)st.rx, (unsigned long)st.tx, (unsigned long)st.arp,
		       (unsigned long)st.icmp, (unsigned long)ss.requests, (unsigned long)ss.ids,
		       (unsigned long)drops(&st));
	}
	fflush(stdout);
	prev->st = st;
	prev->ss = ss;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rte_telemetry commands under /flakewire/, for dpdk-telemetry.py:
 *   /flakewire/stats   totals over all lcores; drop_* by reason (drop_source,
 *                      drop_reflector_port, drop_rate_limited among them),
 *                      rate_limited (= drop_rate_limited + slipped), slipped
 *                      (answered RETRY_AFTER, counted in udp_replies too);
 *                      nd (neighbour advertisements built; rx = arp + nd +
 *                      icmp + udp_replies + drop_*), rx6, icmp6 and
 *                      udp6_replies (the IPv6 parts of rx, icmp, udp_replies)
 *   /flakewire/lcores  the same per lcore ("lcoreN": {...})
 *   /flakewire/clock   calibration, offset, slew, generation, mark
 * DPDK 22.11 telemetry callbacks take no user argument, hence the one
 * file-scope pointer below (set once before the callbacks are registered).
 *
 * DPDK 22.11 cannot unregister a command, and rte_eal_cleanup() leaves the
 * telemetry threads running while it unmaps DPDK's memory: a request during
 * a stop read freed lcores (a SIGSEGV at exit). Every /flakewire command
 * therefore runs through one gate (tel_dispatch) that fwire_telemetry_close()
 * shuts, waiting for the commands already inside.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "app.h"
#include "log.h"
#include "stats.h"
#include "telemetry.h"
#include "fw_wire.h"

static struct fwire_app *tel_app;

/* the gate: commands inside, and whether it is shut (both seq_cst: see enter) */
static atomic_int tel_inside;
static atomic_bool tel_shut;

#define TEL_MAX_CMDS 8
static struct {
	const char *name;
	telemetry_cb fn;
} tel_cmds[TEL_MAX_CMDS];
static unsigned tel_n_cmds;

static const char *const op_names[6] = {"op_unknown", "op_id",   "op_list",
					"op_range",   "op_info", "op_uuid7"};
static const char *const st_names[FW_WIRE_ST_COUNT] = {
	"st_ok",      "st_bad_request",  "st_bad_version", "st_retry_after",
	"st_refused", "st_clock_unsafe", "st_no_lease"};
static const char *const serve_drop_names[FW_SERVE_DROP_COUNT] = {"wire_short", "wire_magic",
								  "wire_reply"};

static void add_stats(struct rte_tel_data *d, const struct fwire_lcore_stats *st,
		      const struct fw_serve_stats *ss, const struct fw_gen_stats *gs)
{
	char name[64];

	rte_tel_data_add_dict_u64(d, "rx", st->rx);
	rte_tel_data_add_dict_u64(d, "tx", st->tx);
	rte_tel_data_add_dict_u64(d, "tx_dropped", st->tx_dropped);
	rte_tel_data_add_dict_u64(d, "arp", st->arp);
	rte_tel_data_add_dict_u64(d, "icmp", st->icmp);
	rte_tel_data_add_dict_u64(d, "udp_replies", st->udp);
	rte_tel_data_add_dict_u64(d, "nd", st->nd);
	rte_tel_data_add_dict_u64(d, "rx6", st->rx6);
	rte_tel_data_add_dict_u64(d, "icmp6", st->icmp6);
	rte_tel_data_add_dict_u64(d, "udp6_replies", st->udp6);
	for (int i = 0; i < FW_DROP_COUNT; i++) {
		snprintf(name, sizeof(name), "drop_%s", fwire_drop_names[i]);
		rte_tel_data_add_dict_u64(d, name, st->drop[i]);
	}
	rte_tel_data_add_dict_u64(d, "rate_limited", st->rate_limited);
	rte_tel_data_add_dict_u64(d, "slipped", st->slipped);
	rte_tel_data_add_dict_u64(d, "ids_capped", ss->capped);
	rte_tel_data_add_dict_u64(d, "rate_evictions", st->rate_evictions);
	rte_tel_data_add_dict_u64(d, "requests", ss->requests);
	rte_tel_data_add_dict_u64(d, "ids", ss->ids);
	rte_tel_data_add_dict_u64(d, "partial", ss->partial);
	for (size_t i = 0; i < FW_ARRAY_SIZE(op_names); i++)
		rte_tel_data_add_dict_u64(d, op_names[i], ss->ops[i]);
	rte_tel_data_add_dict_u64(d, "uuids", ss->uuids);
	for (int i = 0; i < FW_WIRE_ST_COUNT; i++)
		rte_tel_data_add_dict_u64(d, st_names[i], ss->status[i]);
	for (int i = 0; i < FW_SERVE_DROP_COUNT; i++)
		rte_tel_data_add_dict_u64(d, serve_drop_names[i], ss->drops[i]);
	rte_tel_data_add_dict_u64(d, "borrowed_ms", gs->borrowed_ms);
	rte_tel_data_add_dict_u64(d, "backsteps", gs->backsteps);
	rte_tel_data_add_dict_u64(d, "gen_retries", gs->retries);
	rte_tel_data_add_dict_u64(d, "gen_unsafe", gs->unsafe);
	rte_tel_data_add_dict_u64(d, "mark_hits", gs->mark_hits);
}

static void gen_stats_add(struct fw_gen_stats *to, const struct fw_gen_stats *from)
{
	to->issued += from->issued;
	to->borrowed_ms += from->borrowed_ms;
	to->backsteps += from->backsteps;
	to->retries += from->retries;
	to->unsafe += from->unsafe;
	to->mark_hits += from->mark_hits;
	to->max_backstep_ms = FW_MAX(to->max_backstep_ms, from->max_backstep_ms);
}

static int cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fwire_lcore_stats st;
	struct fw_serve_stats ss;
	struct fw_gen_stats gs = {0};

	(void)cmd;
	(void)params;
	fwire_stats_sum(tel_app, &st, &ss);
	for (uint32_t i = 0; i < tel_app->n_lcores; i++)
		gen_stats_add(&gs, fw_gen_stats(&tel_app->lcore[i].serve.gen));
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "lcores", tel_app->n_lcores);
	add_stats(d, &st, &ss, &gs);
	/* mbufs out of the pool (RX rings, lcore caches, in flight): flat when nothing leaks */
	if (tel_app->pool) {
		rte_tel_data_add_dict_u64(d, "mbuf_in_use",
					  rte_mempool_in_use_count(tel_app->pool));
		rte_tel_data_add_dict_u64(d, "mbuf_avail", rte_mempool_avail_count(tel_app->pool));
	}
	return 0;
}

static int cmd_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char name[32];

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (uint32_t i = 0; i < tel_app->n_lcores; i++) {
		const struct fwire_lcore *lc = &tel_app->lcore[i];
		struct rte_tel_data *c = rte_tel_data_alloc();
		if (!c)
			return -1;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_u64(c, "lcore", lc->lcore_id);
		rte_tel_data_add_dict_u64(c, "queue", lc->queue);
		rte_tel_data_add_dict_u64(c, "worker", lc->worker_id);
		rte_tel_data_add_dict_u64(c, "last_ms", fw_gen_last_ms(&lc->serve.gen));
		struct fwire_lcore_stats st;
		fwire_stats_lcore(lc, &st);
		add_stats(c, &st, &lc->serve.stats, fw_gen_stats(&lc->serve.gen));
		snprintf(name, sizeof(name), "lcore%u", lc->lcore_id);
		rte_tel_data_add_dict_container(d, name, c, 0);
	}
	return 0;
}

static int cmd_clock(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fw_keeper_snap s;
	char buf[32];

	(void)cmd;
	(void)params;
	if (!tel_app->keeper)
		return -1;
	fw_keeper_read(&fw_keeper_slots(tel_app->keeper, NULL)[0], &s);
	struct fw_keeper_status ks;
	fw_keeper_status(tel_app->keeper, &ks);
	rte_tel_data_start_dict(d);
	snprintf(buf, sizeof(buf), "%.0f", fw_clock_hz(&s.cal));
	rte_tel_data_add_dict_u64(d, "hz", (uint64_t)fw_clock_hz(&s.cal));
	/* an hour is 3.6e9 us: clamp to int (offset_ns has the exact value) */
	int64_t off_us = s.offset_ns / 1000;
	rte_tel_data_add_dict_int(
		d, "offset_us",
		(int)FW_MAX(FW_MIN(off_us, (int64_t)INT32_MAX), (int64_t)INT32_MIN));
	struct fw_clock_cal nominal = s.cal;
	nominal.mult = s.cal.nominal_mult;
	rte_tel_data_add_dict_u64(d, "nominal_hz", (uint64_t)fw_clock_hz(&nominal));
	rte_tel_data_add_dict_string(d, "offset_ns",
				     (snprintf(buf, sizeof(buf), "%ld", (long)s.offset_ns), buf));
	rte_tel_data_add_dict_int(d, "slew_ppb", s.cal.slew_ppb);
	rte_tel_data_add_dict_u64(d, "flags", s.cal.flags);
	rte_tel_data_add_dict_u64(d, "generation", s.cal.generation);
	rte_tel_data_add_dict_u64(d, "mark_unix_ms", s.mark_ms + tel_app->layout.epoch_ms);
	rte_tel_data_add_dict_u64(d, "mark_ms", s.mark_ms);
	rte_tel_data_add_dict_u64(d, "floor_unix_ms", ks.floor_unix_ms);
	rte_tel_data_add_dict_u64(d, "mark_writes", ks.mark_writes);
	rte_tel_data_add_dict_u64(d, "mark_failures", ks.mark_failures);
	rte_tel_data_add_dict_u64(d, "mark_failing", ks.mark_failing);
	rte_tel_data_add_dict_u64(d, "clock_events", ks.clock_events);
	rte_tel_data_add_dict_u64(d, "epoch_ms", tel_app->layout.epoch_ms);
	return 0;
}

/* The gate: true when a command may read the app; then tel_leave(). */
static bool tel_enter(void)
{
	/*
	 * Dekker's pattern: a command counts itself in, then looks at the gate;
	 * close() shuts the gate, then waits for the count. With seq_cst on
	 * both sides, either the command sees the gate shut or close() sees
	 * the command inside.
	 */
	atomic_fetch_add(&tel_inside, 1);
	if (atomic_load(&tel_shut)) {
		atomic_fetch_sub(&tel_inside, 1);
		return false;
	}
	return true;
}

static void tel_leave(void)
{
	atomic_fetch_sub(&tel_inside, 1);
}

void fwire_telemetry_close(void)
{
	atomic_store(&tel_shut, true);
	while (atomic_load(&tel_inside) > 0)
		usleep(100);
}

/* The one callback DPDK calls for every /flakewire command: the gate, then the command. */
static int tel_dispatch(const char *cmd, const char *params, struct rte_tel_data *d)
{
	int rc = -1;

	if (!tel_enter())
		return -1; /* stopping: the client reads null */
	for (unsigned i = 0; i < tel_n_cmds; i++) {
		if (strcmp(cmd, tel_cmds[i].name) == 0) {
			rc = tel_cmds[i].fn(cmd, params, d);
			break;
		}
	}
	tel_leave();
	return rc;
}

int fwire_telemetry_register_cmd(const char *name, telemetry_cb fn, const char *help)
{
	if (tel_n_cmds == TEL_MAX_CMDS) {
		FW_LOG(ERR, "telemetry: no room for %s (TEL_MAX_CMDS %d)", name, TEL_MAX_CMDS);
		return -1;
	}
	tel_cmds[tel_n_cmds].name = name;
	tel_cmds[tel_n_cmds].fn = fn;
	tel_n_cmds++;
	if (rte_telemetry_register_cmd(name, tel_dispatch, help)) {
		tel_n_cmds--;
		FW_LOG(ERR, "cannot register the telemetry command %s", name);
		return -1;
	}
	return 0;
}

int fwire_telemetry_register(struct fwire_app *app)
{
	tel_app = app;
	if (fwire_telemetry_register_cmd("/flakewire/stats", cmd_stats,
					 "flakewire totals over all lcores. No parameters") ||
	    fwire_telemetry_register_cmd("/flakewire/lcores", cmd_lcores,
					 "flakewire counters per lcore. No parameters") ||
	    fwire_telemetry_register_cmd("/flakewire/clock", cmd_clock,
					 "flakewire clock calibration and mark. No parameters"))
		return -1; /* logged */
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry's census (fleet_registry.h): which census a node's gauges
 * show (fw_fleet_census.h says how the root's nodes share one), copied into
 * f->st for /metrics. Run by the registry thread (and fw_fleet_start
 * before it runs).
 */
#include <errno.h>
#include <pthread.h>

#include "fleet_registry.h"
#include "fw_fleet_census.h"

static uint64_t census_period(const struct fw_fleet *f)
{
	return FW_MAX(f->cfg.renew_ms, 60000u); /* as round_once asks: at most once a minute */
}

static void census_export(struct fw_fleet *f, const struct fw_fleet_census_rec *cr, bool counted)
{
	pthread_mutex_lock(&f->mu);
	f->st.census_valid = true;
	f->st.total_ids = cr->c.total;
	f->st.free_ids = cr->c.free;
	f->st.stranded_ids = cr->c.stranded;
	f->st.next_stranded_unix = cr->c.stranded ? cr->c.next_stranded : 0;
	f->st.census_unix = cr->at;
	f->st.censuses += counted;
	pthread_mutex_unlock(&f->mu);
}

/* This round's claim scan's census (then spent), written to ROOT/census. */
static bool census_of_scan(struct fw_fleet *f)
{
	struct fw_fleet_scan_census *sc = &f->scan_census;
	uint64_t now_l = fw_fleet_recipe_now(&f->r);
	/* a scan of this round (a claim takes seconds at most), not an older one */
	if (!sc->valid || sc->at + census_period(f) / 4 < now_l)
		return false;
	struct fw_fleet_census_rec cr;
	fw_fleet_census_rec_of(&f->r, &sc->c, sc->at, &cr);
	sc->valid = false;
	(void)fw_fleet_census_publish(&f->r, f->root, &cr); /* gauges: best effort */
	census_export(f, &cr, true);
	return true;
}

int fleet_census(struct fw_fleet *f)
{
	struct fw_fleet_census_rec cr;
	enum fw_fleet_census_src src;
	if (census_of_scan(f))
		return 0;
	int rc =
		fw_fleet_census_shared(&f->r, f->root, census_period(f), fleet_rand64(), &cr, &src);
	if (rc == 0)
		census_export(f, &cr, src != FW_FLEET_CENSUS_READ);
	return rc;
}

int fleet_census_full(struct fw_fleet *f)
{
	struct fw_fleet_census c;
	struct fw_fleet_census_rec cr;
	if (census_of_scan(f))
		return 0;
	uint64_t now_l = fw_fleet_recipe_now(&f->r);
	int rc = fw_fleet_census_take(&f->r, now_l, &c);
	if (rc != 0)
		return rc;
	fw_fleet_census_rec_of(&f->r, &c, now_l, &cr);
	(void)fw_fleet_census_publish(&f->r, f->root, &cr);
	census_export(f, &cr, true);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry over any store (fw_fleet_store.h): fw_fleet_create() is this
 * with the store its config names; tests pass an in-memory one. Everything
 * else in fw_fleet.h works the same on the result. Both functions are the
 * registry's (registry.c, registry_round.c).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet.h"
#include "fw_fleet_store.h"

/*
 * As fw_fleet_create, over @store (taken over: freed by fw_fleet_free, and
 * here on error); cfg->connect is not looked at.
 */
int fw_fleet_create_store(const struct fw_fleet_config *cfg, uint32_t n_slots,
			  struct fw_fleet_store *store, struct fw_fleet **out, char *err,
			  size_t errlen);

/*
 * The wait after @fails failed rounds in a row (>= 1): 250 ms doubling, at
 * most @renew_ms, with +-25 % jitter from @rnd so a fleet cut off together
 * does not come back in step. Always in [b - b/4, b - b/4 + b/2) for that b.
 */
uint64_t fw_fleet_backoff_ms(uint32_t fails, uint64_t renew_ms, uint64_t rnd);

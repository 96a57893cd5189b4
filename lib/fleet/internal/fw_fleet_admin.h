/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operators' tools (admin.c) over a store already made:
 * fw_fleet_list_read, fw_fleet_release and fw_fleet_secure (fw_fleet.h) are
 * these over the store a connect string names; tests pass an in-memory one.
 * One-shot sessions, no liveness record of their own.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet.h"
#include "fw_fleet_store.h"

/*
 * As fw_fleet_list_read, over @s (not freed). Returns 0; -ENOENT (no fleet
 * at @root); FW_EFLEET_STORE (@err says why); -ENOMEM.
 */
int fw_fleet_list_store(struct fw_fleet_store *s, const char *root, uint32_t timeout_ms,
			struct fw_fleet_list *out, char *err, size_t errlen);

/* As fw_fleet_release, over @s (not freed); the same codes. */
int fw_fleet_release_store(struct fw_fleet_store *s, const char *root, uint32_t worker,
			   unsigned flags, uint32_t timeout_ms, char *err, size_t errlen);

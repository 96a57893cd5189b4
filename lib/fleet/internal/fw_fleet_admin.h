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

/*
 * As fw_fleet_init, over @s (not freed). The recipe: the store-wide layout
 * (FW_FLEET_IDS/layout, created by the first init, S1) must equal @l; the
 * datacenter value's record (FW_FLEET_IDS/dc/NNNN) is created for @root (S1:
 * of two inits of one value, one wins) or must already name @root; then the
 * root record is created (S1), or written over a root made before (S2 on its
 * version: adopted, its records kept). Same codes as fw_fleet_init.
 */
int fw_fleet_init_store(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			uint32_t datacenter, const char *reserve, uint32_t timeout_ms, char *err,
			size_t errlen);

/* As fw_fleet_static_check, over @s (not freed); the same codes. */
int fw_fleet_static_store(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			  uint32_t datacenter, const uint32_t *workers, uint32_t n,
			  uint32_t timeout_ms, char *err, size_t errlen);

/* As fw_fleet_fence, over @s (not freed); the same codes. */
int fw_fleet_fence_store(struct fw_fleet_store *s, const char *root, const struct fw_layout *l,
			 uint32_t datacenter, const char *reserve, uint64_t lease_ms,
			 uint32_t timeout_ms, uint64_t *fence_unix, char *err, size_t errlen);

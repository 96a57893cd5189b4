/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records' text (pure: no store, no clock, no I/O). Every store keeps
 * the same text, so `flakectl fleet ls` and the proof read the same fields
 * whatever the store.
 *
 *   layout record  "flakewire-fleet v1\nepoch_ms=E\ndatacenter_bits=D\n
 *                   worker_bits=W\nsequence_bits=S\n": the layout every member
 *                   of the fleet shares (a mismatch refuses to start)
 *   worker record  "flakewire-worker v1\nowner=IDENTITY\ntoken=HEX16\n
 *                   lease_until=MS\nfloor=MS\n": owner empty = free (released);
 *                   MS are layout ms (since the epoch); token is random per
 *                   process start, so a process recognises its own write
 *                   after a lost reply
 *
 * Keys (the one place they are spelt): ROOT/workers/NNNNN (5 digits, zero
 * padded), ROOT/nodes/IDENTITY (liveness), ROOT/clock (ZooKeeper's time).
 * See doc/design/fleet-safety.md for what each field guarantees.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet.h"
#include "fw_layout.h"

/* One worker record. */
struct fw_fleet_rec {
	char owner[FW_FLEET_IDENTITY_MAX]; /* "" when free */
	uint64_t token;
	uint64_t lease; /* lease_until, layout ms */
	uint64_t floor; /* layout ms: the owner issues only above */
};

/* Writes @r's text into @buf; returns its length (< @cap), or -ENOSPC. */
int fw_fleet_rec_format(char *buf, size_t cap, const struct fw_fleet_rec *r);

/*
 * Parses a worker record of @len bytes. Returns 0, or -EINVAL (garbled:
 * wrong magic, a field missing or out of range, an owner too long): such a
 * record is never claimed nor written.
 */
int fw_fleet_rec_parse(const char *buf, int len, struct fw_fleet_rec *r);

/* The layout record's text; returns its length or -ENOSPC. */
int fw_fleet_layout_format(char *buf, size_t cap, const struct fw_layout *l);

/* Parses a layout record. Returns 0 or -EINVAL (not a flakewire fleet layout). */
int fw_fleet_layout_parse(const char *buf, int len, struct fw_layout *l);

/* True when @a and @b are the same layout (epoch and the three widths). */
bool fw_fleet_layout_same(const struct fw_layout *a, const struct fw_layout *b);

/* True for 1-127 characters of [A-Za-z0-9._:-], not "." or "..". */
bool fw_fleet_identity_ok(const char *s);

/* Keys. Each returns the length written (truncated to @cap like snprintf). */
int fw_fleet_key_worker(char *buf, size_t cap, const char *root, uint32_t worker);
int fw_fleet_key_node(char *buf, size_t cap, const char *root, const char *identity);
int fw_fleet_key_sub(char *buf, size_t cap, const char *root, const char *sub);

/*
 * Parses a child name of ROOT/workers ("00042"). Returns the worker ID, or
 * -1 for a name that is not one below @total.
 */
int32_t fw_fleet_key_worker_parse(const char *name, uint32_t total);

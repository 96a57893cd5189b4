/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bit layout of a 64-bit ID, most significant bit first:
 *
 *   | 0 | time_bits: ms since epoch | dc_bits | worker_bits | seq_bits |
 *
 * The sign bit is always 0, so every ID is a positive int64 (SQL BIGINT),
 * and time_bits + dc_bits + worker_bits + seq_bits == 63. The default is
 * 41/0/10/12 with epoch 2026-01-01T00:00:00Z. Twitter (41/5/5/12, epoch
 * 1288834974657) and Discord (42/5/5/12 read as dc=worker id, epoch
 * 1420070400000) are the same shape.
 *
 * Pure arithmetic: no allocation, no I/O, usable anywhere.
 *
 * Manual: doc/ids-and-uuidv7.md#the-64-bit-id.
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"

/* Accepted ranges, checked by fw_layout_init(). */
#define FW_LAYOUT_SEQ_BITS_MIN    1
#define FW_LAYOUT_SEQ_BITS_MAX    22
#define FW_LAYOUT_DC_BITS_MAX     10
#define FW_LAYOUT_WORKER_BITS_MAX 16
#define FW_LAYOUT_TIME_BITS_MIN   32 /* ~49.7 days of milliseconds */
/* How far in the future (relative to "now") an epoch may lie: one day. */
#define FW_LAYOUT_EPOCH_SLACK_MS  (24ULL * 3600 * 1000)

struct fw_layout {
	uint64_t epoch_ms; /* unix ms that encodes as timestamp 0 */
	uint8_t time_bits;
	uint8_t dc_bits;
	uint8_t worker_bits;
	uint8_t seq_bits;
};

/* An ID taken apart. */
struct fw_id_parts {
	uint64_t ms;      /* ms since the layout's epoch */
	uint64_t unix_ms; /* ms since 1970-01-01T00:00:00Z */
	uint32_t datacenter;
	uint32_t worker;
	uint32_t sequence;
};

/* Fills *l with the default layout (41/0/10/12, epoch FW_DEFAULT_EPOCH_MS). */
FW_API void fw_layout_default(struct fw_layout *l);

/*
 * Builds and validates a layout; time_bits is 63 minus the other widths.
 *
 * @now_unix_ms  the current time, to reject an epoch more than
 *               FW_LAYOUT_EPOCH_SLACK_MS in the future; 0 skips that check.
 * Returns 0, or FW_ELAYOUT_SEQ, FW_ELAYOUT_NODE, FW_ELAYOUT_TIME,
 * FW_ELAYOUT_EPOCH (l is left unchanged on error).
 */
FW_API int fw_layout_init(struct fw_layout *l, uint64_t epoch_ms, unsigned dc_bits,
			  unsigned worker_bits, unsigned seq_bits, uint64_t now_unix_ms);

/*
 * Validates an existing layout (for one received off the wire or built by hand).
 * Returns 0, FW_ELAYOUT_SUM or one of the fw_layout_init() codes.
 */
FW_API int fw_layout_validate(const struct fw_layout *l, uint64_t now_unix_ms);

/*
 * Encodes one ID. @ms is milliseconds since the layout's epoch.
 * Returns 0, or FW_ERANGE when a value does not fit its field (*id untouched).
 */
FW_API int fw_layout_encode(const struct fw_layout *l, uint64_t ms, uint32_t datacenter,
			    uint32_t worker, uint32_t sequence, uint64_t *id);

/*
 * Decodes one ID. Returns 0, or FW_ENEGATIVE when bit 63 is set.
 */
FW_API int fw_layout_decode(const struct fw_layout *l, uint64_t id, struct fw_id_parts *out);

/*
 * Checks a run of consecutive IDs @first .. @first + @n - 1 that one reply
 * of (@datacenter, @worker) carries, as every receiver of IDs does (the
 * clients, the load generators' verifier): not empty, not wrapping, no ID
 * with bit 63 set and, with a layout @l, the first and the last ID from that
 * datacenter and worker (a run that carried into the worker field ends at
 * another one, so every ID between is covered). Without a layout (@l NULL)
 * only the run's bounds are checked. @a and @b (each may be NULL) get the
 * first and last IDs' parts whenever @l is given and FW_ENEGATIVE is not
 * returned.
 * Returns 0, FW_ENEGATIVE (empty, wrapping, bit 63 set) or FW_EINVALID
 * (another datacenter or worker).
 */
FW_API int fw_layout_check_run(const struct fw_layout *l, uint64_t first, uint64_t n,
			       uint32_t datacenter, uint32_t worker, struct fw_id_parts *a,
			       struct fw_id_parts *b);

/* IDs one worker can issue per millisecond: 2^seq_bits. */
FW_API uint64_t fw_layout_ids_per_ms(const struct fw_layout *l);

/* IDs one worker can issue per second: 1000 * 2^seq_bits. */
FW_API uint64_t fw_layout_ids_per_sec(const struct fw_layout *l);

/* Distinct datacenter values (2^dc_bits) and worker values (2^worker_bits). */
FW_API uint32_t fw_layout_datacenters(const struct fw_layout *l);
FW_API uint32_t fw_layout_workers(const struct fw_layout *l);

/* The last unix ms the timestamp field can represent: epoch + 2^time_bits - 1. */
FW_API uint64_t fw_layout_end_unix_ms(const struct fw_layout *l);

/*
 * Formats unix ms as ISO 8601 UTC with milliseconds ("2026-01-01T00:00:00.000Z").
 * @buf must hold at least FW_ISO8601_LEN bytes. Returns buf.
 */
#define FW_ISO8601_LEN 64
FW_API char *fw_format_iso8601(uint64_t unix_ms, char *buf);

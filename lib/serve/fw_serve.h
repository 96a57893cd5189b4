/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Answering one request datagram: the protocol logic shared by every
 * responder (app/flakesock over kernel sockets, app/flakewire over DPDK).
 * It parses the request, issues IDs from the caller's generator, applies the
 * anti-amplification rule and writes the reply in place, over the request.
 *
 * One struct fw_serve per worker thread/lcore: no locks, no I/O, no clock
 * reads (the caller passes @now, read once per burst). UUID7 requests take
 * (ms, sequence) from the same generator as IDs and their random bits from
 * the struct's own ChaCha20 keystream (fw_rng.h: one getrandom(2) call per
 * 64 MiB of keystream, none otherwise).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_gen.h"
#include "fw_rng.h"
#include "fw_uuid.h"
#include "fw_wire.h"

/* Why a datagram got no reply. */
enum fw_serve_drop {
	FW_SERVE_DROP_SHORT = 0, /* under 24 bytes */
	FW_SERVE_DROP_MAGIC,     /* wrong magic */
	FW_SERVE_DROP_REPLY,     /* a reply (op has the reply bit): never answer, no loops */
	FW_SERVE_DROP_COUNT
};

struct fw_serve_stats {
	uint64_t requests;                   /* datagrams answered */
	uint64_t ops[6];                     /* answered, by op (0: unknown op) */
	uint64_t status[FW_WIRE_ST_COUNT];   /* replies by status */
	uint64_t drops[FW_SERVE_DROP_COUNT]; /* datagrams dropped, by reason */
	uint64_t ids;                        /* IDs issued in replies */
	uint64_t partial;                    /* replies with FW_WIRE_F_PARTIAL */
	uint64_t capped;                     /* RANGE requests cut to range_ids_max */
	uint64_t uuids;                      /* UUIDv7 issued in replies (also counted in ids) */
};

struct fw_serve_config {
	uint16_t list_max;      /* most IDs per LIST reply, <= FW_WIRE_LIST_MAX */
	uint16_t ranges_max;    /* most ranges per RANGE reply, <= FW_WIRE_RANGES_MAX */
	uint32_t mark_retry_us; /* retry_after_us sent when the mark is reached */
	uint32_t range_ids_max; /* most IDs one RANGE request is given, <= FW_WIRE_RANGE_IDS_MAX;
				 * a larger count gets this many, FW_WIRE_F_PARTIAL */
};

struct fw_serve {
	struct fw_gen gen;
	struct fw_serve_config cfg;
	uint32_t extra_flags;    /* FW_WIRE_F_* the owner adds (SLEWING), set per burst */
	int64_t clock_offset_ns; /* reported by INFO, set by the owner */
	struct fw_serve_stats stats;
	struct fw_uuid7_fmt uuid7; /* this worker's UUIDv7 layout */
	struct fw_rng rng;         /* random bits of UUIDv7 */
};

/* Fills *cfg with the defaults: the wire maxima, 1000 µs mark retry. */
FW_API void fw_serve_config_default(struct fw_serve_config *cfg);

/*
 * Initialises *s with a generator for @layout/@gcfg and @cfg (NULL: defaults)
 * and seeds its random number generator.
 * Returns 0 or a fw_gen_init() code; -EINVAL when a maximum in @cfg is 0 or
 * above the wire maximum; a fw_rng_init() code.
 */
FW_API int fw_serve_init(struct fw_serve *s, const struct fw_layout *layout,
			 const struct fw_gen_config *gcfg, const struct fw_serve_config *cfg);

/*
 * Answers the request of @len bytes in @buf, writing the reply over it.
 *
 * @now      ms since the layout epoch, read once per burst by the caller
 * @cap      bytes writable at @buf (>= @len)
 * @trusted  the source is in the trusted set: the reply may be larger than
 *           the request (up to min(@cap, FW_WIRE_MTU_PAYLOAD)); otherwise it
 *           is at most @len bytes.
 * Returns the reply length (> 0) to send back, or a negative code when the
 * datagram is dropped (FW_EWIRE_SHORT, FW_EWIRE_MAGIC, FW_EWIRE_BAD for a
 * reply); every outcome is counted in s->stats.
 */
FW_API int fw_serve_answer(struct fw_serve *s, uint64_t now, void *buf, size_t len, size_t cap,
			   bool trusted);

/* Adds the counters of @from into @to (for totals over lcores). */
FW_API void fw_serve_stats_add(struct fw_serve_stats *to, const struct fw_serve_stats *from);

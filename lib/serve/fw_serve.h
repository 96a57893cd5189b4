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
 *
 * Manual: doc/responders.md, doc/performance.md#design-notes-the-serve-path.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
	bool no_lease;           /* set by the owner per burst: the generator's mark is a fleet
				  * lease, so reaching it answers NO_LEASE, not RETRY_AFTER */
	struct fw_serve_stats stats;
	struct fw_uuid7_fmt uuid7; /* this worker's UUIDv7 layout */
	struct fw_rng rng;         /* random bits of UUIDv7 */
	uint64_t reply_who;        /* bytes 16-23 of an OK reply as stored: datacenter, worker, 0 */
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
 * Re-derives what a reply says about the worker (the UUIDv7 node bits and
 * bytes 16-23 of an OK reply) from s->gen.cfg. Call after the generator's
 * worker ID changed (a fleet worker swap, fw_keeper_worker_swap), before the
 * next answer, so no reply or UUID carries the old worker ID.
 * Returns 0 or a fw_uuid7_fmt_init() code.
 */
FW_API int fw_serve_worker_changed(struct fw_serve *s);

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

/* Big-endian 64-bit value from/to host order (lib/serve links no DPDK). */
static inline uint64_t fw_serve_be64(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* The first 8 bytes of a plain ID request: magic, version 1, op ID, status 0, flags 0, count 1. */
#define FW_SERVE_ID_REQ_W0  0x464B010100000001ull
/* ... and of its OK reply, before the flags (byte 5) are or'ed in. */
#define FW_SERVE_ID_REP_W0  (FW_SERVE_ID_REQ_W0 | (uint64_t)FW_WIRE_OP_REPLY << 32)
#define FW_SERVE_ID_REP_LEN (FW_WIRE_HDR_LEN + FW_WIRE_ID_LEN)

/*
 * A run of plain single-ID answers for a burst loop: the generator's fast
 * path in a fw_gen_run and the reply's first word computed once a burst,
 * in the caller's registers. fw_serve_run_begin() after the burst's clock
 * read (extra_flags set), fw_serve_run_answer() per datagram,
 * fw_serve_run_end() at the end of the burst. Same replies, same IDs, same
 * counters as fw_serve_answer() per datagram (tests/dataplane/test_pkt.c).
 * Between begin and end nothing else may issue from s->gen: a caller that
 * answers a datagram another way ends the run first and begins it again.
 */
struct fw_serve_run {
	struct fw_gen_run gen;
	uint64_t rep; /* bytes 0-7 of a plain OK reply as stored, flags included */
	uint64_t who; /* bytes 16-23 (s->reply_who) */
};

static inline void fw_serve_run_begin(struct fw_serve *s, uint64_t now, struct fw_serve_run *r)
{
	/*
	 * The fast path is open only after a call that left the generator's
	 * flags at 0 (fw_gen_fast_ready), so a run's replies carry the owner's
	 * flags alone.
	 */
	fw_gen_run_begin(&s->gen, now, &r->gen);
	r->rep = fw_serve_be64(FW_SERVE_ID_REP_W0 | (uint64_t)(uint8_t)s->extra_flags << 16);
	r->who = s->reply_who;
}

/*
 * Writes back the run's IDs and moves the counters of its replies (one ID
 * each), as fw_serve_answer() moves them for each.
 */
static inline void fw_serve_run_end(struct fw_serve *s, struct fw_serve_run *r)
{
	uint64_t n = r->gen.seq - r->gen.seq0;

	s->stats.requests += n;
	s->stats.ops[FW_WIRE_OP_ID] += n;
	s->stats.status[FW_WIRE_ST_OK] += n;
	s->stats.ids += n;
	fw_gen_run_end(&s->gen, &r->gen);
}

/*
 * fw_serve_answer() within a run: same parameters and return values. A
 * datagram the run does not answer itself (any other request, a reply over
 * the budget, the run used up: a new ms, a borrow, a clock fault) ends the
 * run, goes to fw_serve_answer() and begins the run again; the run stays in
 * the caller's registers (its address never leaves the inlined code).
 */
static inline int fw_serve_run_answer(struct fw_serve *s, struct fw_serve_run *r, uint64_t now,
				      void *buf, size_t len, size_t cap, bool trusted)
{
	uint8_t *b = buf;
	uint64_t w0 = 0, id;

	if (FW_LIKELY(len >= FW_WIRE_HDR_LEN))
		memcpy(&w0, b, sizeof(w0));
	if (FW_UNLIKELY(w0 != fw_serve_be64(FW_SERVE_ID_REQ_W0) || cap < FW_SERVE_ID_REP_LEN ||
			(!trusted && len < FW_SERVE_ID_REP_LEN) ||
			!fw_gen_run_next(&r->gen, &id))) {
		fw_serve_run_end(s, r);
		int n = fw_serve_answer(s, now, buf, len, cap, trusted);
		fw_serve_run_begin(s, now, r);
		return n;
	}
	uint64_t idbe = fw_serve_be64(id);
	memcpy(b, &r->rep, 8);      /* magic, version, op | REPLY, status OK, flags, count 1 */
	memcpy(b + 16, &r->who, 8); /* datacenter, worker, retry_after_us 0; the tag stays */
	memcpy(b + 24, &idbe, 8);   /* the ID */
	return FW_SERVE_ID_REP_LEN;
}

/*
 * fw_serve_answer() with the common case inline: a run of one datagram
 * (a plain single-ID request, version 1, op ID, count 1, status and flags
 * 0, whose reply fits the budget and whose ID the generator's fast path
 * gives; every other datagram goes to fw_serve_answer()). Same parameters
 * and return values as fw_serve_answer().
 */
static inline int fw_serve_answer_fast(struct fw_serve *s, uint64_t now, void *buf, size_t len,
				       size_t cap, bool trusted)
{
	struct fw_serve_run r;

	fw_serve_run_begin(s, now, &r);
	int n = fw_serve_run_answer(s, &r, now, buf, len, cap, trusted);
	fw_serve_run_end(s, &r);
	return n;
}

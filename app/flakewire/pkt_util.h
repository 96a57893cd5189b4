/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What pkt.c (IPv4) and pkt6.c (IPv6) share, written once: byte order with
 * compiler builtins, one's-complement sums (RFC 1071) and their incremental
 * update (RFC 1624), drop accounting (a source's by its verdict: martian
 * or outside [net] allow), and the answer to a rate-limited
 * request (dropped, or slipped: a bare RETRY_AFTER header). Internal to the
 * packet module: nothing outside pkt.c and pkt6.c includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <rte_byteorder.h>
#include <rte_common.h>

#include "fw_policy.h"
#include "fw_wire.h"
#include "lcore.h"
#include "pkt.h"

/*
 * Byte order with compiler builtins: DPDK 22.11's rte_be_to_cpu_16 is an
 * asm statement the compiler can neither fold nor schedule (17 instructions
 * a request went to it).
 */
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
#define BE16(x) __builtin_bswap16((uint16_t)(x))
#define BE32(x) __builtin_bswap32((uint32_t)(x))
#else
#define BE16(x) ((uint16_t)(x))
#define BE32(x) ((uint32_t)(x))
#endif

/* Counts @why against @lc; returns false (no reply), for `return pkt_drop(...)`. */
static inline bool pkt_drop(struct fwire_lcore *lc, enum fwire_drop why)
{
	lc->st.drop[why]++;
	return false;
}

/*
 * A source whose verdict @v (fw_policy_cached*) is not allowed: a martian is
 * counted by its reason, any other source as FW_DROP_SOURCE. Out of line
 * and cold: the fast path tests FW_POLICY_SRC_ALLOWED alone, a martian's
 * reason is read only here. Returns false.
 */
static __rte_noinline __rte_cold bool pkt_drop_source(struct fwire_lcore *lc, uint32_t v)
{
	enum fw_policy_martian m = fw_policy_src_martian(v);

	return pkt_drop(lc, m != FW_POLICY_MARTIAN_NONE ? FW_DROP_MARTIAN(m) : FW_DROP_SOURCE);
}

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), all values as stored (network order). */
static inline uint16_t cksum_adjust(uint16_t hc, uint16_t old, uint16_t new)
{
	uint32_t s = (uint16_t)~hc + (uint32_t)(uint16_t)~old + new;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* One's-complement addition of @w to @sum in 64 bits: add, then add the carry back. */
static inline uint64_t cksum_add(uint64_t sum, uint64_t w)
{
	sum += w;
	return sum + (sum < w);
}

/*
 * Folds a 64-bit one's-complement sum to 16 bits (RFC 1071 2(C)): 64 to 32
 * bits with the carry added back, then Linux's csum_fold: adding the value
 * rotated by 16 leaves the 16-bit sum, carry included, in the upper half.
 */
static inline uint16_t cksum_fold(uint64_t sum)
{
	uint32_t lo = (uint32_t)sum, hi = (uint32_t)(sum >> 32);

	lo += hi;
	lo += lo < hi;
	lo += (lo >> 16) | (lo << 16);
	return (uint16_t)(lo >> 16);
}

/*
 * @sum plus the @n words of @w in one's complement (end-around carry); @n is
 * a constant at every call. On x86-64 one add-with-carry chain (one
 * instruction and one cycle of latency a word, the carry added back twice
 * at the end: a carry into an all-ones sum leaves one more); elsewhere
 * cksum_add per word.
 */
static __rte_always_inline uint64_t cksum_addn(uint64_t sum, const uint64_t *w, unsigned n)
{
#if defined(__x86_64__)
	unsigned long long s = sum;
	unsigned char c = 0;

#pragma GCC unroll 8
	for (unsigned i = 0; i < n; i++)
		c = _addcarry_u64(c, s, w[i], &s);
	c = _addcarry_u64(c, s, 0, &s);
	return s + c;
#else
#pragma GCC unroll 8
	for (unsigned i = 0; i < n; i++)
		sum = cksum_add(sum, w[i]);
	return sum;
#endif
}

/* The sum of @n (at most 8) 8-byte words at @p, unrolled (n is a constant at every call). */
static __rte_always_inline uint64_t cksum_words(const uint8_t *p, unsigned n, uint64_t sum)
{
	uint64_t w[8];

	memcpy(w, p, 8 * n);
	return cksum_addn(sum, w, n);
}

/*
 * One's-complement sum of @len bytes added to @sum, 64 bits at a time with
 * end-around carry, folded to 16 bits: the value of DPDK 22.11's
 * rte_raw_cksum (16 bits per step) in a fraction of the instructions. With a
 * constant @len (the IPv4 header, a single-ID datagram) the loop unrolls.
 */
static inline uint16_t cksum_sum(const void *buf, size_t len, uint64_t sum)
{
	const uint8_t *p = buf;
	uint64_t w;
	uint32_t v;
	uint16_t h = 0;

	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&w, p, 8);
		sum = cksum_add(sum, w);
	}
	if (len >= 4) {
		memcpy(&v, p, 4);
		sum = cksum_add(sum, v);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		sum = cksum_add(sum, h);
		p += 2;
		len -= 2;
	}
	if (len) {
		h = 0;
		memcpy(&h, p, 1);
		sum = cksum_add(sum, h);
	}
	return cksum_fold(sum);
}

/*
 * The slipped answer to a rate-limited request (either family): its header
 * with status RETRY_AFTER, 24 bytes, never more than the request. Returns
 * the length, or -1 when the datagram is no request.
 */
static __rte_noinline int pkt_slip_reply(const struct fwire_lcore *lc, uint8_t *payload, size_t len,
					 uint32_t retry_us)
{
	struct fw_wire_hdr h;

	if (fw_wire_parse_request(payload, len, &h) != 0)
		return -1;
	h.status = FW_WIRE_ST_RETRY_AFTER;
	h.flags = 0;
	h.retry_after_us = retry_us;
	h.datacenter = (uint16_t)lc->serve.gen.cfg.datacenter;
	h.worker = (uint16_t)lc->serve.gen.cfg.worker;
	return fw_wire_write_status(payload, len, &h);
}

/*
 * A request over the rate (@v from fw_rate_check*, not FW_RATE_PASS):
 * counted, then dropped, or slipped when @v says so and the payload parses.
 * Returns the slip reply's length written over @payload, or -1 when the
 * request is dropped (counted as FW_DROP_RATE).
 */
static inline int pkt_limited(struct fwire_lcore *lc, enum fw_rate_verdict v, uint32_t retry_us,
			      uint8_t *payload, size_t len)
{
	int n;

	lc->st.rate_limited++;
	if (v == FW_RATE_DROP || (n = pkt_slip_reply(lc, payload, len, retry_us)) < 0) {
		pkt_drop(lc, FW_DROP_RATE);
		return -1;
	}
	lc->st.slipped++;
	return n;
}

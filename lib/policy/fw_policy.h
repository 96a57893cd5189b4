/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who may ask, and how often: the responder's defence against hostile
 * traffic, with no DPDK, no I/O and no clock reads (the caller passes the
 * TSC it read once per burst), so it is unit-tested anywhere.
 *
 * Two parts:
 *  - struct fw_policy: the source policy, read-only after fw_policy_init()
 *    and shared by every lcore: allowed source prefixes, trusted source
 *    prefixes (replies may outgrow their request, no rate limit), both for
 *    IPv4 and IPv6, and the source ports of well-known UDP reflectors (DNS,
 *    NTP, SSDP, memcached...), whose "requests" are spoofed or the answers
 *    of a reflection attack. A source's verdict (allowed, trusted) is cached
 *    per reader in a struct fw_policy_cache, the same way for both families:
 *    the prefix lists are walked on a miss only.
 *    lib/responder (fw_responder_policy) builds it (and the rate limiter's
 *    settings) from the configuration: the one place both responders take
 *    [net] allow, trusted, reflector_ports and rate* from.
 *    A responder reading frames from the wire (flakewire) also turns on the
 *    martian filter (fw_policy_set_martians, fw_policy_add_self*): a source
 *    no peer can have (loopback, unspecified, multicast, broadcast, one of
 *    its own addresses) gets a verdict that is never allowed nor trusted
 *    and carries the reason, so the filter costs a cache hit nothing.
 *  - struct fw_rate: per-source-prefix rate limiting, one table per lcore
 *    (no sharing, no atomics). A small set-associative hash table keyed by
 *    the source prefix holds one token bucket per prefix; a full set evicts
 *    its oldest entry. Each bucket is kept in the virtual-time form of a
 *    token bucket (GCRA, the "theoretical arrival time"): refilling it is
 *    implicit in comparing with the burst's TSC, so a packet costs one hash
 *    lookup, a compare and an add; no division. Over the limit, every Nth
 *    request of a prefix "slips" (is answered with RETRY_AFTER, like DNS
 *    response-rate-limiting's slip) so a real client learns to back off.
 *
 * IPv4 addresses are in host byte order; IPv6 addresses are the 16 bytes
 * of the wire (network order); ports in host byte order. IPv6 sources have
 * their own allowed prefixes (fw_policy_set_allow6) and their own rate
 * prefix length (fw_rate_config.prefix_len6: a /64 or /56 is one customer,
 * so per-address limits would be useless); both families share one table.
 *
 * Manual: doc/responders.md#rate-limits, doc/ipv6.md#source-policy.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fw_common.h"

#define FW_POLICY_PREFIXES_MAX 16 /* most allowed prefixes */

/* An IPv4 prefix: an address a matches when (a & mask) == addr. */
struct fw_policy_prefix {
	uint32_t addr;
	uint32_t mask;
};

/* Verdicts of fw_policy_check(). */
enum fw_policy_verdict {
	FW_POLICY_PASS = 0,
	FW_POLICY_DENY_SOURCE, /* source address outside every allowed prefix */
	FW_POLICY_DENY_PORT,   /* source port of a well-known reflector */
};

/*
 * An IPv6 prefix, as two 64-bit halves in host order (hi: bytes 0-7 of the
 * address): an address matches when both masked halves equal the prefix's.
 */
struct fw_policy_prefix6 {
	uint64_t hi, lo;
	uint64_t mhi, mlo;
};

#define FW_POLICY_SELF_MAX 16 /* most own addresses per family (fw_policy_add_self*) */

/*
 * Why a source address is a martian: an address no peer on the wire can
 * have (RFC 1122 3.2.1.3, RFC 4291 2.5.2, 2.5.3, 2.7), or one of the
 * responder's own. Only a responder reading frames from the wire checks
 * them (fw_policy_set_martians): a kernel socket never sees such a datagram
 * from outside, and loopback clients of a local responder are real.
 */
enum fw_policy_martian {
	FW_POLICY_MARTIAN_NONE = 0,
	FW_POLICY_MARTIAN_LOOPBACK,    /* 127.0.0.0/8, ::1 */
	FW_POLICY_MARTIAN_UNSPECIFIED, /* 0.0.0.0/8 ("this network"), :: */
	FW_POLICY_MARTIAN_MULTICAST,   /* 224.0.0.0/4, ff00::/8 */
	FW_POLICY_MARTIAN_BROADCAST,   /* 255.255.255.255 */
	FW_POLICY_MARTIAN_SELF,        /* one of the responder's own addresses */
	FW_POLICY_MARTIAN_COUNT
};

struct fw_policy {
	uint32_t n_allow;
	struct fw_policy_prefix allow[FW_POLICY_PREFIXES_MAX];
	uint64_t reflector[65536 / 64]; /* bit per source port */
	uint32_t n_allow6;
	struct fw_policy_prefix6 allow6[FW_POLICY_PREFIXES_MAX];
	uint32_t n_trusted, n_trusted6;
	struct fw_policy_prefix trusted[FW_POLICY_PREFIXES_MAX];
	struct fw_policy_prefix6 trusted6[FW_POLICY_PREFIXES_MAX];
	/* the martian filter (fw_policy_set_martians, fw_policy_add_self*) */
	bool martians;
	uint32_t n_self, n_self6;
	uint32_t self[FW_POLICY_SELF_MAX]; /* host order */
	uint8_t self6[FW_POLICY_SELF_MAX][16];
};

/*
 * The prefix @addr/@len (host order, 0 <= len <= 32): the address bits
 * below the prefix are cleared. Returns it; len above 32 is taken as 32.
 */
FW_API struct fw_policy_prefix fw_policy_prefix_make(uint32_t addr, unsigned len);

/* True when @addr is in one of the @n prefixes at @p (none when n is 0). */
static inline bool fw_policy_prefix_match(const struct fw_policy_prefix *p, uint32_t n,
					  uint32_t addr)
{
	for (uint32_t i = 0; i < n; i++)
		if ((addr & p[i].mask) == p[i].addr)
			return true;
	return false;
}

/* Loads the 16-byte IPv6 address @a (network order) into two host-order halves. */
static inline void fw_policy_addr6(const uint8_t *a, uint64_t *hi, uint64_t *lo)
{
	uint64_t h = 0, l = 0;

	for (int i = 0; i < 8; i++) {
		h = h << 8 | a[i];
		l = l << 8 | a[8 + i];
	}
	*hi = h;
	*lo = l;
}

/*
 * The IPv6 prefix @addr/@len (16 bytes, network order; 0 <= len <= 128):
 * the address bits below the prefix are cleared. len above 128 is taken as 128.
 */
FW_API struct fw_policy_prefix6 fw_policy_prefix6_make(const uint8_t *addr, unsigned len);

/* True when the IPv6 address @a (16 bytes, network order) is in one of the @n prefixes at @p. */
static inline bool fw_policy_prefix6_match(const struct fw_policy_prefix6 *p, uint32_t n,
					   const uint8_t *a)
{
	uint64_t hi, lo;

	if (n == 0)
		return false;
	fw_policy_addr6(a, &hi, &lo);
	for (uint32_t i = 0; i < n; i++)
		if ((hi & p[i].mhi) == p[i].hi && (lo & p[i].mlo) == p[i].lo)
			return true;
	return false;
}

/*
 * Initialises *p: sources in the @n_allow prefixes at @allow are allowed
 * (0.0.0.0/0 allows every source; no prefix allows none), and requests
 * from the @n_ports source ports at @ports are denied.
 * Returns 0, or -EINVAL when p is NULL or n_allow > FW_POLICY_PREFIXES_MAX.
 * No IPv6 source is allowed until fw_policy_set_allow6().
 */
FW_API int fw_policy_init(struct fw_policy *p, const struct fw_policy_prefix *allow,
			  uint32_t n_allow, const uint16_t *ports, uint32_t n_ports);

/*
 * Sets the allowed IPv6 prefixes of *p (after fw_policy_init): the @n at
 * @allow (::/0 allows every IPv6 source; none allows none). Host bits set
 * in a prefix are cleared. Returns 0, or -EINVAL when p is NULL, n above
 * FW_POLICY_PREFIXES_MAX, or allow NULL with n > 0.
 */
FW_API int fw_policy_set_allow6(struct fw_policy *p, const struct fw_policy_prefix6 *allow,
				uint32_t n);

/* True when the IPv6 source @src (16 bytes, network order) is in an allowed prefix of @p. */
static inline bool fw_policy_allowed6(const struct fw_policy *p, const uint8_t *src)
{
	return fw_policy_prefix6_match(p->allow6, p->n_allow6, src);
}

/* True when @src is in an allowed prefix of @p. */
static inline bool fw_policy_allowed(const struct fw_policy *p, uint32_t src)
{
	return fw_policy_prefix_match(p->allow, p->n_allow, src);
}

/*
 * Sets the trusted prefixes of *p (after fw_policy_init, which trusts
 * none): the @n at @t (IPv4) and the @n6 at @t6 (IPv6). A trusted source
 * is exempt from the rate limit and its replies may outgrow its request;
 * it must still be allowed to be answered at all. Host bits set in a
 * prefix are cleared. Returns 0, or -EINVAL when p is NULL, n or n6 above
 * FW_POLICY_PREFIXES_MAX, or a list NULL with its count > 0.
 */
FW_API int fw_policy_set_trusted(struct fw_policy *p, const struct fw_policy_prefix *t, uint32_t n,
				 const struct fw_policy_prefix6 *t6, uint32_t n6);

/* True when @src (host order) is in a trusted prefix of @p. */
static inline bool fw_policy_trusted(const struct fw_policy *p, uint32_t src)
{
	return fw_policy_prefix_match(p->trusted, p->n_trusted, src);
}

/* True when the IPv6 source @src (16 bytes, network order) is in a trusted prefix of @p. */
static inline bool fw_policy_trusted6(const struct fw_policy *p, const uint8_t *src)
{
	return fw_policy_prefix6_match(p->trusted6, p->n_trusted6, src);
}

/* True when @sport is in the reflector port set of @p. */
static inline bool fw_policy_reflector(const struct fw_policy *p, uint16_t sport)
{
	return p->reflector[sport >> 6] >> (sport & 63) & 1;
}

/* The verdict for a request from @src (address) and @sport (UDP source port). */
static inline enum fw_policy_verdict fw_policy_check(const struct fw_policy *p, uint32_t src,
						     uint16_t sport)
{
	if (FW_UNLIKELY(!fw_policy_allowed(p, src)))
		return FW_POLICY_DENY_SOURCE;
	if (FW_UNLIKELY(fw_policy_reflector(p, sport)))
		return FW_POLICY_DENY_PORT;
	return FW_POLICY_PASS;
}

/* ---- martian sources ---- */

/*
 * Turns the martian filter of *p on or off (off after fw_policy_init). On,
 * a martian source's verdict (fw_policy_source*) is neither allowed nor
 * trusted, whatever [net] allow and trusted say, and carries its reason.
 * Returns 0, or -EINVAL when p is NULL.
 */
FW_API int fw_policy_set_martians(struct fw_policy *p, bool on);

/*
 * Adds the responder's own IPv4 address @addr (host order) to *p, a martian
 * as a source (FW_POLICY_MARTIAN_SELF) while the filter is on; the same
 * for an IPv6 address @a (16 bytes, network order). Adding an address twice
 * keeps one. Returns 0, -EINVAL when p (or a) is NULL, -ENOSPC when
 * FW_POLICY_SELF_MAX addresses of that family are held.
 */
FW_API int fw_policy_add_self(struct fw_policy *p, uint32_t addr);
FW_API int fw_policy_add_self6(struct fw_policy *p, const uint8_t *a);

/*
 * Why the IPv4 source @src (host order) is a martian, or
 * FW_POLICY_MARTIAN_NONE; the filter's state is not looked at.
 */
static inline enum fw_policy_martian fw_policy_martian(const struct fw_policy *p, uint32_t src)
{
	uint8_t top = (uint8_t)(src >> 24);

	if (top == 127)
		return FW_POLICY_MARTIAN_LOOPBACK;
	if (top == 0)
		return FW_POLICY_MARTIAN_UNSPECIFIED;
	if ((top & 0xf0) == 0xe0)
		return FW_POLICY_MARTIAN_MULTICAST;
	if (src == UINT32_MAX)
		return FW_POLICY_MARTIAN_BROADCAST;
	for (uint32_t i = 0; i < p->n_self; i++)
		if (src == p->self[i])
			return FW_POLICY_MARTIAN_SELF;
	return FW_POLICY_MARTIAN_NONE;
}

/*
 * The same for the IPv6 source @src (16 bytes, network order): ::1, ::,
 * ff00::/8, the responder's own IPv6 addresses, and an IPv4-mapped address
 * (::ffff:0:0/96) whose IPv4 address is a martian, for the IPv4 reason
 * (::ffff:127.0.0.1 is loopback, ::ffff:<our IPv4> is self).
 */
static inline enum fw_policy_martian fw_policy_martian6(const struct fw_policy *p,
							const uint8_t *src)
{
	uint64_t hi, lo;

	if (src[0] == 0xff)
		return FW_POLICY_MARTIAN_MULTICAST;
	fw_policy_addr6(src, &hi, &lo);
	if (hi == 0) {
		if (lo == 1)
			return FW_POLICY_MARTIAN_LOOPBACK;
		if (lo == 0)
			return FW_POLICY_MARTIAN_UNSPECIFIED;
		if (lo >> 32 == 0xffff)
			return fw_policy_martian(p, (uint32_t)lo);
	}
	for (uint32_t i = 0; i < p->n_self6; i++)
		if (!memcmp(src, p->self6[i], 16))
			return FW_POLICY_MARTIAN_SELF;
	return FW_POLICY_MARTIAN_NONE;
}

/* ---- a source's verdict, cached per reader ---- */

/* Bits of a source verdict (fw_policy_source*, fw_policy_cached*). */
#define FW_POLICY_SRC_VALID         0x1u /* always set: 0 marks an empty cache entry */
#define FW_POLICY_SRC_ALLOWED       0x2u /* in [net] allow */
#define FW_POLICY_SRC_TRUSTED       0x4u /* in [net] trusted */
/*
 * Bits 8-15: the source is a martian, for this reason (enum
 * fw_policy_martian); such a verdict is never allowed nor trusted. A reader
 * tests FW_POLICY_SRC_ALLOWED alone on its fast path and the reason only
 * once it drops.
 */
#define FW_POLICY_SRC_MARTIAN_SHIFT 8
#define FW_POLICY_SRC_MARTIAN_MASK  (0xffu << FW_POLICY_SRC_MARTIAN_SHIFT)

/* The martian reason of verdict @v (FW_POLICY_MARTIAN_NONE: not a martian). */
static inline enum fw_policy_martian fw_policy_src_martian(uint32_t v)
{
	return (enum fw_policy_martian)((v & FW_POLICY_SRC_MARTIAN_MASK) >>
					FW_POLICY_SRC_MARTIAN_SHIFT);
}

/* The verdict of the IPv4 source @src (host order): FW_POLICY_SRC_* bits. */
static inline uint32_t fw_policy_source(const struct fw_policy *p, uint32_t src)
{
	enum fw_policy_martian m = p->martians ? fw_policy_martian(p, src) : FW_POLICY_MARTIAN_NONE;

	if (FW_UNLIKELY(m != FW_POLICY_MARTIAN_NONE))
		return FW_POLICY_SRC_VALID | (uint32_t)m << FW_POLICY_SRC_MARTIAN_SHIFT;
	return FW_POLICY_SRC_VALID | (fw_policy_allowed(p, src) ? FW_POLICY_SRC_ALLOWED : 0) |
	       (fw_policy_trusted(p, src) ? FW_POLICY_SRC_TRUSTED : 0);
}

/* The verdict of the IPv6 source @src (16 bytes, network order). */
static inline uint32_t fw_policy_source6(const struct fw_policy *p, const uint8_t *src)
{
	enum fw_policy_martian m =
		p->martians ? fw_policy_martian6(p, src) : FW_POLICY_MARTIAN_NONE;

	if (FW_UNLIKELY(m != FW_POLICY_MARTIAN_NONE))
		return FW_POLICY_SRC_VALID | (uint32_t)m << FW_POLICY_SRC_MARTIAN_SHIFT;
	return FW_POLICY_SRC_VALID | (fw_policy_allowed6(p, src) ? FW_POLICY_SRC_ALLOWED : 0) |
	       (fw_policy_trusted6(p, src) ? FW_POLICY_SRC_TRUSTED : 0);
}

/*
 * A reader's (an lcore's, a worker's) cache of source verdicts: direct
 * mapped, 64 entries per family, zeroed to start. A policy is fixed once its
 * readers run, so an entry never goes stale; a cache belongs to one policy
 * and one thread (no atomics).
 */
#define FW_POLICY_CACHE_BITS 6
struct fw_policy_cache {
	struct {
		uint32_t src_be;  /* IPv4 source as on the wire (network order) */
		uint32_t verdict; /* FW_POLICY_SRC_*; 0: empty */
	} v4[1u << FW_POLICY_CACHE_BITS];
	struct {
		uint8_t src[16];
		uint32_t verdict;
	} v6[1u << FW_POLICY_CACHE_BITS];
};

/*
 * A miss of fw_policy_cached*(): the verdict computed and stored in entry
 * @i of @c. Out of line, so that a hit costs only the lookup.
 */
FW_API uint32_t fw_policy_cache_fill(const struct fw_policy *p, struct fw_policy_cache *c,
				     uint32_t i, uint32_t src_be);
FW_API uint32_t fw_policy_cache_fill6(const struct fw_policy *p, struct fw_policy_cache *c,
				      uint32_t i, const uint8_t *src);

/*
 * The verdict of the IPv4 source @src_be (network order, as loaded from the
 * header) from @c, computed with fw_policy_source() on a miss.
 */
static inline uint32_t fw_policy_cached(const struct fw_policy *p, struct fw_policy_cache *c,
					uint32_t src_be)
{
	uint32_t i = (src_be * 0x9e3779b1u) >> (32 - FW_POLICY_CACHE_BITS);

	if (FW_LIKELY(c->v4[i].src_be == src_be && c->v4[i].verdict))
		return c->v4[i].verdict;
	return fw_policy_cache_fill(p, c, i, src_be);
}

/* The same for the IPv6 source @src (16 bytes, network order). */
static inline uint32_t fw_policy_cached6(const struct fw_policy *p, struct fw_policy_cache *c,
					 const uint8_t *src)
{
	uint64_t w[2];

	memcpy(w, src, 16);
	uint32_t i = (uint32_t)(((w[0] ^ w[1]) * UINT64_C(0x9e3779b97f4a7c15)) >>
				(64 - FW_POLICY_CACHE_BITS));
	if (FW_LIKELY(c->v6[i].verdict && !memcmp(c->v6[i].src, src, 16)))
		return c->v6[i].verdict;
	return fw_policy_cache_fill6(p, c, i, src);
}

/* ---- per-prefix rate limiting ---- */

#define FW_RATE_WAYS 4 /* entries per hash set: one 64-byte cache line */

struct fw_rate_config {
	uint32_t rate;        /* requests per second per prefix, > 0 */
	uint32_t burst;       /* bucket depth: back-to-back requests allowed, > 0 */
	uint32_t prefix_len;  /* 0..32: sources are grouped by this prefix */
	uint32_t slip;        /* answer every slip-th limited request (0: never) */
	uint64_t tsc_hz;      /* TSC ticks per second, > 0 */
	uint32_t entries;     /* table size; rounded up to a power of 2, >= FW_RATE_WAYS */
	uint32_t seed;        /* hash seed (a random one keeps attackers off one set) */
	uint32_t prefix_len6; /* 0..128: IPv6 sources are grouped by this prefix */
};

enum fw_rate_verdict {
	FW_RATE_PASS = 0, /* within the rate: answer */
	FW_RATE_DROP,     /* over the rate: drop */
	FW_RATE_SLIP,     /* over the rate, and this one is answered RETRY_AFTER */
};

struct fw_rate; /* opaque */

/* Fills *cfg with the defaults: 1000/s, burst 100, /32 (IPv6: /64), slip 2, 4096 entries. */
FW_API void fw_rate_config_default(struct fw_rate_config *cfg);

/*
 * Bytes of memory fw_rate_init() needs for @cfg (the table included), so
 * the caller can place it (rte_zmalloc_socket on the lcore's socket).
 * Returns 0 when cfg->entries is 0 or above 2^24.
 */
FW_API size_t fw_rate_memsize(const struct fw_rate_config *cfg);

/*
 * Initialises the rate limiter in @mem, fw_rate_memsize(cfg) bytes
 * aligned to FW_CACHE_LINE, with an empty table. Returns it, or NULL with
 * errno EINVAL when mem is NULL or misaligned, or a field of @cfg is out of
 * range (rate, burst or tsc_hz 0, prefix_len above 32, prefix_len6 above
 * 128, entries 0 or above 2^24).
 */
FW_API struct fw_rate *fw_rate_init(void *mem, const struct fw_rate_config *cfg);

/*
 * Charges one request from @src at TSC @tsc (the burst's, non-decreasing
 * per table) to its prefix's bucket.
 * Returns FW_RATE_PASS, FW_RATE_DROP, or FW_RATE_SLIP with *retry_us set
 * to the microseconds until the prefix may send again (>= 1).
 */
FW_API enum fw_rate_verdict fw_rate_check(struct fw_rate *r, uint32_t src, uint64_t tsc,
					  uint32_t *retry_us);

/*
 * Same for the IPv6 source @src (16 bytes, network order), charged to its
 * /prefix_len6 bucket. The table keys an IPv6 prefix by a 32-bit seeded
 * hash of it: two distinct prefixes share a bucket only when their hashes
 * collide (about 2^-32 per pair in one set), which can only make the limit
 * stricter, never looser.
 */
FW_API enum fw_rate_verdict fw_rate_check6(struct fw_rate *r, const uint8_t *src, uint64_t tsc,
					   uint32_t *retry_us);

/*
 * A responder's limit @rate (requests/s, 0: none) and @burst, shared by
 * @n_readers tables that each see part of a source's traffic (RSS spreads
 * one source's flows over every lcore, and a table shared between them
 * would cost an atomic per request): *r_rate = ceil(rate / n), *r_burst =
 * ceil(burst / n), at least 1 (0 would mean "no limit"). A source gets at
 * most about @rate in all however its flows are spread; @rate 0 stays 0.
 * @n_readers 0 is taken as 1.
 */
FW_API void fw_rate_share(uint32_t rate, uint32_t burst, uint32_t n_readers, uint32_t *r_rate,
			  uint32_t *r_burst);

/* Live entries replaced by a new prefix since init. */
FW_API uint64_t fw_rate_evictions(const struct fw_rate *r);

/* Prefixes in the table now. */
FW_API uint32_t fw_rate_used(const struct fw_rate *r);

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "fw_policy.h"

FW_API struct fw_policy_prefix fw_policy_prefix_make(uint32_t addr, unsigned len)
{
	uint32_t mask = len == 0 ? 0 : ~UINT32_C(0) << (32 - FW_MIN(len, 32u));
	struct fw_policy_prefix p = {.addr = addr & mask, .mask = mask};

	return p;
}

FW_API struct fw_policy_prefix6 fw_policy_prefix6_make(const uint8_t *addr, unsigned len)
{
	struct fw_policy_prefix6 p;
	unsigned l = FW_MIN(len, 128u);

	fw_policy_addr6(addr, &p.hi, &p.lo);
	p.mhi = l == 0 ? 0 : l >= 64 ? ~UINT64_C(0) : ~UINT64_C(0) << (64 - l);
	p.mlo = l <= 64 ? 0 : l == 128 ? ~UINT64_C(0) : ~UINT64_C(0) << (128 - l);
	p.hi &= p.mhi;
	p.lo &= p.mlo;
	return p;
}

FW_API int fw_policy_set_allow6(struct fw_policy *p, const struct fw_policy_prefix6 *allow,
				uint32_t n)
{
	if (p == NULL || n > FW_POLICY_PREFIXES_MAX || (n && allow == NULL))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		p->allow6[i] = allow[i];
		p->allow6[i].hi &= allow[i].mhi;
		p->allow6[i].lo &= allow[i].mlo;
	}
	p->n_allow6 = n;
	return 0;
}

FW_API int fw_policy_init(struct fw_policy *p, const struct fw_policy_prefix *allow,
			  uint32_t n_allow, const uint16_t *ports, uint32_t n_ports)
{
	if (p == NULL || n_allow > FW_POLICY_PREFIXES_MAX || (n_allow && allow == NULL) ||
	    (n_ports && ports == NULL))
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	for (uint32_t i = 0; i < n_allow; i++) {
		/* normalised, so a prefix given with host bits set still matches */
		p->allow[i].mask = allow[i].mask;
		p->allow[i].addr = allow[i].addr & allow[i].mask;
	}
	p->n_allow = n_allow;
	for (uint32_t i = 0; i < n_ports; i++)
		p->reflector[ports[i] >> 6] |= UINT64_C(1) << (ports[i] & 63);
	return 0;
}

FW_API int fw_policy_set_trusted(struct fw_policy *p, const struct fw_policy_prefix *t, uint32_t n,
				 const struct fw_policy_prefix6 *t6, uint32_t n6)
{
	if (p == NULL || n > FW_POLICY_PREFIXES_MAX || n6 > FW_POLICY_PREFIXES_MAX ||
	    (n && t == NULL) || (n6 && t6 == NULL))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		p->trusted[i].mask = t[i].mask;
		p->trusted[i].addr = t[i].addr & t[i].mask;
	}
	for (uint32_t i = 0; i < n6; i++) {
		p->trusted6[i] = t6[i];
		p->trusted6[i].hi &= t6[i].mhi;
		p->trusted6[i].lo &= t6[i].mlo;
	}
	p->n_trusted = n;
	p->n_trusted6 = n6;
	return 0;
}

FW_API uint32_t fw_policy_cache_fill(const struct fw_policy *p, struct fw_policy_cache *c,
				     uint32_t i, uint32_t src_be)
{
	uint8_t b[4];

	memcpy(b, &src_be, 4);
	uint32_t v = fw_policy_source(p, (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
						 (uint32_t)b[2] << 8 | b[3]);
	c->v4[i].src_be = src_be;
	c->v4[i].verdict = v;
	return v;
}

FW_API uint32_t fw_policy_cache_fill6(const struct fw_policy *p, struct fw_policy_cache *c,
				      uint32_t i, const uint8_t *src)
{
	uint32_t v = fw_policy_source6(p, src);

	memcpy(c->v6[i].src, src, 16);
	c->v6[i].verdict = v;
	return v;
}

FW_API int fw_policy_set_martians(struct fw_policy *p, bool on)
{
	if (p == NULL)
		return -EINVAL;
	p->martians = on;
	return 0;
}

FW_API int fw_policy_add_self(struct fw_policy *p, uint32_t addr)
{
	if (p == NULL)
		return -EINVAL;
	for (uint32_t i = 0; i < p->n_self; i++)
		if (p->self[i] == addr)
			return 0;
	if (p->n_self >= FW_POLICY_SELF_MAX)
		return -ENOSPC;
	p->self[p->n_self++] = addr;
	return 0;
}

FW_API int fw_policy_add_self6(struct fw_policy *p, const uint8_t *a)
{
	if (p == NULL || a == NULL)
		return -EINVAL;
	for (uint32_t i = 0; i < p->n_self6; i++)
		if (!memcmp(p->self6[i], a, 16))
			return 0;
	if (p->n_self6 >= FW_POLICY_SELF_MAX)
		return -ENOSPC;
	memcpy(p->self6[p->n_self6++], a, 16);
	return 0;
}

FW_API void fw_rate_share(uint32_t rate, uint32_t burst, uint32_t n_readers, uint32_t *r_rate,
			  uint32_t *r_burst)
{
	uint32_t n = n_readers ? n_readers : 1;

	*r_rate = rate ? (uint32_t)(((uint64_t)rate + n - 1) / n) : 0;
	*r_burst = (uint32_t)(((uint64_t)burst + n - 1) / n);
	if (*r_burst == 0)
		*r_burst = 1;
}

/*
 * One bucket: tat is the GCRA "theoretical arrival time", the TSC at which
 * the bucket would be full again minus one interval; 0 marks a free entry.
 */
struct fw_rate_entry {
	uint64_t tat;
	uint32_t key;  /* source & prefix mask */
	uint32_t over; /* limited requests since the last slip */
};

struct fw_rate_set {
	struct fw_rate_entry way[FW_RATE_WAYS];
} FW_CACHE_ALIGNED;

struct fw_rate {
	uint64_t interval; /* TSC ticks per token: tsc_hz / rate */
	uint64_t tau;      /* burst * interval */
	uint64_t hz;
	uint64_t evictions;
	uint64_t mhi6, mlo6; /* IPv6 prefix mask halves */
	uint32_t mask;       /* prefix mask */
	uint32_t set_mask;
	uint32_t slip;
	uint32_t seed;
	struct fw_rate_set set[];
};

#define FW_RATE_ENTRIES_MAX (UINT32_C(1) << 24)

FW_API void fw_rate_config_default(struct fw_rate_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rate = 1000;
	cfg->burst = 100;
	cfg->prefix_len = 32;
	cfg->slip = 2;
	cfg->tsc_hz = 1000000000;
	cfg->entries = 4096;
	cfg->prefix_len6 = 64;
}

static uint32_t n_sets(uint32_t entries)
{
	uint32_t n = FW_RATE_WAYS;

	while (n < entries)
		n <<= 1;
	return n / FW_RATE_WAYS;
}

FW_API size_t fw_rate_memsize(const struct fw_rate_config *cfg)
{
	if (cfg == NULL || cfg->entries == 0 || cfg->entries > FW_RATE_ENTRIES_MAX)
		return 0;
	return sizeof(struct fw_rate) + n_sets(cfg->entries) * sizeof(struct fw_rate_set);
}

FW_API struct fw_rate *fw_rate_init(void *mem, const struct fw_rate_config *cfg)
{
	size_t size = fw_rate_memsize(cfg);
	struct fw_rate *r = mem;

	if (r == NULL || size == 0 || ((uintptr_t)mem & (FW_CACHE_LINE - 1)) || cfg->rate == 0 ||
	    cfg->burst == 0 || cfg->tsc_hz == 0 || cfg->prefix_len > 32 || cfg->prefix_len6 > 128) {
		errno = EINVAL;
		return NULL;
	}
	memset(r, 0, size);
	r->interval = FW_MAX(cfg->tsc_hz / cfg->rate, UINT64_C(1));
	r->tau = cfg->burst * r->interval;
	r->hz = cfg->tsc_hz;
	r->mask = fw_policy_prefix_make(0, cfg->prefix_len).mask;
	static const uint8_t zero[16];
	struct fw_policy_prefix6 m6 = fw_policy_prefix6_make(zero, cfg->prefix_len6);
	r->mhi6 = m6.mhi;
	r->mlo6 = m6.mlo;
	r->set_mask = n_sets(cfg->entries) - 1;
	r->slip = cfg->slip;
	r->seed = cfg->seed;
	return r;
}

/* murmur3's finaliser: every key bit moves every set-index bit */
static inline uint32_t mix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static uint32_t ticks_to_us(const struct fw_rate *r, uint64_t ticks)
{
	unsigned __int128 us = ((unsigned __int128)ticks * 1000000u + r->hz - 1) / r->hz;

	return us == 0 ? 1 : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* Charges one request of the prefix @key at @tsc. */
static inline enum fw_rate_verdict charge(struct fw_rate *r, uint32_t key, uint64_t tsc,
					  uint32_t *retry_us)
{
	struct fw_rate_set *s = &r->set[mix(key ^ r->seed) & r->set_mask];
	struct fw_rate_entry *e = NULL, *victim = &s->way[0];

	for (unsigned i = 0; i < FW_RATE_WAYS; i++) {
		struct fw_rate_entry *w = &s->way[i];
		if (w->tat != 0 && w->key == key) {
			e = w;
			break;
		}
		if (w->tat < victim->tat)
			victim = w;
	}
	if (FW_UNLIKELY(e == NULL)) {
		/* the oldest: smallest virtual time, so the fullest bucket (free: 0) */
		if (victim->tat != 0)
			r->evictions++;
		e = victim;
		e->key = key;
		e->tat = 0;
		e->over = 0;
	}

	uint64_t next = (e->tat > tsc ? e->tat : tsc) + r->interval;
	if (FW_LIKELY(next - tsc <= r->tau)) {
		e->tat = next;
		return FW_RATE_PASS;
	}
	if (r->slip != 0 && ++e->over >= r->slip) {
		e->over = 0;
		if (retry_us != NULL)
			*retry_us = ticks_to_us(r, next - tsc - r->tau);
		return FW_RATE_SLIP;
	}
	return FW_RATE_DROP;
}

FW_API enum fw_rate_verdict fw_rate_check(struct fw_rate *r, uint32_t src, uint64_t tsc,
					  uint32_t *retry_us)
{
	return charge(r, src & r->mask, tsc, retry_us);
}

/* splitmix64's finaliser */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

FW_API enum fw_rate_verdict fw_rate_check6(struct fw_rate *r, const uint8_t *src, uint64_t tsc,
					   uint32_t *retry_us)
{
	uint64_t hi, lo;

	fw_policy_addr6(src, &hi, &lo);
	/* seeded, so nobody outside can aim two prefixes at one key */
	uint64_t h = mix64((hi & r->mhi6) ^ r->seed ^ UINT64_C(0x6a09e667f3bcc908));
	h = mix64(h ^ (lo & r->mlo6));
	return charge(r, (uint32_t)(h ^ (h >> 32)), tsc, retry_us);
}

FW_API uint64_t fw_rate_evictions(const struct fw_rate *r)
{
	return r->evictions;
}

FW_API uint32_t fw_rate_used(const struct fw_rate *r)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= r->set_mask; i++)
		for (unsigned w = 0; w < FW_RATE_WAYS; w++)
			n += r->set[i].way[w].tat != 0;
	return n;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The source policy and the per-prefix rate limiter (lib/policy), with a fake TSC. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>

#include "fw_policy.h"

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define HZ             1000000u /* a 1 MHz fake TSC: one tick per microsecond */

static const uint16_t reflectors[] = {0,   7,   17,   19,   53,   123,  137,
				      161, 389, 1900, 3702, 5353, 11211};

static void default_policy(struct fw_policy *p)
{
	struct fw_policy_prefix allow[] = {
		fw_policy_prefix_make(IP(127, 0, 0, 0), 8),
		fw_policy_prefix_make(IP(10, 0, 0, 0), 8),
		fw_policy_prefix_make(IP(172, 16, 0, 0), 12),
		fw_policy_prefix_make(IP(192, 168, 0, 0), 16),
		fw_policy_prefix_make(IP(100, 64, 0, 0), 10),
	};
	assert_int_equal(fw_policy_init(p, allow, FW_ARRAY_SIZE(allow), reflectors,
					FW_ARRAY_SIZE(reflectors)),
			 0);
}

static void cidr_match_edges(void **state)
{
	(void)state;
	struct fw_policy p;
	default_policy(&p);
	/* first and last address of each prefix, and the neighbours just outside */
	uint32_t in[] = {IP(10, 0, 0, 0),        IP(10, 255, 255, 255), IP(172, 16, 0, 0),
			 IP(172, 31, 255, 255),  IP(192, 168, 0, 1),    IP(100, 64, 0, 0),
			 IP(100, 127, 255, 255), IP(127, 0, 0, 1)};
	uint32_t out[] = {IP(9, 255, 255, 255),  IP(11, 0, 0, 0),        IP(172, 15, 255, 255),
			  IP(172, 32, 0, 0),     IP(192, 167, 255, 255), IP(192, 169, 0, 0),
			  IP(100, 63, 255, 255), IP(100, 128, 0, 0),     IP(192, 0, 2, 1),
			  IP(8, 8, 8, 8),        IP(0, 0, 0, 0),         IP(255, 255, 255, 255)};
	for (size_t i = 0; i < FW_ARRAY_SIZE(in); i++)
		assert_int_equal(fw_policy_check(&p, in[i], 40000), FW_POLICY_PASS);
	for (size_t i = 0; i < FW_ARRAY_SIZE(out); i++)
		assert_int_equal(fw_policy_check(&p, out[i], 40000), FW_POLICY_DENY_SOURCE);
}

static void cidr_prefix_lengths(void **state)
{
	(void)state;
	struct fw_policy_prefix all = fw_policy_prefix_make(IP(1, 2, 3, 4), 0);
	struct fw_policy_prefix host = fw_policy_prefix_make(IP(1, 2, 3, 4), 32);
	struct fw_policy_prefix odd = fw_policy_prefix_make(IP(1, 2, 3, 4), 31);

	assert_int_equal(all.mask, 0);
	assert_int_equal(all.addr, 0);
	assert_true(fw_policy_prefix_match(&all, 1, IP(203, 0, 113, 9)));
	assert_true(fw_policy_prefix_match(&host, 1, IP(1, 2, 3, 4)));
	assert_false(fw_policy_prefix_match(&host, 1, IP(1, 2, 3, 5)));
	assert_true(fw_policy_prefix_match(&odd, 1, IP(1, 2, 3, 5)));
	assert_false(fw_policy_prefix_match(&odd, 1, IP(1, 2, 3, 6)));
	assert_int_equal(fw_policy_prefix_make(IP(1, 2, 3, 4), 40).mask, 0xffffffffu);

	/* host bits in a configured prefix are cleared, so it still matches */
	struct fw_policy p;
	struct fw_policy_prefix sloppy = {.addr = IP(10, 1, 2, 3), .mask = 0xff000000u};
	assert_int_equal(fw_policy_init(&p, &sloppy, 1, NULL, 0), 0);
	assert_int_equal(fw_policy_check(&p, IP(10, 9, 9, 9), 1234), FW_POLICY_PASS);

	/* no prefix allows nothing */
	assert_int_equal(fw_policy_init(&p, NULL, 0, NULL, 0), 0);
	assert_int_equal(fw_policy_check(&p, IP(127, 0, 0, 1), 1234), FW_POLICY_DENY_SOURCE);
	assert_int_equal(fw_policy_init(NULL, NULL, 0, NULL, 0), -EINVAL);
	assert_int_equal(fw_policy_init(&p, &sloppy, FW_POLICY_PREFIXES_MAX + 1, NULL, 0), -EINVAL);
}

static void reflector_ports(void **state)
{
	(void)state;
	struct fw_policy p;
	default_policy(&p);
	for (size_t i = 0; i < FW_ARRAY_SIZE(reflectors); i++) {
		assert_true(fw_policy_reflector(&p, reflectors[i]));
		assert_int_equal(fw_policy_check(&p, IP(10, 0, 0, 1), reflectors[i]),
				 FW_POLICY_DENY_PORT);
	}
	unsigned denied = 0;
	for (uint32_t port = 0; port <= 65535; port++)
		denied += fw_policy_check(&p, IP(10, 0, 0, 1), (uint16_t)port) != FW_POLICY_PASS;
	assert_int_equal(denied, FW_ARRAY_SIZE(reflectors));
	/* an unknown source is a source denial whatever its port */
	assert_int_equal(fw_policy_check(&p, IP(192, 0, 2, 1), 53), FW_POLICY_DENY_SOURCE);
	assert_int_equal(fw_policy_check(&p, IP(192, 0, 2, 1), 40000), FW_POLICY_DENY_SOURCE);
}

static struct fw_rate *rate_new(uint32_t rate, uint32_t burst, uint32_t prefix, uint32_t slip,
				uint32_t entries)
{
	struct fw_rate_config c;
	fw_rate_config_default(&c);
	c.rate = rate;
	c.burst = burst;
	c.prefix_len = prefix;
	c.slip = slip;
	c.entries = entries;
	c.tsc_hz = HZ;
	size_t size = fw_rate_memsize(&c);
	assert_true(size > 0);
	void *mem = aligned_alloc(FW_CACHE_LINE, (size + FW_CACHE_LINE - 1) & ~(size_t)63);
	assert_non_null(mem);
	struct fw_rate *r = fw_rate_init(mem, &c);
	assert_ptr_equal(r, mem);
	return r;
}

static unsigned count(struct fw_rate *r, uint32_t src, uint64_t tsc, unsigned n,
		      enum fw_rate_verdict v)
{
	unsigned k = 0;
	uint32_t us;
	for (unsigned i = 0; i < n; i++)
		k += fw_rate_check(r, src, tsc, &us) == v;
	return k;
}

static void bucket_burst_then_rate(void **state)
{
	(void)state;
	/* 100/s = one token per 10000 ticks, 5 deep, no slip */
	struct fw_rate *r = rate_new(100, 5, 32, 0, 64);
	uint64_t t = 1000;

	assert_int_equal(count(r, IP(10, 0, 0, 1), t, 5, FW_RATE_PASS), 5);
	assert_int_equal(count(r, IP(10, 0, 0, 1), t, 50, FW_RATE_DROP), 50);
	/* 9999 ticks later: still not one token */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t + 9999, 1, FW_RATE_PASS), 0);
	/* one interval: exactly one more */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t + 10000, 3, FW_RATE_PASS), 1);
	/* 3.5 intervals later: three tokens, not four */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t + 45000, 10, FW_RATE_PASS), 3);
	/* long idle: the bucket refills to the burst, never beyond */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t + 10 * HZ, 20, FW_RATE_PASS), 5);
	/* another source has its own bucket */
	assert_int_equal(count(r, IP(10, 0, 0, 2), t + 10 * HZ, 20, FW_RATE_PASS), 5);
	free(r);
}

static void bucket_steady_rate(void **state)
{
	(void)state;
	/* 1000/s, burst 10; a client at 4000/s for 1 s gets burst + 1000 */
	struct fw_rate *r = rate_new(1000, 10, 32, 0, 64);
	unsigned pass = 0;
	for (uint64_t t = 0; t <= HZ; t += 250)
		pass += count(r, IP(10, 1, 1, 1), t, 1, FW_RATE_PASS);
	assert_int_equal(pass, 10 + 1000);
	/* a client at exactly the rate is never limited */
	struct fw_rate *q = rate_new(1000, 1, 32, 0, 64);
	pass = 0;
	for (uint64_t t = 0; t < HZ; t += 1000)
		pass += count(q, IP(10, 1, 1, 1), t, 1, FW_RATE_PASS);
	assert_int_equal(pass, 1000);
	free(r);
	free(q);
}

static void slip_every_nth(void **state)
{
	(void)state;
	/* 10/s (100000 ticks per token), burst 2, slip 3 */
	struct fw_rate *r = rate_new(10, 2, 32, 3, 64);
	uint32_t us = 0;
	uint64_t t = 500;

	assert_int_equal(count(r, IP(10, 0, 0, 9), t, 2, FW_RATE_PASS), 2);
	enum fw_rate_verdict want[] = {FW_RATE_DROP, FW_RATE_DROP, FW_RATE_SLIP,
				       FW_RATE_DROP, FW_RATE_DROP, FW_RATE_SLIP};
	for (size_t i = 0; i < FW_ARRAY_SIZE(want); i++) {
		us = 0;
		assert_int_equal(fw_rate_check(r, IP(10, 0, 0, 9), t, &us), want[i]);
		if (want[i] == FW_RATE_SLIP)
			assert_int_equal(us, 100000); /* a full interval to the next token */
	}
	/* 30000 ticks on, the advice shrinks accordingly */
	assert_int_equal(count(r, IP(10, 0, 0, 9), t + 30000, 2, FW_RATE_DROP), 2);
	assert_int_equal(fw_rate_check(r, IP(10, 0, 0, 9), t + 30000, &us), FW_RATE_SLIP);
	assert_int_equal(us, 70000);
	/* and after that long the request passes */
	assert_int_equal(fw_rate_check(r, IP(10, 0, 0, 9), t + 100000, &us), FW_RATE_PASS);
	free(r);

	/* slip 0: never answered; slip 1: every limited request answered */
	struct fw_rate *never = rate_new(10, 1, 32, 0, 64);
	struct fw_rate *always = rate_new(10, 1, 32, 1, 64);
	assert_int_equal(count(never, IP(10, 0, 0, 9), 0, 100, FW_RATE_SLIP), 0);
	assert_int_equal(count(always, IP(10, 0, 0, 9), 0, 100, FW_RATE_SLIP), 99);
	free(never);
	free(always);
}

static void prefix_grouping(void **state)
{
	(void)state;
	/* /24: the whole 10.0.5.0/24 shares one bucket of 4 */
	struct fw_rate *r = rate_new(1, 4, 24, 0, 64);
	unsigned pass = 0;
	for (unsigned i = 0; i < 200; i++)
		pass += count(r, IP(10, 0, 5, i), 0, 1, FW_RATE_PASS);
	assert_int_equal(pass, 4);
	assert_int_equal(fw_rate_used(r), 1);
	assert_int_equal(count(r, IP(10, 0, 6, 1), 0, 1, FW_RATE_PASS), 1);
	assert_int_equal(fw_rate_used(r), 2);
	free(r);
}

static void table_eviction(void **state)
{
	(void)state;
	/* the smallest table: one set of FW_RATE_WAYS entries */
	struct fw_rate *r = rate_new(1, 2, 32, 0, 1);
	uint64_t t = 100;

	/* A is drained at t; B, C, D arrive later: A is the oldest */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t, 5, FW_RATE_PASS), 2);
	for (unsigned i = 2; i <= FW_RATE_WAYS; i++)
		assert_int_equal(count(r, IP(10, 0, 0, i), t + i, 1, FW_RATE_PASS), 1);
	assert_int_equal(fw_rate_used(r), FW_RATE_WAYS);
	assert_int_equal(fw_rate_evictions(r), 0);
	/* A is still limited while the table has room for it */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t + 10, 1, FW_RATE_DROP), 1);
	/* B (used at t + 2, one token spent) is the oldest now; E evicts it */
	assert_int_equal(count(r, IP(10, 0, 0, 5), t + 20, 1, FW_RATE_PASS), 1);
	assert_int_equal(fw_rate_evictions(r), 1);
	assert_int_equal(fw_rate_used(r), FW_RATE_WAYS);
	/* A kept its state: still limited */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t + 30, 1, FW_RATE_DROP), 1);
	/* B comes back with a fresh bucket (evicting the next oldest) */
	assert_int_equal(count(r, IP(10, 0, 0, 2), t + 40, 5, FW_RATE_PASS), 2);
	assert_int_equal(fw_rate_evictions(r), 2);
	/* a flood of new sources churns the table but never grows it */
	for (unsigned i = 0; i < 1000; i++)
		count(r, IP(192, 168, i >> 8, i & 255), t + 50 + i, 1, FW_RATE_PASS);
	assert_int_equal(fw_rate_used(r), FW_RATE_WAYS);
	free(r);
}

static void table_many_sources(void **state)
{
	(void)state;
	/* 4096 entries, 2000 sources of one /16: the hash spreads them over the sets */
	struct fw_rate *r = rate_new(1, 1, 32, 0, 4096);
	for (unsigned i = 0; i < 2000; i++)
		assert_int_equal(count(r, IP(10, 2, i >> 8, i & 255), 0, 1, FW_RATE_PASS), 1);
	assert_true(fw_rate_evictions(r) < 100);
	assert_int_equal(fw_rate_used(r), 2000 - fw_rate_evictions(r));
	/* every source still in the table is limited; evicted ones start afresh */
	unsigned limited = 0;
	for (unsigned i = 0; i < 2000; i++)
		limited += count(r, IP(10, 2, i >> 8, i & 255), 0, 1, FW_RATE_DROP);
	assert_true(limited > 1800);
	assert_true(fw_rate_used(r) <= 4096);
	free(r);
}

static void rate_bad_config(void **state)
{
	(void)state;
	struct fw_rate_config c;
	static _Alignas(64) uint8_t mem[1 << 16];

	fw_rate_config_default(&c);
	c.entries = 64;
	assert_non_null(fw_rate_init(mem, &c));
	c.rate = 0;
	errno = 0;
	assert_null(fw_rate_init(mem, &c));
	assert_int_equal(errno, EINVAL);
	fw_rate_config_default(&c);
	c.entries = 64;
	c.prefix_len = 33;
	assert_null(fw_rate_init(mem, &c));
	c.prefix_len = 32;
	c.burst = 0;
	assert_null(fw_rate_init(mem, &c));
	c.burst = 1;
	assert_null(fw_rate_init(mem + 8, &c)); /* misaligned */
	assert_null(fw_rate_init(NULL, &c));
	c.entries = 0;
	assert_int_equal(fw_rate_memsize(&c), 0);
	c.entries = 5; /* rounded up to 8: two sets */
	assert_true(fw_rate_memsize(&c) > 0 && fw_rate_memsize(&c) <= 64 + 2 * 64 + 64);
}

/* ---- IPv6 ---- */

static void a6(const char *s, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

static bool allowed6(const struct fw_policy *p, const char *s)
{
	uint8_t a[16];
	a6(s, a);
	return fw_policy_allowed6(p, a);
}

static void cidr6_match(void **state)
{
	(void)state;
	uint8_t a[16];
	struct fw_policy p;
	struct fw_policy_prefix6 allow[3];

	a6("2001:db8:1::", a);
	allow[0] = fw_policy_prefix6_make(a, 48);
	a6("fd00::ff", a); /* host bits set: cleared */
	allow[1] = fw_policy_prefix6_make(a, 8);
	a6("2001:db8:9:8:7:6:5:4", a);
	allow[2] = fw_policy_prefix6_make(a, 127);
	assert_int_equal(fw_policy_init(&p, NULL, 0, NULL, 0), 0);
	assert_false(allowed6(&p, "2001:db8:1::1")); /* nothing until set_allow6 */
	assert_int_equal(fw_policy_set_allow6(&p, allow, 3), 0);
	assert_true(allowed6(&p, "2001:db8:1::1"));
	assert_true(allowed6(&p, "2001:db8:1:ffff:ffff:ffff:ffff:ffff"));
	assert_false(allowed6(&p, "2001:db8:2::1"));
	assert_false(allowed6(&p, "2001:db8:0:ffff::1"));
	assert_true(allowed6(&p, "fdff::1"));
	assert_false(allowed6(&p, "fe00::1"));
	assert_true(allowed6(&p, "2001:db8:9:8:7:6:5:5"));  /* /127: the last bit free */
	assert_false(allowed6(&p, "2001:db8:9:8:7:6:5:6")); /* a bit of the low half */
	assert_false(allowed6(&p, "::1"));
	/* ::/0 allows all, /128 one address, lengths above 128 are 128 */
	a6("2001:db8::5", a);
	allow[0] = fw_policy_prefix6_make(a, 0);
	allow[1] = fw_policy_prefix6_make(a, 200);
	assert_int_equal(allow[0].mhi | allow[0].mlo, 0);
	assert_int_equal(allow[1].mhi & allow[1].mlo, ~UINT64_C(0));
	assert_int_equal(fw_policy_set_allow6(&p, allow + 1, 1), 0);
	assert_true(allowed6(&p, "2001:db8::5"));
	assert_false(allowed6(&p, "2001:db8::4"));
	assert_int_equal(fw_policy_set_allow6(&p, allow, 1), 0);
	assert_true(allowed6(&p, "ff02::1:2"));
	/* the IPv4 policy is untouched by the IPv6 one */
	assert_int_equal(fw_policy_check(&p, IP(10, 0, 0, 1), 4242), FW_POLICY_DENY_SOURCE);
	assert_int_equal(fw_policy_set_allow6(&p, allow, FW_POLICY_PREFIXES_MAX + 1), -EINVAL);
	assert_int_equal(fw_policy_set_allow6(NULL, allow, 1), -EINVAL);
	assert_int_equal(fw_policy_set_allow6(&p, NULL, 1), -EINVAL);
}

static unsigned count6(struct fw_rate *r, const char *src, uint64_t tsc, unsigned n,
		       enum fw_rate_verdict v)
{
	uint8_t a[16];
	unsigned k = 0;
	uint32_t us;
	a6(src, a);
	for (unsigned i = 0; i < n; i++)
		k += fw_rate_check6(r, a, tsc, &us) == v;
	return k;
}

static struct fw_rate *rate6_new(uint32_t prefix6)
{
	struct fw_rate_config c;
	fw_rate_config_default(&c);
	c.rate = 100;
	c.burst = 5;
	c.slip = 0;
	c.entries = 256;
	c.tsc_hz = HZ;
	c.prefix_len6 = prefix6;
	void *mem = aligned_alloc(FW_CACHE_LINE, 64 * 1024);
	assert_non_null(mem);
	struct fw_rate *r = fw_rate_init(mem, &c);
	assert_ptr_equal(r, mem);
	return r;
}

static void rate6_prefix_grouping(void **state)
{
	(void)state;
	uint64_t t = 1000;
	/* /64: every address of one /64 shares one bucket, the next /64 has its own */
	struct fw_rate *r = rate6_new(64);
	assert_int_equal(count6(r, "2001:db8:0:1::1", t, 3, FW_RATE_PASS), 3);
	assert_int_equal(count6(r, "2001:db8:0:1:ffff:1:2:3", t, 2, FW_RATE_PASS), 2);
	assert_int_equal(count6(r, "2001:db8:0:1::99", t, 4, FW_RATE_DROP), 4);
	assert_int_equal(count6(r, "2001:db8:0:2::1", t, 5, FW_RATE_PASS), 5);
	/* an IPv4 source has its own bucket too */
	assert_int_equal(count(r, IP(10, 0, 0, 1), t, 5, FW_RATE_PASS), 5);
	/* the bucket refills: one token per 10000 ticks */
	assert_int_equal(count6(r, "2001:db8:0:1::7", t + HZ / 100, 1, FW_RATE_PASS), 1);
	assert_int_equal(count6(r, "2001:db8:0:1::7", t + HZ / 100, 1, FW_RATE_DROP), 1);
	free(r);

	/* /56: one customer's 256 /64s share a bucket; the next /56 does not */
	r = rate6_new(56);
	assert_int_equal(count6(r, "2001:db8:0:100::1", t, 1, FW_RATE_PASS), 1);
	assert_int_equal(count6(r, "2001:db8:0:1ff::1", t, 4, FW_RATE_PASS), 4);
	assert_int_equal(count6(r, "2001:db8:0:1aa::1", t, 1, FW_RATE_DROP), 1);
	assert_int_equal(count6(r, "2001:db8:0:200::1", t, 5, FW_RATE_PASS), 5);
	free(r);

	/* /128: per address, the low half counts */
	r = rate6_new(128);
	assert_int_equal(count6(r, "2001:db8::1", t, 5, FW_RATE_PASS), 5);
	assert_int_equal(count6(r, "2001:db8::1", t, 1, FW_RATE_DROP), 1);
	assert_int_equal(count6(r, "2001:db8::2", t, 5, FW_RATE_PASS), 5);
	free(r);

	/* a source hopping over its /64 (2^64 addresses) still gets one budget */
	r = rate6_new(64);
	unsigned pass = 0;
	uint8_t a[16];
	a6("2001:db8:77:1::", a);
	for (unsigned i = 0; i < 1000; i++) {
		a[8] = (uint8_t)i;
		a[15] = (uint8_t)(i >> 8);
		a[12] = (uint8_t)(i * 7);
		pass += fw_rate_check6(r, a, t, NULL) == FW_RATE_PASS;
	}
	assert_int_equal(pass, 5);
	free(r);

	struct fw_rate_config c;
	fw_rate_config_default(&c);
	assert_int_equal(c.prefix_len6, 64);
	c.prefix_len6 = 129;
	void *mem = aligned_alloc(FW_CACHE_LINE, 64 * 1024);
	assert_null(fw_rate_init(mem, &c));
	free(mem);
}

/* [net] trusted for both families: exempt from nothing but the rate and the reply budget. */
static void trusted_both_families(void **state)
{
	(void)state;
	struct fw_policy p;
	uint8_t a[16];

	default_policy(&p);
	struct fw_policy_prefix t4[] = {fw_policy_prefix_make(IP(10, 99, 0, 0), 16)};
	a6("fd99::", a);
	struct fw_policy_prefix6 t6[] = {fw_policy_prefix6_make(a, 16)};
	assert_false(fw_policy_trusted(&p, IP(10, 99, 1, 1))); /* none until set */
	assert_int_equal(fw_policy_set_trusted(&p, t4, 1, t6, 1), 0);
	assert_true(fw_policy_trusted(&p, IP(10, 99, 1, 1)));
	assert_false(fw_policy_trusted(&p, IP(10, 98, 1, 1)));
	a6("fd99:1::7", a);
	assert_true(fw_policy_trusted6(&p, a));
	a6("fd98::7", a);
	assert_false(fw_policy_trusted6(&p, a));
	assert_int_equal(fw_policy_source(&p, IP(10, 99, 0, 1)),
			 FW_POLICY_SRC_VALID | FW_POLICY_SRC_ALLOWED | FW_POLICY_SRC_TRUSTED);
	assert_int_equal(fw_policy_source(&p, IP(10, 1, 0, 1)),
			 FW_POLICY_SRC_VALID | FW_POLICY_SRC_ALLOWED);
	assert_int_equal(fw_policy_source(&p, IP(8, 8, 8, 8)), FW_POLICY_SRC_VALID);
	assert_int_equal(fw_policy_set_trusted(&p, t4, FW_POLICY_PREFIXES_MAX + 1, t6, 0), -EINVAL);
	assert_int_equal(fw_policy_set_trusted(&p, NULL, 1, t6, 0), -EINVAL);
	assert_int_equal(fw_policy_set_trusted(NULL, t4, 1, t6, 1), -EINVAL);
}

/*
 * The per-reader cache answers what the lists answer, for both families,
 * over many more sources than it has entries (every entry replaced often).
 */
static void cache_same_verdict(void **state)
{
	(void)state;
	struct fw_policy p;
	static struct fw_policy_cache c; /* zeroed */
	uint8_t a[16];

	default_policy(&p);
	struct fw_policy_prefix t4[] = {fw_policy_prefix_make(IP(10, 99, 0, 0), 16)};
	a6("fd00::", a);
	struct fw_policy_prefix6 al6[] = {fw_policy_prefix6_make(a, 8)};
	a6("fd99::", a);
	struct fw_policy_prefix6 t6[] = {fw_policy_prefix6_make(a, 16)};
	assert_int_equal(fw_policy_set_allow6(&p, al6, 1), 0);
	assert_int_equal(fw_policy_set_trusted(&p, t4, 1, t6, 1), 0);
	uint32_t x = 12345;
	unsigned trusted4 = 0, trusted6 = 0, denied6 = 0;
	for (int i = 0; i < 200000; i++) {
		x = x * 1103515245u + 12345u;
		/* sources from a few /16s, some allowed, some trusted, some neither */
		static const uint32_t nets[] = {IP(10, 99, 0, 0), IP(10, 1, 0, 0), IP(8, 8, 0, 0)};
		uint32_t src = nets[(x >> 8) % 3] | (x >> 16 & 0xff) << 8 | (x & 0x3f);
		uint32_t be = htonl(src);
		uint32_t v = fw_policy_cached(&p, &c, be);
		assert_int_equal(v, fw_policy_source(&p, src));
		trusted4 += !!(v & FW_POLICY_SRC_TRUSTED);
		memset(a, 0, 16);
		a[0] = 0xfd;
		a[1] = (x >> 4 & 1) ? 0x99 : (x >> 5 & 1) ? 0x01 : 0x00;
		if (x >> 6 & 1)
			a[0] = 0x20; /* 20xx:: outside fd00::/8 */
		a[14] = (uint8_t)(x >> 10);
		a[15] = (uint8_t)(x >> 18 & 0x3f);
		uint32_t v6 = fw_policy_cached6(&p, &c, a);
		assert_int_equal(v6, fw_policy_source6(&p, a));
		trusted6 += !!(v6 & FW_POLICY_SRC_TRUSTED);
		denied6 += !(v6 & FW_POLICY_SRC_ALLOWED);
	}
	assert_true(trusted4 > 1000); /* every kind of verdict was cached */
	assert_true(trusted6 > 1000);
	assert_true(denied6 > 1000);
}

/* fw_rate_share: each of n readers enforces its share, never 0 (which means no limit). */
static void rate_share(void **state)
{
	(void)state;
	uint32_t r, b;

	fw_rate_share(1000, 100, 3, &r, &b);
	assert_int_equal(r, 334);
	assert_int_equal(b, 34);
	fw_rate_share(1, 1, 4, &r, &b);
	assert_int_equal(r, 1);
	assert_int_equal(b, 1);
	fw_rate_share(0, 100, 4, &r, &b);
	assert_int_equal(r, 0);
	fw_rate_share(10, 10, 0, &r, &b); /* 0 readers: one */
	assert_int_equal(r, 10);
	assert_int_equal(b, 10);
}

/*
 * The martian filter: every kind by its reason, IPv4-mapped under the IPv4
 * reason, our own addresses once added; a martian's verdict is neither
 * allowed nor trusted whatever allow (everything) and trusted (loopback)
 * say; off, the policy is what it was (flakesock's loopback clients).
 */
static void martians(void **state)
{
	struct fw_policy p;
	struct fw_policy_prefix all = fw_policy_prefix_make(0, 0);
	struct fw_policy_prefix lo = fw_policy_prefix_make(IP(127, 0, 0, 0), 8);
	uint8_t a[16], own6[16];
	(void)state;

	assert_int_equal(fw_policy_init(&p, &all, 1, NULL, 0), 0);
	a6("::", a);
	struct fw_policy_prefix6 all6 = fw_policy_prefix6_make(a, 0);
	a6("::1", a);
	struct fw_policy_prefix6 lo6 = fw_policy_prefix6_make(a, 128);
	assert_int_equal(fw_policy_set_allow6(&p, &all6, 1), 0);
	assert_int_equal(fw_policy_set_trusted(&p, &lo, 1, &lo6, 1), 0);
	const uint32_t trusted =
		FW_POLICY_SRC_VALID | FW_POLICY_SRC_ALLOWED | FW_POLICY_SRC_TRUSTED;
	assert_false(p.martians);
	assert_int_equal(fw_policy_source(&p, IP(127, 0, 0, 1)), trusted);
	assert_int_equal(fw_policy_source6(&p, a), trusted);

	assert_int_equal(fw_policy_set_martians(&p, true), 0);
	assert_int_equal(fw_policy_add_self(&p, IP(10, 77, 0, 2)), 0);
	assert_int_equal(fw_policy_add_self(&p, IP(10, 77, 0, 2)), 0); /* kept once */
	assert_int_equal(p.n_self, 1);
	a6("fd77::2", own6);
	assert_int_equal(fw_policy_add_self6(&p, own6), 0);
	struct {
		uint32_t src;
		enum fw_policy_martian m;
	} v4[] = {
		{IP(127, 0, 0, 1), FW_POLICY_MARTIAN_LOOPBACK},
		{IP(127, 255, 255, 255), FW_POLICY_MARTIAN_LOOPBACK},
		{0, FW_POLICY_MARTIAN_UNSPECIFIED},
		{IP(0, 0, 0, 1), FW_POLICY_MARTIAN_UNSPECIFIED},
		{IP(224, 0, 0, 1), FW_POLICY_MARTIAN_MULTICAST},
		{IP(239, 255, 255, 255), FW_POLICY_MARTIAN_MULTICAST},
		{IP(255, 255, 255, 255), FW_POLICY_MARTIAN_BROADCAST},
		{IP(10, 77, 0, 2), FW_POLICY_MARTIAN_SELF},
		{IP(1, 0, 0, 0), FW_POLICY_MARTIAN_NONE},
		{IP(126, 255, 255, 255), FW_POLICY_MARTIAN_NONE},
		{IP(128, 0, 0, 0), FW_POLICY_MARTIAN_NONE},
		{IP(223, 255, 255, 255), FW_POLICY_MARTIAN_NONE},
		{IP(240, 0, 0, 1), FW_POLICY_MARTIAN_NONE}, /* reserved, not a group */
		{IP(10, 77, 0, 3), FW_POLICY_MARTIAN_NONE},
	};
	for (unsigned i = 0; i < FW_ARRAY_SIZE(v4); i++) {
		uint32_t v = fw_policy_source(&p, v4[i].src);
		assert_int_equal(fw_policy_martian(&p, v4[i].src), v4[i].m);
		assert_int_equal(fw_policy_src_martian(v), v4[i].m);
		assert_int_equal(v,
				 v4[i].m ? FW_POLICY_SRC_VALID | (uint32_t)v4[i].m << 8
					 : (v4[i].src >> 24 == 127
						    ? trusted
						    : FW_POLICY_SRC_VALID | FW_POLICY_SRC_ALLOWED));
		/* the cached verdict is the same */
		struct fw_policy_cache c;
		memset(&c, 0, sizeof(c));
		uint32_t be = htonl(v4[i].src);
		assert_int_equal(fw_policy_cached(&p, &c, be), v);
		assert_int_equal(fw_policy_cached(&p, &c, be), v);
	}
	struct {
		const char *src;
		enum fw_policy_martian m;
	} v6[] = {
		{"::1", FW_POLICY_MARTIAN_LOOPBACK},
		{"::", FW_POLICY_MARTIAN_UNSPECIFIED},
		{"ff02::1", FW_POLICY_MARTIAN_MULTICAST},
		{"ff05::1:3", FW_POLICY_MARTIAN_MULTICAST},
		{"fd77::2", FW_POLICY_MARTIAN_SELF},
		{"::ffff:127.0.0.1", FW_POLICY_MARTIAN_LOOPBACK},
		{"::ffff:0.0.0.0", FW_POLICY_MARTIAN_UNSPECIFIED},
		{"::ffff:224.0.0.1", FW_POLICY_MARTIAN_MULTICAST},
		{"::ffff:255.255.255.255", FW_POLICY_MARTIAN_BROADCAST},
		{"::ffff:10.77.0.2", FW_POLICY_MARTIAN_SELF},
		{"::ffff:10.77.0.1", FW_POLICY_MARTIAN_NONE},
		{"::2", FW_POLICY_MARTIAN_NONE},
		{"fe80::1", FW_POLICY_MARTIAN_NONE},
		{"fd77::1", FW_POLICY_MARTIAN_NONE},
		{"fe00::1", FW_POLICY_MARTIAN_NONE},
	};
	for (unsigned i = 0; i < FW_ARRAY_SIZE(v6); i++) {
		a6(v6[i].src, a);
		uint32_t v = fw_policy_source6(&p, a);
		assert_int_equal(fw_policy_martian6(&p, a), v6[i].m);
		assert_int_equal(fw_policy_src_martian(v), v6[i].m);
		if (v6[i].m)
			assert_int_equal(v, FW_POLICY_SRC_VALID | (uint32_t)v6[i].m << 8);
		else
			assert_true(v & FW_POLICY_SRC_ALLOWED);
	}

	/* full lists, and bad arguments */
	for (uint32_t i = p.n_self; i < FW_POLICY_SELF_MAX; i++)
		assert_int_equal(fw_policy_add_self(&p, IP(192, 0, 2, i)), 0);
	assert_int_equal(fw_policy_add_self(&p, IP(198, 51, 100, 1)), -ENOSPC);
	assert_int_equal(fw_policy_add_self(NULL, 1), -EINVAL);
	assert_int_equal(fw_policy_add_self6(&p, NULL), -EINVAL);
	assert_int_equal(fw_policy_set_martians(NULL, true), -EINVAL);

	/* off again: loopback is trusted as configured */
	assert_int_equal(fw_policy_set_martians(&p, false), 0);
	assert_int_equal(fw_policy_source(&p, IP(127, 0, 0, 1)), trusted);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cidr_match_edges),
		cmocka_unit_test(cidr_prefix_lengths),
		cmocka_unit_test(reflector_ports),
		cmocka_unit_test(bucket_burst_then_rate),
		cmocka_unit_test(bucket_steady_rate),
		cmocka_unit_test(slip_every_nth),
		cmocka_unit_test(prefix_grouping),
		cmocka_unit_test(table_eviction),
		cmocka_unit_test(table_many_sources),
		cmocka_unit_test(rate_bad_config),
		cmocka_unit_test(cidr6_match),
		cmocka_unit_test(rate6_prefix_grouping),
		cmocka_unit_test(trusted_both_families),
		cmocka_unit_test(cache_same_verdict),
		cmocka_unit_test(rate_share),
		cmocka_unit_test(martians),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

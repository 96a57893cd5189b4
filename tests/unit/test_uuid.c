/* SPDX-License-Identifier: BSD-3-Clause */
/* RFC 9562 UUIDv7: text, fields, flakewire's layout (fw_uuid.h), the CSPRNG (fw_rng.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_layout.h"
#include "fw_rng.h"
#include "fw_uuid.h"

/* RFC 9562 appendix A.6: UUIDv7 for 2022-02-22 14:22:22 -05:00. */
static const char rfc_text[] = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F";

static void rfc9562_vector(void **state)
{
	uint8_t u[FW_UUID_LEN];
	char text[FW_UUID_TEXT_LEN], iso[FW_ISO8601_LEN];
	struct fw_uuid7_parts p;

	(void)state;
	assert_int_equal(fw_uuid_parse(rfc_text, u, NULL, NULL), 0);
	assert_int_equal(u[0], 0x01);
	assert_int_equal(u[15], 0x8F);
	assert_string_equal(fw_uuid_format(u, text), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
	assert_int_equal(fw_uuid7_decode(NULL, u, &p), 0);
	assert_int_equal(p.version, 7);
	assert_int_equal(p.variant, 2);
	assert_true(p.is_v7);
	/* unix_ts_ms 0x017F22E279B0 = 1645557742000 = 2022-02-22T19:22:22.000Z. */
	assert_true(p.unix_ms == UINT64_C(0x017F22E279B0));
	assert_true(p.unix_ms == UINT64_C(1645557742000));
	assert_string_equal(fw_format_iso8601(p.unix_ms, iso), "2022-02-22T19:22:22.000Z");
	/* Not made by flakewire: its byte where the default layout's tag goes reads 0x4D. */
	assert_false(p.flakewire);
}

/* The worked example of PROTOCOL.md, bit by bit. */
static void protocol_worked_example(void **state)
{
	struct fw_layout l;
	uint8_t u[FW_UUID_LEN];
	char text[FW_UUID_TEXT_LEN];
	struct fw_uuid7_parts p;
	static const uint8_t want[FW_UUID_LEN] = {0x01, 0x9B, 0x76, 0xDA, 0xAB, 0xE8, 0x70, 0x05,
						  0x80, 0x7F, 0x7A, 0xBC, 0xDE, 0xF0, 0x12, 0x34};

	(void)state;
	fw_layout_default(&l);
	assert_int_equal(fw_uuid7_rand_bits(&l), 44);
	assert_int_equal(
		fw_uuid7_encode(&l, UINT64_C(1767225601000), 0, 7, 5, UINT64_C(0xABCDEF01234), u),
		0);
	assert_memory_equal(u, want, sizeof(want));
	assert_string_equal(fw_uuid_format(u, text), "019b76da-abe8-7005-807f-7abcdef01234");
	assert_int_equal(fw_uuid7_decode(&l, u, &p), 0);
	assert_true(p.is_v7 && p.flakewire);
	assert_true(p.unix_ms == UINT64_C(1767225601000));
	assert_int_equal(p.counter, 5);
	assert_int_equal(p.worker, 7);
	assert_int_equal(p.datacenter, 0);
	assert_int_equal(p.rand_bits, 44);

	/* Through the ID it stands for, as the responders make it. */
	struct fw_uuid7_fmt f;
	uint8_t v[FW_UUID_LEN];
	uint64_t id;
	assert_int_equal(fw_uuid7_fmt_init(&f, &l, 0, 7), 0);
	assert_int_equal(fw_layout_encode(&l, 1000, 0, 7, 5, &id), 0);
	assert_int_equal(fw_uuid7_from_id(&f, id, UINT64_C(0xABCDEF01234), v), 0);
	assert_memory_equal(v, want, sizeof(want));
	/* Random bits beyond the 44 are ignored. */
	assert_int_equal(fw_uuid7_from_id(&f, id, UINT64_C(0xFFFFFABCDEF01234), v), 0);
	assert_memory_equal(v, want, sizeof(want));
}

/* Every layout shape: fields come back, version/variant hold, random bits stay out. */
static void layouts_roundtrip(void **state)
{
	static const unsigned shapes[][3] = {
		{0, 10, 12}, {5, 5, 12}, {0, 0, 22},  {10, 16, 5}, {0, 0, 1},
		{4, 4, 4},   {0, 16, 8}, {10, 0, 21}, {1, 0, 1},   {0, 8, 14},
	};
	(void)state;
	srand(7);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct fw_layout l;
		unsigned d = shapes[i][0], w = shapes[i][1], s = shapes[i][2];

		assert_int_equal(fw_layout_init(&l, UINT64_C(1767225600000), d, w, s, 0), 0);
		assert_true(fw_uuid7_rand_bits(&l) >= 35);
		for (int k = 0; k < 200; k++) {
			uint32_t dc = d ? (uint32_t)rand() % (1u << d) : 0;
			uint32_t wk = w ? (uint32_t)rand() % (1u << w) : 0;
			uint32_t ctr = (uint32_t)rand() % (1u << s);
			uint64_t ms =
				UINT64_C(1767225600000) + (uint64_t)rand() % (UINT64_C(1) << 31);
			uint64_t rnd = k % 3 == 0   ? UINT64_MAX
				       : k % 3 == 1 ? 0
						    : (uint64_t)rand() << 31 ^ (uint64_t)rand();
			uint8_t u[FW_UUID_LEN], u2[FW_UUID_LEN];
			struct fw_uuid7_parts p;

			assert_int_equal(fw_uuid7_encode(&l, ms, dc, wk, ctr, rnd, u), 0);
			assert_int_equal(u[6] >> 4, 7);
			assert_int_equal(u[8] >> 6, 2);
			assert_int_equal(fw_uuid7_decode(&l, u, &p), 0);
			assert_true(p.is_v7 && p.flakewire);
			assert_true(p.unix_ms == ms);
			assert_int_equal(p.counter, ctr);
			assert_int_equal(p.datacenter, dc);
			assert_int_equal(p.worker, wk);
			/* The next counter value is larger whatever the random bits. */
			if (ctr + 1 < (1u << s)) {
				assert_int_equal(fw_uuid7_encode(&l, ms, dc, wk, ctr + 1, ~rnd, u2),
						 0);
				assert_true(fw_uuid_cmp(u, u2) < 0);
			}
			/* The next ms is larger whatever the counter. */
			assert_int_equal(fw_uuid7_encode(&l, ms + 1, dc, wk, 0, 0, u2), 0);
			assert_true(fw_uuid_cmp(u, u2) < 0);
		}
	}
}

static void bad_fields(void **state)
{
	struct fw_layout l;
	uint8_t u[FW_UUID_LEN];
	struct fw_uuid7_fmt f;

	(void)state;
	fw_layout_default(&l);
	assert_int_equal(fw_uuid7_encode(&l, l.epoch_ms, 0, 1024, 0, 0, u), FW_ERANGE);
	assert_int_equal(fw_uuid7_encode(&l, l.epoch_ms, 1, 0, 0, 0, u), FW_ERANGE);
	assert_int_equal(fw_uuid7_encode(&l, l.epoch_ms, 0, 0, 4096, 0, u), FW_ERANGE);
	assert_int_equal(fw_uuid7_encode(&l, l.epoch_ms - 1, 0, 0, 0, 0, u), FW_ERANGE);
	assert_int_equal(fw_uuid7_encode(&l, l.epoch_ms + (UINT64_C(1) << 41), 0, 0, 0, 0, u),
			 FW_ERANGE);
	assert_int_equal(fw_uuid7_encode(NULL, 0, 0, 0, 0, 0, u), -EINVAL);
	assert_int_equal(fw_uuid7_fmt_init(&f, &l, 0, 1024), FW_ERANGE);
	/* A layout whose time runs past 48 bits of Unix ms. */
	assert_int_equal(fw_layout_init(&l, UINT64_C(1767225600000), 0, 0, 1, 0), 0);
	assert_int_equal(fw_uuid7_fmt_init(&f, &l, 0, 0), 0);
	assert_int_equal(fw_uuid7_from_id(&f, (UINT64_C(1) << 48) << 1, 0, u), FW_ERANGE);
}

static void text_errors(void **state)
{
	uint8_t u[FW_UUID_LEN], keep[FW_UUID_LEN];
	enum fw_uuid_text_error why;
	size_t pos;

	(void)state;
	memset(u, 0x5A, sizeof(u));
	memcpy(keep, u, sizeof(u));
	assert_int_equal(fw_uuid_parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398", u, &why, &pos),
			 -EINVAL);
	assert_int_equal(why, FW_UUID_TEXT_LENGTH);
	assert_int_equal(pos, 35);
	assert_int_equal(fw_uuid_parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398f0", u, &why, &pos),
			 -EINVAL);
	assert_int_equal(why, FW_UUID_TEXT_LENGTH);
	assert_int_equal(pos, 37);
	assert_int_equal(fw_uuid_parse("017f22e2079b0-7cc3-98c4-dc0c0c07398f", u, &why, &pos),
			 -EINVAL);
	assert_int_equal(why, FW_UUID_TEXT_HYPHEN);
	assert_int_equal(pos, 8);
	assert_int_equal(fw_uuid_parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398g", u, &why, &pos),
			 -EINVAL);
	assert_int_equal(why, FW_UUID_TEXT_DIGIT);
	assert_int_equal(pos, 35);
	assert_int_equal(fw_uuid_parse("017f22e2-79b0-7cc3-98c4-dc0c0c07-98f", u, &why, &pos),
			 -EINVAL);
	assert_int_equal(why, FW_UUID_TEXT_DIGIT);
	assert_int_equal(pos, 32);
	assert_int_equal(fw_uuid_parse("{17f22e2-79b0-7cc3-98c4-dc0c0c07398}", u, &why, &pos),
			 -EINVAL);
	assert_int_equal(pos, 0);
	assert_int_equal(fw_uuid_parse("", u, &why, &pos), -EINVAL);
	assert_int_equal(why, FW_UUID_TEXT_LENGTH);
	assert_memory_equal(u, keep, sizeof(u));
	/* Mixed case is fine. */
	assert_int_equal(fw_uuid_parse("017F22e2-79B0-7cC3-98c4-DC0C0C07398f", u, &why, &pos), 0);
	assert_int_equal(why, FW_UUID_TEXT_OK);
}

static void other_versions(void **state)
{
	uint8_t u[FW_UUID_LEN];
	struct fw_uuid7_parts p;

	(void)state;
	/* A UUIDv4 (RFC 9562 appendix A.3). */
	assert_int_equal(fw_uuid_parse("919108f7-52d1-4320-9bac-f847db4148a8", u, NULL, NULL), 0);
	assert_int_equal(fw_uuid7_decode(NULL, u, &p), 0);
	assert_int_equal(p.version, 4);
	assert_int_equal(p.variant, 2);
	assert_false(p.is_v7);
	assert_false(p.flakewire);
	/* Version 7 digit but the NCS variant: not a UUIDv7. */
	assert_int_equal(fw_uuid_parse("017f22e2-79b0-7cc3-18c4-dc0c0c07398f", u, NULL, NULL), 0);
	assert_int_equal(fw_uuid7_decode(NULL, u, &p), 0);
	assert_int_equal(p.variant, 0);
	assert_false(p.is_v7);
	/* The nil and max UUIDs. */
	memset(u, 0, sizeof(u));
	assert_int_equal(fw_uuid7_decode(NULL, u, &p), 0);
	assert_false(p.is_v7);
	memset(u, 0xFF, sizeof(u));
	assert_int_equal(fw_uuid7_decode(NULL, u, &p), 0);
	assert_int_equal(p.variant, 7);
	assert_int_equal(p.version, 15);
}

/* The CSPRNG: distinct output, keystream refills, wiped as it is read. */
static void rng_output(void **state)
{
	static struct fw_rng a, b;
	uint64_t first_a, ones = 0;

	(void)state;
	assert_int_equal(fw_rng_init(&a), 0);
	assert_int_equal(fw_rng_init(&b), 0);
	first_a = fw_rng_u64(&a);
	assert_true(first_a != fw_rng_u64(&b));      /* two seeds: 2^-64 to collide */
	assert_true(a.buf[0] == 0 && a.buf[7] == 0); /* read bytes are wiped */
	for (int i = 0; i < 100000; i++) {
		uint64_t v = fw_rng_u64(&a);
		assert_true(v != first_a);
		ones += (uint64_t)__builtin_popcountll(v);
	}
	assert_true(a.refills > 700); /* 1 KiB per refill: 800 KB read */
	/* 6.4 M bits: the share of ones is within 0.5 % of half (sigma ~ 0.02 %). */
	assert_true(ones > 3184000 && ones < 3216000);
	/* Past FW_RNG_RESEED_BYTES the next refill mixes in fresh getrandom() bytes. */
	a.since_seed = FW_RNG_RESEED_BYTES;
	a.pos = FW_RNG_BUF_LEN;
	assert_int_equal(a.reseeds, 0);
	(void)fw_rng_u64(&a);
	assert_int_equal(a.reseeds, 1);
	assert_true(a.since_seed == FW_RNG_BUF_LEN);
	fw_rng_wipe(&a);
	assert_int_equal(a.key[0] | a.key[31], 0);
	assert_int_equal(fw_rng_init(NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc9562_vector),    cmocka_unit_test(protocol_worked_example),
		cmocka_unit_test(layouts_roundtrip), cmocka_unit_test(bad_fields),
		cmocka_unit_test(text_errors),       cmocka_unit_test(other_versions),
		cmocka_unit_test(rng_output),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

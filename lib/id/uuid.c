/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "fw_err.h"
#include "fw_uuid.h"

/* Width of P, the rand_a and rand_b bits together. */
#define P_BITS 74u

FW_API unsigned fw_uuid7_rand_bits(const struct fw_layout *l)
{
	return P_BITS - 8u - l->seq_bits - l->dc_bits - l->worker_bits;
}

FW_API int fw_uuid7_fmt_init(struct fw_uuid7_fmt *f, const struct fw_layout *l, uint32_t datacenter,
			     uint32_t worker)
{
	if (f == NULL || l == NULL)
		return -EINVAL;
	int rc = fw_layout_validate(l, 0);
	if (rc != 0)
		return rc;
	if ((uint64_t)datacenter >> l->dc_bits != 0 || (uint64_t)worker >> l->worker_bits != 0)
		return FW_ERANGE;
	memset(f, 0, sizeof(*f));
	f->epoch_ms = l->epoch_ms;
	f->seq_mask = (UINT64_C(1) << l->seq_bits) - 1;
	f->node_tag = ((uint64_t)datacenter << l->worker_bits | worker) << 8 | FW_UUID7_TAG;
	f->rand_bits = fw_uuid7_rand_bits(l);
	f->rand_mask = f->rand_bits >= 64 ? UINT64_MAX : (UINT64_C(1) << f->rand_bits) - 1;
	f->time_shift = (uint32_t)l->seq_bits + l->worker_bits + l->dc_bits;
	f->counter_shift = (uint32_t)l->dc_bits + l->worker_bits + 8;
	return 0;
}

FW_API int fw_uuid7_encode(const struct fw_layout *l, uint64_t unix_ms, uint32_t datacenter,
			   uint32_t worker, uint32_t counter, uint64_t rnd,
			   uint8_t out[FW_UUID_LEN])
{
	struct fw_uuid7_fmt f;
	int rc;

	if (l == NULL || out == NULL)
		return -EINVAL;
	rc = fw_uuid7_fmt_init(&f, l, datacenter, worker);
	if (rc != 0)
		return rc;
	if ((uint64_t)counter >> l->seq_bits != 0 || unix_ms < l->epoch_ms ||
	    (unix_ms - l->epoch_ms) >> l->time_bits != 0)
		return FW_ERANGE;
	/* The same path as the responders: through the ID this UUID stands for. */
	uint64_t id = (unix_ms - l->epoch_ms) << f.time_shift | counter;
	return fw_uuid7_from_id(&f, id, rnd, out);
}

/* Bits [from, from + n) of P (0 = the first bit of rand_a), n <= 32. */
static uint32_t p_bits(uint64_t hi, uint64_t lo, unsigned from, unsigned n)
{
	__extension__ typedef unsigned __int128 u128;
	u128 p = (u128)(hi & 0xFFF) << 62 | (lo & ((UINT64_C(1) << 62) - 1));

	if (n == 0)
		return 0;
	return (uint32_t)((p >> (P_BITS - from - n)) & ((UINT64_C(1) << n) - 1));
}

FW_API int fw_uuid7_decode(const struct fw_layout *layout, const uint8_t u[FW_UUID_LEN],
			   struct fw_uuid7_parts *out)
{
	struct fw_layout def;
	uint64_t hi, lo;

	if (u == NULL || out == NULL)
		return -EINVAL;
	if (layout == NULL) {
		fw_layout_default(&def);
		layout = &def;
	}
	memset(out, 0, sizeof(*out));
	hi = fw_uuid_get_be64(u);
	lo = fw_uuid_get_be64(u + 8);
	out->version = (unsigned)(hi >> 12 & 0xF);
	if ((u[8] & 0x80) == 0)
		out->variant = 0;
	else if ((u[8] & 0x40) == 0)
		out->variant = 2;
	else
		out->variant = (u[8] & 0x20) ? 7 : 6;
	out->is_v7 = out->version == 7 && out->variant == 2;
	if (!out->is_v7)
		return 0;
	out->unix_ms = hi >> 16;

	unsigned s = layout->seq_bits, d = layout->dc_bits, w = layout->worker_bits;
	if (s + d + w + 8 > P_BITS)
		return 0;
	if (p_bits(hi, lo, s + d + w, 8) != FW_UUID7_TAG)
		return 0;
	out->flakewire = true;
	out->counter = p_bits(hi, lo, 0, s);
	out->datacenter = p_bits(hi, lo, s, d);
	out->worker = p_bits(hi, lo, s + d, w);
	out->rand_bits = fw_uuid7_rand_bits(layout);
	return 0;
}

FW_API char *fw_uuid_format(const uint8_t u[FW_UUID_LEN], char text[FW_UUID_TEXT_LEN])
{
	static const char hex[] = "0123456789abcdef";
	char *p = text;

	for (unsigned i = 0; i < FW_UUID_LEN; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 0xF];
	}
	*p = '\0';
	return text;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int text_error(enum fw_uuid_text_error e, size_t at, enum fw_uuid_text_error *why,
		      size_t *pos)
{
	if (why)
		*why = e;
	if (pos)
		*pos = at;
	return -EINVAL;
}

FW_API int fw_uuid_parse(const char *text, uint8_t out[FW_UUID_LEN], enum fw_uuid_text_error *why,
			 size_t *pos)
{
	uint8_t u[FW_UUID_LEN];
	size_t len, k = 0;

	if (text == NULL || out == NULL)
		return text_error(FW_UUID_TEXT_LENGTH, 0, why, pos);
	len = strnlen(text, FW_UUID_TEXT_LEN);
	if (len != FW_UUID_TEXT_LEN - 1)
		return text_error(FW_UUID_TEXT_LENGTH, strlen(text), why, pos);
	for (size_t i = 0; i < len; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (text[i] != '-')
				return text_error(FW_UUID_TEXT_HYPHEN, i, why, pos);
			continue;
		}
		int hv = hexval(text[i]);
		if (hv < 0)
			return text_error(FW_UUID_TEXT_DIGIT, i, why, pos);
		if (k % 2 == 0)
			u[k / 2] = (uint8_t)(hv << 4);
		else
			u[k / 2] |= (uint8_t)hv;
		k++;
	}
	memcpy(out, u, sizeof(u));
	if (why)
		*why = FW_UUID_TEXT_OK;
	return 0;
}

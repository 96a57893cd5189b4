/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "fw_err.h"
#include "fw_layout.h"

FW_API void fw_layout_default(struct fw_layout *l)
{
	l->epoch_ms = FW_DEFAULT_EPOCH_MS;
	l->dc_bits = 0;
	l->worker_bits = 10;
	l->seq_bits = 12;
	l->time_bits = 41;
}

static int check_widths(unsigned time_bits, unsigned dc_bits, unsigned worker_bits,
			unsigned seq_bits)
{
	if (seq_bits < FW_LAYOUT_SEQ_BITS_MIN || seq_bits > FW_LAYOUT_SEQ_BITS_MAX)
		return FW_ELAYOUT_SEQ;
	if (dc_bits > FW_LAYOUT_DC_BITS_MAX || worker_bits > FW_LAYOUT_WORKER_BITS_MAX)
		return FW_ELAYOUT_NODE;
	if (time_bits + dc_bits + worker_bits + seq_bits != 63)
		return FW_ELAYOUT_SUM;
	if (time_bits < FW_LAYOUT_TIME_BITS_MIN)
		return FW_ELAYOUT_TIME;
	return 0;
}

static int check_epoch(uint64_t epoch_ms, uint64_t now_unix_ms)
{
	if (now_unix_ms != 0 && epoch_ms > now_unix_ms + FW_LAYOUT_EPOCH_SLACK_MS)
		return FW_ELAYOUT_EPOCH;
	return 0;
}

FW_API int fw_layout_init(struct fw_layout *l, uint64_t epoch_ms, unsigned dc_bits,
			  unsigned worker_bits, unsigned seq_bits, uint64_t now_unix_ms)
{
	/* Checked one by one so that 63 - sum cannot wrap. */
	if (seq_bits < FW_LAYOUT_SEQ_BITS_MIN || seq_bits > FW_LAYOUT_SEQ_BITS_MAX)
		return FW_ELAYOUT_SEQ;
	if (dc_bits > FW_LAYOUT_DC_BITS_MAX || worker_bits > FW_LAYOUT_WORKER_BITS_MAX)
		return FW_ELAYOUT_NODE;
	unsigned time_bits = 63 - dc_bits - worker_bits - seq_bits;
	int rc = check_widths(time_bits, dc_bits, worker_bits, seq_bits);
	if (rc == 0)
		rc = check_epoch(epoch_ms, now_unix_ms);
	if (rc != 0)
		return rc;
	l->epoch_ms = epoch_ms;
	l->time_bits = (uint8_t)time_bits;
	l->dc_bits = (uint8_t)dc_bits;
	l->worker_bits = (uint8_t)worker_bits;
	l->seq_bits = (uint8_t)seq_bits;
	return 0;
}

FW_API int fw_layout_validate(const struct fw_layout *l, uint64_t now_unix_ms)
{
	if (l == NULL)
		return -EINVAL;
	int rc = check_widths(l->time_bits, l->dc_bits, l->worker_bits, l->seq_bits);
	return rc != 0 ? rc : check_epoch(l->epoch_ms, now_unix_ms);
}

static inline uint64_t mask(unsigned bits)
{
	return bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

FW_API int fw_layout_encode(const struct fw_layout *l, uint64_t ms, uint32_t datacenter,
			    uint32_t worker, uint32_t sequence, uint64_t *id)
{
	if (ms > mask(l->time_bits) || datacenter > mask(l->dc_bits) ||
	    worker > mask(l->worker_bits) || sequence > mask(l->seq_bits))
		return FW_ERANGE;
	unsigned wshift = l->seq_bits;
	unsigned dshift = wshift + l->worker_bits;
	unsigned tshift = dshift + l->dc_bits;
	*id = (ms << tshift) | ((uint64_t)datacenter << dshift) | ((uint64_t)worker << wshift) |
	      sequence;
	return 0;
}

FW_API int fw_layout_decode(const struct fw_layout *l, uint64_t id, struct fw_id_parts *out)
{
	if (id >> 63)
		return FW_ENEGATIVE;
	unsigned wshift = l->seq_bits;
	unsigned dshift = wshift + l->worker_bits;
	unsigned tshift = dshift + l->dc_bits;
	out->sequence = (uint32_t)(id & mask(l->seq_bits));
	out->worker = (uint32_t)((id >> wshift) & mask(l->worker_bits));
	out->datacenter = (uint32_t)((id >> dshift) & mask(l->dc_bits));
	out->ms = id >> tshift;
	out->unix_ms = out->ms + l->epoch_ms;
	return 0;
}

FW_API int fw_layout_check_run(const struct fw_layout *l, uint64_t first, uint64_t n,
			       uint32_t datacenter, uint32_t worker, struct fw_id_parts *a,
			       struct fw_id_parts *b)
{
	struct fw_id_parts pa, pb;
	uint64_t last = first + n - 1;

	/* last >= first below 2^63 puts the whole run below it */
	if (n == 0 || last < first || last >> 63)
		return FW_ENEGATIVE;
	if (!l)
		return 0;
	a = a ? a : &pa;
	b = b ? b : &pb;
	fw_layout_decode(l, first, a);
	fw_layout_decode(l, last, b);
	if (a->datacenter != datacenter || a->worker != worker || b->datacenter != datacenter ||
	    b->worker != worker)
		return FW_EINVALID;
	return 0;
}

FW_API uint64_t fw_layout_ids_per_ms(const struct fw_layout *l)
{
	return UINT64_C(1) << l->seq_bits;
}

FW_API uint64_t fw_layout_ids_per_sec(const struct fw_layout *l)
{
	return 1000 * fw_layout_ids_per_ms(l);
}

FW_API uint32_t fw_layout_datacenters(const struct fw_layout *l)
{
	return UINT32_C(1) << l->dc_bits;
}

FW_API uint32_t fw_layout_workers(const struct fw_layout *l)
{
	return UINT32_C(1) << l->worker_bits;
}

FW_API uint64_t fw_layout_end_unix_ms(const struct fw_layout *l)
{
	return l->epoch_ms + mask(l->time_bits);
}

FW_API char *fw_format_iso8601(uint64_t unix_ms, char *buf)
{
	time_t secs = (time_t)(unix_ms / 1000);
	struct tm tm;
	if (gmtime_r(&secs, &tm) == NULL) {
		snprintf(buf, FW_ISO8601_LEN, "(out of range)");
		return buf;
	}
	/* Narrow types let the compiler prove the output fits. */
	snprintf(buf, FW_ISO8601_LEN, "%04ld-%02u-%02uT%02u:%02u:%02u.%03uZ",
		 (long)tm.tm_year + 1900, (unsigned char)(tm.tm_mon + 1), (unsigned char)tm.tm_mday,
		 (unsigned char)tm.tm_hour, (unsigned char)tm.tm_min, (unsigned char)tm.tm_sec,
		 (unsigned short)(unix_ms % 1000));
	return buf;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: any datagram a responder can receive. A parsed request
 * is answered the way a responder would, into a buffer no larger than the
 * request when the source is untrusted, and the reply must parse back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reply(const uint8_t *buf, int len, const struct fw_wire_hdr *h, uint8_t status)
{
	struct fw_wire_reply r;

	if (len == FW_EWIRE_SPACE)
		return;
	if (len < FW_WIRE_HDR_LEN)
		abort();
	/* A client never sends an unknown op, so it need not parse the answer to one. */
	if (fw_wire_reply_size(h->op, 0) == 0)
		return;
	if (fw_wire_parse_reply(buf, (size_t)len, &r) != 0)
		abort();
	if (r.hdr.tag != h->tag || r.hdr.status != status || r.hdr.op != (h->op | FW_WIRE_OP_REPLY))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t ids[FW_WIRE_LIST_MAX];
	static const struct fw_wire_range ranges[FW_WIRE_RANGES_MAX] = {
		[0 ... FW_WIRE_RANGES_MAX - 1] = {.first = 1, .n = 1},
	};
	static const struct fw_wire_info info = {.version_min = 1, .version_max = 1};
	static const uint8_t uuids[FW_WIRE_UUID7_MAX][FW_WIRE_UUID_LEN];
	struct fw_wire_hdr h;
	uint8_t *buf;
	size_t cap;
	uint16_t n;
	int ret, len;

	ret = fw_wire_parse_request(data, size, &h);
	/* Padding is never required, so only a short header is SHORT. */
	if ((ret == FW_EWIRE_SHORT) != (size < FW_WIRE_HDR_LEN))
		abort();
	if (ret == FW_EWIRE_SHORT || ret == FW_EWIRE_MAGIC)
		return 0;
	if ((ret != 0 && ret != FW_EWIRE_VERSION && ret != FW_EWIRE_BAD) || size < FW_WIRE_HDR_LEN)
		abort();
	if (ret == 0 && fw_wire_request_size(h.op, h.count) == 0)
		abort();
	if (ret == FW_EWIRE_BAD && (h.op & FW_WIRE_OP_REPLY))
		return 0;

	/* An exact-size heap buffer, so ASan sees any write past the cap. */
	cap = size < FW_WIRE_MTU_PAYLOAD ? size : FW_WIRE_MTU_PAYLOAD;
	buf = malloc(cap);
	if (buf == NULL)
		return 0;
	if (ret != 0) {
		h.status =
			ret == FW_EWIRE_VERSION ? FW_WIRE_ST_BAD_VERSION : FW_WIRE_ST_BAD_REQUEST;
		len = fw_wire_write_status(buf, cap, &h);
		check_reply(buf, len, &h, h.status);
		free(buf);
		return 0;
	}
	h.status = FW_WIRE_ST_OK;
	switch (h.op) {
	case FW_WIRE_OP_ID:
	case FW_WIRE_OP_LIST:
		n = h.count;
		len = fw_wire_write_ids(buf, cap, &h, ids, n);
		break;
	case FW_WIRE_OP_RANGE:
		/* As many ranges as fw_wire_request_size() pads for. */
		n = (uint16_t)((h.count + 4095u) / 4096u + 1);
		n = n < FW_WIRE_RANGES_MAX ? n : FW_WIRE_RANGES_MAX;
		len = fw_wire_write_ranges(buf, cap, &h, ranges, n);
		break;
	case FW_WIRE_OP_UUID7:
		n = h.count;
		len = fw_wire_write_uuids(buf, cap, &h, uuids, n);
		break;
	default:
		len = fw_wire_write_info(buf, cap, &h, &info);
		break;
	}
	check_reply(buf, len, &h, FW_WIRE_ST_OK);
	/* A padded request always has room for the full answer. */
	if (len == FW_EWIRE_SPACE && size >= fw_wire_request_size(h.op, h.count) && cap == size)
		abort();
	free(buf);
	return 0;
}

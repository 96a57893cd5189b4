/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: any datagram a client can receive. A reply that parses
 * is written back from the decoded form and must come out byte for byte the
 * same, so parse and write agree on every field.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fw_err.h"
#include "fw_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_wire_reply r;
	struct fw_wire_hdr h;
	uint8_t *buf;
	int ret, len;

	ret = fw_wire_parse_reply(data, size, &r);
	if (ret != 0) {
		if (ret != FW_EWIRE_SHORT && ret != FW_EWIRE_MAGIC && ret != FW_EWIRE_VERSION &&
		    ret != FW_EWIRE_BAD)
			abort();
		return 0;
	}
	if (size < FW_WIRE_HDR_LEN || size > FW_WIRE_MTU_PAYLOAD)
		abort();

	buf = malloc(size);
	if (buf == NULL)
		return 0;
	h = r.hdr;
	h.op &= (uint8_t)~FW_WIRE_OP_REPLY;
	if (h.status != FW_WIRE_ST_OK)
		len = fw_wire_write_status(buf, size, &h);
	else if (h.op == FW_WIRE_OP_RANGE)
		len = fw_wire_write_ranges(buf, size, &h, r.body.ranges, h.count);
	else if (h.op == FW_WIRE_OP_INFO)
		len = fw_wire_write_info(buf, size, &h, &r.body.info);
	else if (h.op == FW_WIRE_OP_UUID7)
		len = fw_wire_write_uuids(
			buf, size, &h, (const uint8_t(*)[FW_WIRE_UUID_LEN])r.body.uuids, h.count);
	else
		len = fw_wire_write_ids(buf, size, &h, r.body.ids, h.count);
	if (len < 0 || (size_t)len != size || memcmp(buf, data, size) != 0)
		abort();
	free(buf);
	return 0;
}

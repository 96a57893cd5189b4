/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "fw_err.h"

struct fw_err_desc {
	int code;
	const char *text;
};

static const struct fw_err_desc fw_err_table[] = {
	{FW_OK, "success"},
	{FW_ELAYOUT_SUM, "layout widths must add up to 63 bits"},
	{FW_ELAYOUT_SEQ, "sequence bits out of range"},
	{FW_ELAYOUT_NODE, "datacenter or worker bits out of range"},
	{FW_ELAYOUT_TIME, "too few timestamp bits"},
	{FW_ELAYOUT_EPOCH, "epoch is in the future"},
	{FW_ENEGATIVE, "ID is negative (sign bit set)"},
	{FW_ERANGE, "value out of range for its field"},
	{FW_ERETRY, "sequence space used up: retry later"},
	{FW_ECLOCK, "clock went backwards too far: unsafe to issue"},
	{FW_EMARK, "reached the reserved high-water mark"},
	{FW_ECAL, "clock calibration samples unusable"},
	{FW_ESTATE_CORRUPT, "state file is corrupt or truncated"},
	{FW_EMARK_AHEAD, "system clock is behind the persisted mark by more than mark_ahead_ms"},
	{FW_EMARK_LAYOUT, "the mark fences another ID layout or epoch"},
	{FW_EMARK_LOST, "a mark was written to this state and is missing"},
	{FW_EWIRE_SHORT, "datagram truncated"},
	{FW_EWIRE_MAGIC, "not a flakewire datagram"},
	{FW_EWIRE_VERSION, "unsupported protocol version"},
	{FW_EWIRE_BAD, "malformed message"},
	{FW_EWIRE_SPACE, "output buffer too small"},
	{FW_ETIMEOUT, "no responder answered in time"},
	{FW_ESTATUS, "responder answered with an error status"},
	{FW_EINVALID, "responder sent IDs that failed validation"},
	{FW_ERESOLVE, "cannot parse responder address"},
	{FW_ECLOSED, "client closed"},
	{FW_ECONF, "configuration error"},
	{FW_EFLEET_FULL, "no worker ID left to claim"},
	{FW_EFLEET_LAYOUT, "the fleet's root holds another ID layout"},
	{FW_EFLEET_IDENTITY, "fleet identity in use by another live process"},
	{FW_EFLEET_STORE, "the registry's store (ZooKeeper or etcd) unreachable or failed"},
	{FW_EFLEET_AUTH, "the registry refuses this node's credentials"},
	{FW_EFLEET_ROOT, "the fleet's root was not made for this node by flakectl fleet init"},
};

FW_API const char *fw_strerror(int err)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(fw_err_table); i++)
		if (fw_err_table[i].code == err)
			return fw_err_table[i].text;
	if (err < 0 && err > -FW_ERR_BASE)
		return strerror(-err);
	return "unknown error";
}

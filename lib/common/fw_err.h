/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error codes of every flakewire library.
 *
 * Library functions return 0 (or a non-negative count) on success and a
 * negative code on failure: either a negated errno value (-EINVAL, -ENOENT,
 * -EIO, ...) or one of the project codes below. fw_strerror() describes both.
 */
#pragma once

#include "fw_common.h"

/* Project codes start well above any errno value. */
#define FW_ERR_BASE 4000

enum fw_err {
	FW_OK = 0,

	/* ID layout */
	FW_ELAYOUT_SUM = -(FW_ERR_BASE + 1),   /* widths do not add up to 63 bits */
	FW_ELAYOUT_SEQ = -(FW_ERR_BASE + 2),   /* sequence bits out of range */
	FW_ELAYOUT_NODE = -(FW_ERR_BASE + 3),  /* datacenter/worker bits out of range */
	FW_ELAYOUT_TIME = -(FW_ERR_BASE + 4),  /* too few timestamp bits */
	FW_ELAYOUT_EPOCH = -(FW_ERR_BASE + 5), /* epoch too far in the future */
	FW_ENEGATIVE = -(FW_ERR_BASE + 6),     /* ID has the sign bit set */
	FW_ERANGE = -(FW_ERR_BASE + 7),        /* value does not fit its field */

	/* Generator outcomes: nothing was issued */
	FW_ERETRY = -(FW_ERR_BASE + 20), /* sequence and borrow bound used up: retry later */
	FW_ECLOCK = -(FW_ERR_BASE + 21), /* clock went back too far: unsafe to issue */
	FW_EMARK = -(FW_ERR_BASE + 22),  /* reached the reserved high-water mark */

	/* Clock model */
	FW_ECAL = -(FW_ERR_BASE + 30), /* calibration samples unusable */

	/* State file */
	FW_ESTATE_CORRUPT = -(FW_ERR_BASE + 40), /* state file garbled or truncated */
	FW_EMARK_AHEAD = -(FW_ERR_BASE + 41),    /* clock far behind the mark (start_policy fail) */
	FW_EMARK_LAYOUT = -(FW_ERR_BASE + 42),   /* the mark fences another ID layout or epoch */
	FW_EMARK_LOST = -(FW_ERR_BASE + 43),     /* a mark was written here and is gone */

	/* Wire protocol */
	FW_EWIRE_SHORT = -(FW_ERR_BASE + 50),   /* datagram shorter than its header says */
	FW_EWIRE_MAGIC = -(FW_ERR_BASE + 51),   /* not a flakewire datagram */
	FW_EWIRE_VERSION = -(FW_ERR_BASE + 52), /* unsupported protocol version */
	FW_EWIRE_BAD = -(FW_ERR_BASE + 53),     /* malformed message */
	FW_EWIRE_SPACE = -(FW_ERR_BASE + 54),   /* output buffer too small */

	/* Client */
	FW_ETIMEOUT = -(FW_ERR_BASE + 60), /* no responder answered in time */
	FW_ESTATUS = -(FW_ERR_BASE + 61),  /* responder answered with an error status */
	FW_EINVALID = -(FW_ERR_BASE + 62), /* responder sent IDs that failed validation */
	FW_ERESOLVE = -(FW_ERR_BASE + 63), /* responder address could not be parsed */
	FW_ECLOSED = -(FW_ERR_BASE + 64),  /* client shut down: nothing more is handed out */

	/* Configuration */
	FW_ECONF = -(FW_ERR_BASE + 70), /* configuration error (details in the message) */

	/* Fleet (lib/fleet) */
	FW_EFLEET_FULL = -(FW_ERR_BASE + 80),     /* no worker ID left to claim */
	FW_EFLEET_LAYOUT = -(FW_ERR_BASE + 81),   /* the fleet's root holds another layout */
	FW_EFLEET_IDENTITY = -(FW_ERR_BASE + 82), /* identity in use by another live process */
	FW_EFLEET_STORE = -(FW_ERR_BASE + 83),    /* the registry's store unreachable or failed */
	FW_EFLEET_AUTH = -(FW_ERR_BASE + 84),     /* the registry refuses this node's credentials */
	FW_EFLEET_ROOT = -(FW_ERR_BASE + 85),     /* the root is not one `fleet init` made for this
						   * node (missing, another datacenter value, a
						   * static worker ID it does not reserve) */
};

/*
 * Describes an error code: a project code, a negated errno value, or 0.
 * Returns a static string, never NULL.
 */
FW_API const char *fw_strerror(int err);

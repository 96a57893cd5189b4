/* SPDX-License-Identifier: BSD-3-Clause */
/* The store interface's own code (fw_fleet_store.h): its codes by name. */
#include <errno.h>

#include "fw_fleet_store.h"

const char *fw_fleet_store_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "ok";
	case -ENOENT:
		return "no such record";
	case -EEXIST:
		return "exists";
	case -ESTALE:
		return "version moved";
	case -ENOTCONN:
		return "store unreachable";
	default:
		return "store error";
	}
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Durable files: what every persisted piece of state (the mark, the fleet
 * cache) does after replacing a file by rename. No allocation, no logging.
 */
#pragma once

#include "fw_common.h"

/*
 * fsyncs the directory that holds @path ("." when @path has no '/'), so a
 * rename into it survives a crash (the name lives in the directory's
 * entries, not in the file).
 * Returns 0 or a negated errno (-ENAMETOOLONG, -ENOENT, -EIO, ...).
 */
FW_API int fw_fsync_dir(const char *path);

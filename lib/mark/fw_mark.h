/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The persisted high-water mark: "IDs may have been issued up to unix ms X".
 *
 * A responder reserves time ahead (writes a mark above anything its workers
 * may issue) before its workers pass it, and on start never issues at or below
 * the mark it reads back. The file is small text so an operator can read it:
 *
 *   flakewire-mark 1
 *   unix_ms 1767225600123
 *   check 9f1c2a07b3d4e5f6
 *
 * where check is the FNV-1a 64 hash of the two lines above it, in hex. Any
 * other content (truncation, garbage, a bad check) is FW_ESTATE_CORRUPT.
 *
 * Manual: doc/responders.md#the-mark, doc/guarantees.md.
 */
#pragma once

#include <stdint.h>

#include "fw_common.h"

/*
 * Reads the mark from @path.
 * Returns 0 with *unix_ms set; -ENOENT when the file does not exist (a first
 * start); FW_ESTATE_CORRUPT when it exists but does not parse; another
 * negated errno when it cannot be read.
 */
FW_API int fw_mark_read(const char *path, uint64_t *unix_ms);

/*
 * Writes the mark to @path atomically: writes "<path>.tmp", fsyncs it,
 * renames it over @path and fsyncs the directory. After a crash at any point
 * @path holds either the old or the new mark, never a mix.
 * Returns 0 or a negated errno (-EACCES, -ENOSPC, -EROFS, ...); on error the
 * temporary file is removed and @path is untouched.
 */
FW_API int fw_mark_write(const char *path, uint64_t unix_ms);

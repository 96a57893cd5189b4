/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The persisted high-water mark: "IDs may have been issued up to unix ms X,
 * in this ID layout".
 *
 * A responder reserves time ahead (writes a mark above anything its workers
 * may issue) before its workers pass it, and on start never issues at or below
 * the mark it reads back. A millisecond only fences IDs in the layout they
 * were issued in: with the epoch moved later by D, the IDs of time t equal
 * those issued at t - D. So the mark records the layout it fences, and a
 * start with another one refuses (fw_mark_open) until an operator converts
 * the mark (fw_mark_convert: `flakectl mark FILE --convert`). The file is
 * small text so an operator can read it:
 *
 *   flakewire-mark 2
 *   unix_ms 1767225600123
 *   epoch_ms 1767225600000
 *   datacenter_bits 0
 *   worker_bits 10
 *   sequence_bits 12
 *   datacenter 0
 *   check 9f1c2a07b3d4e5f6
 *
 * where check is the FNV-1a 64 hash of every line above it, in hex. A mark
 * written before layouts were recorded is format 1: its first two lines and
 * the check of those two; it is read as whatever layout the reader is
 * configured with, and the next write replaces it with format 2. Any other
 * content (truncation, garbage, a bad check) is FW_ESTATE_CORRUPT.
 *
 * Once a mark was written, losing it must not look like a first start: the
 * first write of a mark to PATH first creates "PATH.written" (fsynced with
 * its directory), and never removes it. A mark missing beside that record
 * is FW_EMARK_LOST for fw_mark_open(), not a first start. The record only
 * says "a mark was written here"; the mark says up to where.
 *
 * Manual: doc/responders.md#the-mark, doc/guarantees.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"

/* Suffix of the record beside a mark: a mark was written to this path. */
#define FW_MARK_RECORD_SUFFIX ".written"

/* Longest text fw_mark_layout_format() writes, with its NUL. */
#define FW_MARK_LAYOUT_LEN 128

/* What a mark fences: the ID layout and the datacenter value it was issued in. */
struct fw_mark_layout {
	uint64_t epoch_ms;        /* [id] epoch_ms, unix ms */
	uint32_t datacenter_bits; /* [id] datacenter_bits */
	uint32_t worker_bits;     /* [id] worker_bits */
	uint32_t sequence_bits;   /* [id] sequence_bits */
	uint32_t datacenter;      /* [id] datacenter (the value) */
};

/* A mark as read. */
struct fw_mark {
	uint64_t unix_ms;             /* IDs may have been issued up to this unix ms */
	uint32_t format;              /* 1: no layout recorded (layout is zeroed), 2 */
	struct fw_mark_layout layout; /* format 2: the layout it fences */
};

/* True when @a and @b are the same layout (every field equal). */
FW_API bool fw_mark_layout_equal(const struct fw_mark_layout *a, const struct fw_mark_layout *b);

/*
 * Formats @l for a log line or an operator: "epoch_ms E datacenter_bits D
 * worker_bits W sequence_bits S datacenter V" (the [id] keys). @buf holds
 * FW_MARK_LAYOUT_LEN bytes. Returns @buf.
 */
FW_API char *fw_mark_layout_format(const struct fw_mark_layout *l, char *buf);

/*
 * Reads the mark from @path, in either format, without looking at its
 * layout or the record (what a reader that only wants the millisecond
 * needs; a start uses fw_mark_open()).
 * Returns 0 with *unix_ms set; -ENOENT when the file does not exist;
 * FW_ESTATE_CORRUPT when it exists but does not parse; another negated errno
 * when it cannot be read. *unix_ms is untouched on error.
 */
FW_API int fw_mark_read(const char *path, uint64_t *unix_ms);

/*
 * The same, with the format and the layout: *m is filled in on success
 * (format 1: layout all 0), untouched on error. Same returns.
 */
FW_API int fw_mark_read_full(const char *path, struct fw_mark *m);

/*
 * Writes the mark @unix_ms fencing @layout to @path (format 2) atomically:
 * creates the record PATH.written first when it is missing (fsync, directory
 * fsync), then writes "<path>.tmp", fsyncs it, renames it over @path and
 * fsyncs the directory. After a crash at any point @path holds either the
 * old or the new mark, never a mix. A record this call created is removed
 * again when the mark was not renamed into place (a first start whose first
 * write failed still starts next time); after a crash between the two, the
 * record stays without a mark, and a start refuses (the safe side).
 * Returns 0 or a negated errno (-EACCES, -ENOSPC, -EROFS, -ENAMETOOLONG,
 * ...); -EINVAL when @layout is NULL; on error the temporary file is removed
 * and @path is untouched.
 */
FW_API int fw_mark_write(const char *path, uint64_t unix_ms, const struct fw_mark_layout *layout);

/*
 * Whether a mark was ever written to @path: 1 when PATH.written exists, 0
 * when it does not, or a negated errno when that cannot be told.
 */
FW_API int fw_mark_recorded(const char *path);

/*
 * The start's read: the mark of @path checked against the layout @want this
 * start issues in. *found (may be NULL) gets what was read whenever the file
 * parsed (so a caller can name the other layout).
 * Returns
 *  - 0: a format 2 mark fencing @want, or a format 1 mark (read as @want;
 *    the next fw_mark_write() rewrites it);
 *  - -ENOENT: no mark and no record: a first start;
 *  - FW_EMARK_LOST: no mark, but PATH.written says one was written: the IDs
 *    issued before are unknown;
 *  - FW_EMARK_LAYOUT: a format 2 mark fencing another layout;
 *  - FW_ESTATE_CORRUPT, or another negated errno (the mark or the record
 *    cannot be read).
 */
FW_API int fw_mark_open(const char *path, const struct fw_mark_layout *want, struct fw_mark *found);

/*
 * The conversion: the mark, in layout @to, that fences every ID the mark
 * @from_ms may have allowed in layout @from. With shift = datacenter_bits +
 * worker_bits + sequence_bits, the largest ID @from allowed is
 *   ((from_ms - from.epoch_ms + 1) << from.shift) - 1
 * and the result is the smallest mark M such that the smallest ID @to can
 * issue above M, (M - to.epoch_ms + 1) << to.shift, is larger than it
 * (never below to.epoch_ms). The datacenter values are not looked at: the
 * bound holds for every one.
 * Returns 0 with *to_ms set; -EINVAL (a NULL argument, widths above 31 bits
 * in all); FW_ERANGE when @to cannot issue any ID above those (its timestamp
 * field ends first).
 */
FW_API int fw_mark_convert(uint64_t from_ms, const struct fw_mark_layout *from,
			   const struct fw_mark_layout *to, uint64_t *to_ms);

/*
 * A mark to advise an operator when the mark of @path is lost or unreadable:
 * the highest of @now_unix_ms + @margin_ms and of the mark in a leftover
 * "<path>.tmp" (a write that crashed before its rename: it may be the newest
 * reservation). The caller chooses @margin_ms: the reservation ahead
 * ([state] mark_ahead_ms) plus how far its time may run ahead of the system
 * clock (a backward step of the system clock is slewed, never stepped: the
 * node issues ahead of the system clock meanwhile; [clock] step_ms bounds
 * what is not logged).
 * Returns the advice; *tmp_ms (may be NULL) gets the leftover's mark, 0 when
 * there is none or it does not parse.
 */
FW_API uint64_t fw_mark_advice(const char *path, uint64_t now_unix_ms, uint64_t margin_ms,
			       uint64_t *tmp_ms);

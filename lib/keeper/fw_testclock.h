/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fault file of the test-clock builds (flakewire-testclock,
 * flakesock-testclock), shared by both: built only with the tests, linked
 * only into those two binaries, never installed.
 *
 * FLAKEWIRE_TEST_CLOCK=PATH names the file; the owner's keeper thread reads
 * it every tick; a missing file means no fault. Lines "key=value", '#'
 * starts a comment:
 *   offset_ms=N  added to every system-clock sample: -3 is the system clock
 *                stepped back 3 ms, 3600000 stepped forward an hour
 *   tsc_ppm=P    (or tick_ppm) from when it is read, the tick source runs P
 *                ppm fast against the system clock (samples advance
 *                1 / (1 + P/1e6) as fast); -900000 < P < 900000 (500000:
 *                50 % fast, -300000: 30 % slow)
 *   pause_ms=N   once each time the file's content changes: the owner holds
 *                its workers for N ms while the clocks go on (a VM pause)
 *   tick_back_ms=N  from when it is read, the tick source itself reads N ms
 *                of ticks lower, for the keeper and every worker alike: it
 *                went back, as a TSC can (reset by a resume from suspend,
 *                rewritten by firmware or by a hypervisor restoring a guest
 *                without its TSC offset). Only where every reader of the
 *                ticks goes through fw_testclock_ticks (the @ticks_per_ms
 *                of fw_testclock_open is not 0: flakesock-testclock); else
 *                the line is refused.
 *   worker_back_ms=N  the same for the workers' tick readings only
 *                (fw_testclock_worker_ticks), not the keeper's: a worker
 *                whose time is not the keeper's, what lasting CLOCK_UNSAFE
 *                replies mean now that the keeper re-anchors ticks that
 *                went back (the alerts test's ClockUnsafe). Same builds.
 * The other faults change only the keeper's system-clock samples: workers
 * see them through the published calibration, the production path.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the fault file says now. */
struct fw_testclock_faults {
	int64_t offset_ms;
	int64_t ppm;
	int64_t pause_ms;
	int64_t tick_back_ms;
	int64_t worker_back_ms;
};

/*
 * Starts reading the fault file at @path (NULL or "": no faults, a no-op
 * clock). @ticks_per_ms: the tick source's rate, when the keeper and every
 * worker read their ticks through fw_testclock_ticks (tick_back_ms applies);
 * 0: they do not, and a tick_back_ms line is bad. Returns 0, or -1 when
 * @path is too long.
 */
int fw_testclock_open(const char *path, uint64_t ticks_per_ms);

/* True after a successful fw_testclock_open() with a path. */
bool fw_testclock_on(void);

/* The file's path ("" when off). */
const char *fw_testclock_path(void);

/*
 * Re-reads the file. Returns 1 when its content changed and parsed (*f
 * filled in, the new offset and rate in effect from now), 0 when nothing
 * changed, -1 when it changed but a line is bad (@msg names it; nothing
 * changes, and the same content is not reported again).
 */
int fw_testclock_reload(struct fw_testclock_faults *f, char *msg, size_t len);

/* A CLOCK_REALTIME sample (unix ns) with the faults applied. */
uint64_t fw_testclock_apply(uint64_t real_ns);

/*
 * A tick-source reading with tick_back_ms applied (the reading itself when
 * none). Any thread: the keeper's and the workers' (a relaxed atomic load).
 */
uint64_t fw_testclock_ticks(uint64_t ticks);

/* A worker's tick-source reading: tick_back_ms and worker_back_ms applied. Any thread. */
uint64_t fw_testclock_worker_ticks(uint64_t ticks);

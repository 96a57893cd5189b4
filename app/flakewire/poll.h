/* SPDX-License-Identifier: BSD-3-Clause */
/* poll.c: every EAL lcore as a worker, and the burst loop each one runs. */
#pragma once

#include <stdbool.h>

struct fwire_app;
struct fwire_lcore;

/*
 * Builds app->layout, app->px (the packet context: [net] policy) and one
 * struct fwire_lcore per EAL lcore (the main one included), each with its
 * worker ID (the responder core's: a fleet's, else [id]'s) and rate limiter. Returns 0 or -1
 * (logged).
 */
int fwire_lcores_init(struct fwire_app *app);

/* The burst loop, launched on every lcore (@arg: the struct fwire_app). */
int fwire_lcore_main(void *arg);

/*
 * Blocks (@on) or unblocks the realtime signals in the calling thread.
 * net_tap learns of a received frame by a realtime signal (its rx reads
 * nothing until the signal's handler moved a trigger), and the kernel hands
 * a process-directed signal to any thread that does not block it: to a
 * thread inside a slow system call (the keeper's fsync of the mark on a busy
 * disk) the handler runs only once the call returns, and requests on a TAP
 * port waited a second. main() blocks them before any thread exists, so
 * every thread inherits that; fwire_lcore_main() unblocks them on each
 * lcore, the threads that read the queues.
 */
void fwire_lcore_signals(bool on);

/*
 * Reads each port's link state (rte_eth_link_get_nowait, no wait) into
 * lc->ports_down: a port whose link is down is not polled until it is up
 * again (a memif peer that went away: DPDK 22.11's memif PMD tears the
 * rings down in the interrupt thread with no lock against a polling lcore).
 * A port whose driver cannot tell stays polled, and so does one on a kernel
 * interface (net_tap) that this process can no longer see under its name
 * and index: moved into another network namespace, where it may well be up
 * (net_tap reads the link with an ioctl by name in our namespace, which
 * then fails and reads as "down"). Logs each change. Called by
 * fwire_lcore_main at most every FW_LINK_CHECK_MS (it looks at the TSC every
 * FW_LINK_CHECK_LOOPS loop iterations).
 */
void fwire_lcore_link_watch(struct fwire_app *app, struct fwire_lcore *lc);
#define FW_LINK_CHECK_LOOPS 1024
/* at most 100 link reads a second (net_tap answers each with an ioctl) */
#define FW_LINK_CHECK_MS    10

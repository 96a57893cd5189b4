/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test-clock hooks of the flakesock binary: nothing. No setting or
 * environment variable reaches a fault file here; flakesock-testclock links
 * testclock.c instead of this file.
 */
#include "flakesock.h"

int fsock_testclock_init(struct fsock_ctx *ctx)
{
	(void)ctx;
	return 0;
}

void fsock_testclock_poll(struct fsock_ctx *ctx)
{
	(void)ctx;
}

uint64_t fsock_testclock_ns(uint64_t ns)
{
	return ns;
}

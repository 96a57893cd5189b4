/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test-clock hooks of the flakewire binary: nothing. No setting or
 * environment variable reaches a fault file here; flakewire-testclock links
 * testclock.c instead of this file.
 */
#include "clock_pub.h"

int fw_testclock_init(struct fw_app *app)
{
	(void)app;
	return 0;
}

void fw_testclock_poll(struct fw_app *app)
{
	(void)app;
}

uint64_t fw_testclock_ns(uint64_t ns)
{
	return ns;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test-clock hooks of the installed responders: nothing. No setting or
 * environment variable reaches a fault file here; the test-clock builds
 * (flakewire-testclock, flakesock-testclock) link testclock.c instead.
 */
#include "responder_impl.h"

int fw_responder_testclock_init(struct fw_responder *r)
{
	(void)r;
	return 0;
}

void fw_responder_testclock_poll(struct fw_responder *r)
{
	(void)r;
}

uint64_t fw_responder_testclock_ns(uint64_t ns)
{
	return ns;
}

/* no fault to apply: the keeper's reader itself (a tail call) */
FW_API uint64_t fw_responder_monoraw_ticks(void)
{
	return fw_keeper_monoraw_ticks();
}

FW_API uint64_t fw_responder_worker_ticks(void)
{
	return fw_keeper_monoraw_ticks();
}

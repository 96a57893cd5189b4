/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside the responder core (fw_responder.h): its state, shared by
 * responder.c, responder_metrics.c and the test-clock file each binary
 * links (testclock_none.c or, in the test-clock builds, testclock.c).
 */
#pragma once

#include <limits.h>

#include "fw_keeper_driver.h"
#include "fw_responder.h"

struct fw_metrics;
struct fw_metrics_server;

struct fw_responder {
	struct fw_responder_config cfg;
	struct fw_fleet_app *fleet;      /* NULL without [fleet] */
	struct fw_keeper_driver *driver; /* NULL before fw_responder_keeper_start */
	struct fw_keeper *keeper;        /* the driver's (set before the test clock's init) */
	struct fw_metrics *registry;     /* /metrics, NULL when off */
	struct fw_metrics_server *server;
	double start_s;  /* unix s at the metrics start */
	void *fleet_src; /* responder_metrics.c's lease families' source */
	struct {         /* the test clock's (testclock.c) */
		char status[PATH_MAX];
		uint64_t pauses;
		unsigned polls;
	} tc;
};

/* The system clock as the core reads it for times it shows (ops.wall or CLOCK_REALTIME). */
uint64_t fw_responder_unix_ns(const struct fw_responder *r);

/*
 * The test-clock hooks, defined by testclock_none.c (no-ops) or by
 * testclock.c in the test-clock builds (the fault file of
 * tests/system/faults). Called by the keeper's thread only.
 */
int fw_responder_testclock_init(struct fw_responder *r);  /* 0, or -1: do not start */
void fw_responder_testclock_poll(struct fw_responder *r); /* every keeper tick */
uint64_t fw_responder_testclock_ns(uint64_t ns);          /* a system-clock sample, faulted */

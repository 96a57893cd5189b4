/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/fleet/fleet_metrics.c without ZooKeeper: a registry that holds no worker ID
 * yet (created, not started) renders every slot as NO_LEASE with the worker
 * label "none", no lease samples, the configured lease length, and the
 * exposition passes the writer's naming rules. Leases held are covered by
 * the fleet system tests (fleet-sock, fleet-mixed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_metrics_fleet.h"

static uint64_t fixed_now(void *arg)
{
	return *(const uint64_t *)arg;
}

static void no_worker_is_no_lease(void **state)
{
	struct fw_fleet_config c;
	struct fw_fleet *f;
	struct fw_metrics *m;
	char err[256], *text;
	size_t len;
	uint64_t now = 1767225600000ull;
	(void)state;

	fw_fleet_config_default(&c);
	c.connect = "127.0.0.1:1";
	c.root = "/unit";
	c.identity = "unit";
	fw_layout_default(&c.layout);
	c.lease_ms = 3000;
	c.renew_ms = 500;
	assert_int_equal(fw_fleet_create(&c, 2, &f, err, sizeof(err)), 0);
	struct fw_metrics_fleet_src src = {.reg = f,
					   .n_slots = 2,
					   .epoch_ms = c.layout.epoch_ms,
					   .lease_len_ms = 3000,
					   .now_ms = fixed_now,
					   .now_arg = &now};
	m = fw_metrics_create();
	assert_non_null(m);
	assert_int_equal(fw_metrics_add_collector(m, fw_metrics_fleet_collect, &src), 0);
	assert_int_equal(fw_metrics_render(m, &text, &len), 0);
	assert_non_null(strstr(text, "\nflakewire_fleet_no_lease{slot=\"0\",worker=\"none\"} 1\n"));
	assert_non_null(strstr(text, "\nflakewire_fleet_no_lease{slot=\"1\",worker=\"none\"} 1\n"));
	assert_null(strstr(text, "\nflakewire_fleet_lease_remaining_seconds{"));
	assert_non_null(strstr(text, "# TYPE flakewire_fleet_lease_remaining_seconds gauge\n"));
	assert_non_null(strstr(text, "\nflakewire_fleet_lease_length_seconds 3\n"));
	assert_non_null(strstr(text, "\nflakewire_fleet_connected 0\n"));
	assert_non_null(strstr(text, "\nflakewire_fleet_renewal_failures_total 0\n"));
	assert_null(strstr(text, "flakewire_fleet_clock_offset_seconds")); /* not measured yet */
	free(text);
	fw_metrics_free(m);
	fw_fleet_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_worker_is_no_lease),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/responder's configuration adapters (fw_responder_conf.h): a
 * configuration in (lib/conf, as a responder parses it), the components'
 * plain structs out, and the errors that name the key, the value and the
 * range.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>

#include "fw_responder_conf.h"

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

static void set(struct fw_conf *c, const char *assignment)
{
	char err[256];
	int rc = fw_conf_set(c, assignment, 0, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s: %s", assignment, err);
}

/* [clock], [state] and [stats] into the keeper driver's settings. */
static void keeper_from_conf(void **state)
{
	(void)state;
	struct fw_conf c;
	struct fw_keeper_driver_config dc;
	const uint32_t ids[2] = {7, 9};
	char err[128] = "";

	fw_conf_init(&c);
	set(&c, "clock.max_slew_ppm=300");
	set(&c, "clock.reanchor_ms=2000");
	set(&c, "clock.step_ms=250");
	set(&c, "clock.calibrate_ms=250");
	set(&c, "state.mark_ahead_ms=3000");
	set(&c, "state.start_policy=fail");
	set(&c, "state.file=/tmp/x.mark");
	set(&c, "stats.interval_s=5");
	set(&c, "id.datacenter_bits=3");
	set(&c, "id.datacenter=5");
	set(&c, "id.worker_bits=7");
	set(&c, "id.sequence_bits=11");
	assert_int_equal(
		fw_responder_driver_config(&dc, &c, 1234, 2, ids, "flakesock", err, sizeof(err)),
		0);
	assert_int_equal(dc.keeper.clock.max_slew_ppm, 300);
	assert_int_equal(dc.keeper.clock.horizon_ms, 2000);
	assert_int_equal(dc.keeper.reanchor_ms, 2000);
	assert_int_equal(dc.keeper.clock.step_ns, 250000000ull);
	assert_int_equal(dc.keeper.mark_ahead_ms, 3000);
	assert_int_equal(dc.keeper.start_policy, FW_KEEPER_START_FAIL);
	assert_string_equal(dc.keeper.state_file, "/tmp/x.mark");
	assert_int_equal(dc.keeper.epoch_ms, 1234);
	/* the layout the mark fences (issue 48): the [id] widths and datacenter at that epoch */
	assert_int_equal(dc.keeper.layout.epoch_ms, 1234);
	assert_int_equal(dc.keeper.layout.datacenter_bits, 3);
	assert_int_equal(dc.keeper.layout.datacenter, 5);
	assert_int_equal(dc.keeper.layout.worker_bits, 7);
	assert_int_equal(dc.keeper.layout.sequence_bits, 11);
	assert_int_equal(dc.keeper.n_workers, 2);
	assert_ptr_equal(dc.keeper.worker_ids, ids);
	assert_string_equal(dc.keeper.name, "flakesock");
	assert_int_equal(dc.calibrate_ms, 250);
	assert_int_equal(dc.stats_ms, 5000);
	assert_null(dc.ops.ticks); /* the caller's */

	set(&c, "state.start_policy=wait");
	fw_responder_keeper_config(&dc.keeper, &c, 1);
	assert_int_equal(dc.keeper.start_policy, FW_KEEPER_START_WAIT);

	/* more workers than a keeper holds: the count and the range */
	assert_int_equal(fw_responder_driver_config(&dc, &c, 1, FW_KEEPER_WORKERS_MAX + 1, ids,
						    "flakewire", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "257 workers: 1 to 256");
}

static void a6(const char *s, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

/* [net] as both responders take it: trusted prefixes outside allow are reported. */
static void policy_from_conf(void **state)
{
	(void)state;
	struct fw_conf c;
	struct fw_policy p;
	struct fw_rate_config rc;
	char err[256];
	uint32_t out = 0, out6 = 0;
	uint8_t a[16];

	fw_conf_init(&c);
	set(&c, "net.allow=10.0.0.0/8,fd00::/8");
	set(&c, "net.trusted=10.9.0.0/16,192.0.2.0/24,fd99::/16,2001:db8::/32");
	assert_int_equal(fw_responder_policy(&p, &c, &out, &out6, err, sizeof(err)), 0);
	assert_int_equal(out, 0x2);  /* 192.0.2.0/24 */
	assert_int_equal(out6, 0x2); /* 2001:db8::/32 */
	assert_true(fw_policy_source(&p, IP(10, 9, 1, 1)) & FW_POLICY_SRC_TRUSTED);
	assert_false(fw_policy_source(&p, IP(11, 0, 0, 1)) & FW_POLICY_SRC_ALLOWED);
	a6("fd99::1", a);
	assert_int_equal(fw_policy_source6(&p, a),
			 FW_POLICY_SRC_VALID | FW_POLICY_SRC_ALLOWED | FW_POLICY_SRC_TRUSTED);
	assert_true(fw_policy_reflector(&p, 53)); /* the default reflector ports */
	assert_false(fw_responder_rate_config(&rc, &c, 2, 1000000, 64)); /* rate 0: none */
	set(&c, "net.rate=1000");
	set(&c, "net.rate_prefix=20");
	assert_true(fw_responder_rate_config(&rc, &c, 2, 1000000, 64));
	assert_int_equal(rc.rate, 500);
	assert_int_equal(rc.prefix_len, 20);
	assert_int_equal(rc.tsc_hz, 1000000);
	assert_int_equal(rc.entries, 64);

	/* a list longer than lib/policy holds: the key, the count and the limit */
	c.net.allow.n = FW_POLICY_PREFIXES_MAX + 1;
	assert_int_equal(fw_responder_policy(&p, &c, NULL, NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "[net] allow = 17 IPv4 prefixes: at most 16");
}

/* [fleet] and [clock] backstep into the registry's settings. */
static void fleet_from_conf(void **state)
{
	(void)state;
	struct fw_conf c;
	struct fw_layout layout;
	struct fw_responder_fleet_config f;
	char err[512];

	fw_conf_init(&c);
	assert_int_equal(fw_layout_init(&layout, c.id.epoch_ms, c.id.datacenter_bits,
					c.id.worker_bits, c.id.sequence_bits, c.id.epoch_ms + 1000),
			 0);
	set(&c, "fleet.zookeeper=127.0.0.1:2181");
	set(&c, "fleet.root=/flakewire/t");
	set(&c, "fleet.identity=node-a");
	set(&c, "fleet.lease_ms=600000");
	set(&c, "fleet.renew_ms=20000");
	set(&c, "clock.backstep=new_worker");
	assert_int_equal(fw_responder_fleet_config(&f, &c, &layout, "stamp-1", err, sizeof(err)),
			 0);
	assert_string_equal(f.fc.connect, "127.0.0.1:2181");
	assert_null(f.fc.etcd);
	assert_null(f.fc.zk_auth);
	assert_string_equal(f.fc.root, "/flakewire/t");
	assert_string_equal(f.fc.identity, "node-a");
	assert_string_equal(f.fc.state_stamp, "stamp-1");
	assert_int_equal(f.fc.lease_ms, 600000);
	assert_int_equal(f.fc.renew_ms, 20000);
	assert_int_equal(f.fc.layout.worker_bits, layout.worker_bits);
	assert_true(f.new_worker);
	assert_null(f.fc.log.fn); /* the caller's */

	/* env:VAR: the variable's value, or an error naming the key and the value */
	setenv("FW_TEST_POD_NAME", "pod-7", 1);
	set(&c, "fleet.identity=env:FW_TEST_POD_NAME");
	assert_int_equal(fw_responder_fleet_config(&f, &c, &layout, NULL, err, sizeof(err)), 0);
	assert_string_equal(f.fc.identity, "pod-7");
	unsetenv("FW_TEST_POD_NAME");
	assert_int_equal(fw_responder_fleet_config(&f, &c, &layout, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "[fleet] identity = env:FW_TEST_POD_NAME: the environment "
				    "variable FW_TEST_POD_NAME is not set"));

	/* a ZooKeeper auth file without USER:PASSWORD: refused, nothing of it kept */
	char path[] = "/tmp/fw_test_zkauth_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "nocolon\n", 8), 8);
	close(fd);
	set(&c, "fleet.identity=node-a");
	char kv[300];
	snprintf(kv, sizeof(kv), "fleet.zookeeper_auth_file=%s", path);
	set(&c, kv);
	assert_int_equal(fw_responder_fleet_config(&f, &c, &layout, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "[fleet] zookeeper_auth_file = "));
	assert_non_null(strstr(err, "not USER:PASSWORD on its first line"));
	assert_int_equal(f.zk_auth[0], 0);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "u:secret\n", 9), 9);
	close(fd);
	assert_int_equal(fw_responder_fleet_config(&f, &c, &layout, NULL, err, sizeof(err)), 0);
	assert_string_equal(f.fc.zk_auth, "u:secret");
	fw_responder_fleet_config_wipe(&f);
	assert_int_equal(f.zk_auth[0], 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keeper_from_conf),
		cmocka_unit_test(policy_from_conf),
		cmocka_unit_test(fleet_from_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

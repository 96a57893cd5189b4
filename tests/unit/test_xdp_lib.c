/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp pieces that need no privileges: queue fit and channel hints,
 * names, and argument errors of the kernel queries (lo, a missing
 * interface). The devargs: test_xdp_devargs.c; programs attached to a
 * real interface: tests/system/xdp/test_xdp.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "fw_xdp.h"

static void test_queues_and_hint(void **state)
{
	struct fw_xdp_ifinfo nic = {
		.channels_known = true, .combined = 2, .max_combined = 8, .rx_queues = 2};
	struct fw_xdp_ifinfo veth = {.channels_known = true, .rx = 1, .max_rx = 4, .rx_queues = 1};
	struct fw_xdp_ifinfo none = {.rx_queues = 1};
	char buf[64];

	(void)state;
	assert_int_equal(fw_xdp_queues_fit(&nic, 0, 2), 0);
	assert_int_equal(fw_xdp_queues_fit(&nic, 1, 1), 0);
	assert_int_equal(fw_xdp_queues_fit(&nic, 1, 2), -ERANGE);
	assert_int_equal(fw_xdp_queues_fit(&nic, 2, 1), -ERANGE);
	assert_int_equal(fw_xdp_queues_fit(&nic, UINT32_MAX, 2), -ERANGE);
	assert_int_equal(fw_xdp_queues_fit(&nic, 0, 0), -EINVAL);
	assert_int_equal(fw_xdp_queues_fit(&none, 0, 1), 0);

	assert_int_equal(fw_xdp_channels_hint(buf, sizeof(buf), "eth0", &nic, 4), 26);
	assert_string_equal(buf, "ethtool -L eth0 combined 4");
	assert_true(fw_xdp_channels_hint(buf, sizeof(buf), "veth0", &veth, 2) > 0);
	assert_string_equal(buf, "ethtool -L veth0 rx 2");
	assert_int_equal(fw_xdp_channels_hint(buf, sizeof(buf), "eth0", &nic, 9), -EOPNOTSUPP);
	assert_int_equal(fw_xdp_channels_hint(buf, sizeof(buf), "eth0", &none, 2), -EOPNOTSUPP);
	assert_int_equal(fw_xdp_channels_hint(buf, 26, "eth0", &nic, 4), -ENOSPC);
	assert_string_equal(buf, "");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(fw_xdp_mode_name(FW_XDP_MODE_SKB), "skb");
	assert_string_equal(fw_xdp_mode_name(FW_XDP_MODE_DRV), "drv");
	assert_string_equal(fw_xdp_mode_name((enum fw_xdp_mode)99), "?");
	assert_string_equal(fw_xdp_stat_name(FW_XDP_STAT_REDIRECT), "redirect");
	assert_string_equal(fw_xdp_stat_name(FW_XDP_STAT_NO_XSK), "no_xsk");
	assert_string_equal(fw_xdp_stat_name(FW_XDP_STAT_MAX), "?");
	for (unsigned int i = 0; i < FW_XDP_STAT_MAX; i++)
		assert_non_null(fw_xdp_stat_name(i));
}

static void test_query_argument_errors(void **state)
{
	struct fw_xdp_info info;
	struct fw_xdp_ifinfo in;

	(void)state;
	assert_int_equal(fw_xdp_status("fwx-no-such-if", &info), -ENODEV);
	assert_int_equal(fw_xdp_status("abcdefghijklmnopq", &info), -EINVAL);
	assert_int_equal(fw_xdp_status("", &info), -EINVAL);
	assert_int_equal(fw_xdp_status("lo", NULL), -EINVAL);
	assert_int_equal(fw_xdp_detach_own("fwx-no-such-if"), -ENODEV);
	assert_int_equal(fw_xdp_set_port("fwx-no-such-if", 1), -ENODEV);
	assert_int_equal(fw_xdp_ifinfo("fwx-no-such-if", &in), -ENODEV);
	assert_int_equal(fw_xdp_ifinfo("lo", &in), 0);
	assert_true(in.up);
	assert_true(in.has_ipv4);
	assert_true(in.rx_queues >= 1);
	assert_false(in.has_mac);
	assert_int_equal(fw_xdp_bpffs_check("/proc"), -ENOENT);
	assert_int_equal(fw_xdp_bpffs_check("/nonexistent/fwx"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queues_and_hint),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_query_argument_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

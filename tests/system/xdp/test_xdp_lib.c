/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp pieces that need no privileges: devargs building and parsing,
 * queue fit and channel hints, names, and argument errors of the kernel
 * queries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "fw_xdp.h"

static void fill(struct fw_xdp_devargs *a)
{
	fw_xdp_devargs_init(a);
	strcpy(a->iface, "eth0");
	a->start_queue = 2;
	a->queue_count = 3;
	strcpy(a->xdp_prog, "/usr/lib/x86_64-linux-gnu/bpf/flakewire.bpf.o");
}

static void test_build_default_name(void **state)
{
	struct fw_xdp_devargs a;
	char buf[256];
	int n;

	(void)state;
	fill(&a);
	n = fw_xdp_devargs_build(buf, sizeof(buf), &a);
	assert_string_equal(buf, "net_af_xdp0,iface=eth0,start_queue=2,queue_count=3,"
				 "xdp_prog=/usr/lib/x86_64-linux-gnu/bpf/flakewire.bpf.o");
	assert_int_equal(n, (int)strlen(buf));
}

static void test_build_all_options(void **state)
{
	struct fw_xdp_devargs a;
	char buf[256];

	(void)state;
	fill(&a);
	strcpy(a.name, "net_af_xdp1");
	a.xdp_prog[0] = '\0';
	a.shared_umem = true;
	a.force_copy = true;
	a.busy_budget = 0;
	assert_true(fw_xdp_devargs_build(buf, sizeof(buf), &a) > 0);
	assert_string_equal(buf, "net_af_xdp1,iface=eth0,start_queue=2,queue_count=3,"
				 "shared_umem=1,busy_budget=0,force_copy=1");
}

static void test_build_rejects(void **state)
{
	struct fw_xdp_devargs a;
	char buf[256];

	(void)state;
	fill(&a);
	a.iface[0] = '\0';
	assert_int_equal(fw_xdp_devargs_build(buf, sizeof(buf), &a), -EINVAL);
	fill(&a);
	a.queue_count = 0;
	assert_int_equal(fw_xdp_devargs_build(buf, sizeof(buf), &a), -EINVAL);
	fill(&a);
	strcpy(a.name, "net_tap0");
	assert_int_equal(fw_xdp_devargs_build(buf, sizeof(buf), &a), -EINVAL);
	fill(&a);
	strcpy(a.xdp_prog, "/tmp/a,b.o");
	assert_int_equal(fw_xdp_devargs_build(buf, sizeof(buf), &a), -EINVAL);
	fill(&a);
	strcpy(a.iface, "e=1");
	assert_int_equal(fw_xdp_devargs_build(buf, sizeof(buf), &a), -EINVAL);
	assert_int_equal(fw_xdp_devargs_build(NULL, 1, &a), -EINVAL);
	assert_int_equal(fw_xdp_devargs_build(buf, sizeof(buf), NULL), -EINVAL);
}

/* Every buffer shorter than the string + NUL is refused and left empty. */
static void test_build_every_short_length(void **state)
{
	struct fw_xdp_devargs a;
	char full[256], buf[256];
	int n;

	(void)state;
	fill(&a);
	n = fw_xdp_devargs_build(full, sizeof(full), &a);
	assert_true(n > 0);
	for (int len = 0; len <= n; len++) {
		memset(buf, 'x', sizeof(buf));
		assert_int_equal(fw_xdp_devargs_build(buf, (size_t)len, &a), -ENOSPC);
		if (len > 0)
			assert_int_equal(buf[0], '\0');
	}
	assert_int_equal(fw_xdp_devargs_build(buf, (size_t)n + 1, &a), n);
	assert_string_equal(buf, full);
}

static void test_parse_round_trip(void **state)
{
	struct fw_xdp_devargs a, b;
	char s1[256], s2[256];

	(void)state;
	fill(&a);
	a.force_copy = true;
	a.busy_budget = 64;
	assert_true(fw_xdp_devargs_build(s1, sizeof(s1), &a) > 0);
	assert_int_equal(fw_xdp_devargs_parse(s1, &b), 0);
	assert_string_equal(b.name, "net_af_xdp0");
	assert_string_equal(b.iface, "eth0");
	assert_int_equal(b.start_queue, 2);
	assert_int_equal(b.queue_count, 3);
	assert_string_equal(b.xdp_prog, a.xdp_prog);
	assert_true(b.force_copy);
	assert_false(b.shared_umem);
	assert_int_equal(b.busy_budget, 64);
	assert_true(fw_xdp_devargs_build(s2, sizeof(s2), &b) > 0);
	assert_string_equal(s1, s2);
}

static void test_parse_defaults_and_order(void **state)
{
	struct fw_xdp_devargs a;

	(void)state;
	assert_int_equal(fw_xdp_devargs_parse("net_af_xdp,iface=veth0", &a), 0);
	assert_string_equal(a.iface, "veth0");
	assert_int_equal(a.start_queue, 0);
	assert_int_equal(a.queue_count, 1);
	assert_int_equal(a.busy_budget, -1);
	assert_int_equal(a.xdp_prog[0], '\0');
	assert_int_equal(
		fw_xdp_devargs_parse("net_af_xdp3,queue_count=4,iface=eth1,start_queue=1", &a), 0);
	assert_string_equal(a.name, "net_af_xdp3");
	assert_int_equal(a.start_queue, 1);
	assert_int_equal(a.queue_count, 4);
}

static void test_parse_rejects(void **state)
{
	static const char *const bad[] = {
		"",
		"net_tap0,iface=eth0",
		"net_af_xdp0",
		"net_af_xdp0,queue_count=2",
		"net_af_xdp0,iface=eth0,iface=eth1",
		"net_af_xdp0,iface=eth0,use_cni=1",
		"net_af_xdp0,iface=eth0,queue_count=0",
		"net_af_xdp0,iface=eth0,queue_count=-1",
		"net_af_xdp0,iface=eth0,queue_count=1x",
		"net_af_xdp0,iface=eth0,start_queue=",
		"net_af_xdp0,iface=eth0,start_queue=4294967296",
		"net_af_xdp0,iface=eth0,force_copy=2",
		"net_af_xdp0,iface=eth0,busy_budget=2147483648",
		"net_af_xdp0,iface",
		"net_af_xdp0,iface=",
		"iface=eth0",
	};
	struct fw_xdp_devargs a;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(fw_xdp_devargs_parse(bad[i], &a), -EINVAL);
	}
	assert_int_equal(fw_xdp_devargs_parse("net_af_xdp0,iface=abcdefghijklmnop", &a),
			 -ENAMETOOLONG);
	assert_int_equal(fw_xdp_devargs_parse(NULL, &a), -EINVAL);
}

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
		cmocka_unit_test(test_build_default_name),
		cmocka_unit_test(test_build_all_options),
		cmocka_unit_test(test_build_rejects),
		cmocka_unit_test(test_build_every_short_length),
		cmocka_unit_test(test_parse_round_trip),
		cmocka_unit_test(test_parse_defaults_and_order),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_queues_and_hint),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_query_argument_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp/devargs.c: the net_af_xdp --vdev string built and parsed. Links
 * xdp_devargs_dep alone: no libbpf, no DPDK, no privileges, so it runs in
 * every tree.
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

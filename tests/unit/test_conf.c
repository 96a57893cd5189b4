/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The configuration table and its INI parser (libinih), without DPDK: the
 * generated sample is the committed config/flakewire.ini and loads; bad
 * files and values fail with the key, the value and the allowed range.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_conf.h"
#include "fw_err.h"

static char path[64];

static const char *write_ini(const char *text)
{
	snprintf(path, sizeof(path), "/tmp/fw-test-conf-%d.ini", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Loads @text; returns the error message ("" when it loaded). */
static const char *load(struct fw_conf *c, const char *text, unsigned flags)
{
	static char err[512];
	err[0] = '\0';
	fw_conf_init(c);
	int rc = fw_conf_load(c, write_ini(text), flags, err, sizeof(err));
	unlink(path);
	if (rc == 0)
		assert_string_equal(err, "");
	else
		assert_int_equal(rc, FW_ECONF);
	return err;
}

static void contains(const char *got, const char *want)
{
	if (!strstr(got, want))
		fail_msg("expected '%s' in '%s'", want, got);
}

static void test_sample_is_committed_and_loads(void **state)
{
	(void)state;
	static char sample[65536], committed[65536];
	struct fw_conf c;
	fw_conf_sample(sample, sizeof(sample), 0);
	FILE *f = fopen(FW_SRC_DIR "/config/flakewire.ini", "r");
	assert_non_null(f);
	size_t n = fread(committed, 1, sizeof(committed) - 1, f);
	fclose(f);
	committed[n] = '\0';
	if (strcmp(sample, committed))
		fail_msg("config/flakewire.ini is stale: regenerate with flakewire --print-config");
	assert_string_equal(load(&c, sample, 0), "");
	char help[32768];
	fw_conf_help(help, sizeof(help), 0);
	contains(help, "id.worker_bits = 10");
}

static void test_values_and_comments(void **state)
{
	(void)state;
	struct fw_conf c;
	assert_string_equal(load(&c,
				 "# a comment\n; another\n[id]\nworker_bits = 8   # inline\n"
				 "workers = 1,2,3 ; inline\n\n[state]\nfile = /tmp/x/mark\n"
				 "start_policy = fail\n",
				 0),
			    "");
	assert_int_equal(c.id.worker_bits, 8);
	assert_int_equal(c.id.workers.n, 3);
	assert_int_equal(c.id.workers.v[2], 3);
	assert_string_equal(c.state.file, "/tmp/x/mark");
	assert_int_equal(c.state.start_policy, FW_CONF_START_FAIL);
}

static void test_errors_name_key_value_range(void **state)
{
	(void)state;
	struct fw_conf c;
	contains(load(&c, "[id]\nworker_bits = 30\n", 0),
		 "[id] worker_bits = 30: out of range (0-16)");
	contains(load(&c, "[net]\nudp_port = x\n", 0),
		 "[net] udp_port = x: not a number (1-65535)");
	contains(load(&c, "[net]\nbogus = 1\n", 0), "[net] bogus: unknown key");
	contains(load(&c, "[idx]\na = 1\n", 0), "[idx]: unknown section");
	contains(load(&c, "[id]\nworker_bits = 8\nworker_bits = 9\n", 0),
		 "[id] worker_bits: given twice");
	contains(load(&c, "[clock]\nreanchor_ms\n", 0), "'reanchor_ms': expected key = value");
	contains(load(&c, "[id]\nworker_bits = 8\n[net]\nudp_port = 1\n[id]\ndatacenter = 0\n", 0),
		 "[id]: section given twice");
	contains(load(&c, "[id\nworker_bits = 8\n", 0), "expected [section]");
	/* the first error is reported, not a later one */
	contains(load(&c, "[id]\nworker_bits = 99\nsequence_bits = 99\n", 0), "worker_bits = 99");
}

static void test_ports(void **state)
{
	(void)state;
	struct fw_conf c;
	/* an empty [port1] still declares two ports */
	assert_string_equal(load(&c, "[port0]\nrx_desc = 512\n[port1]\n", 0), "");
	assert_int_equal(c.n_ports, 2);
	/* flakesock ignores [port*] */
	assert_string_equal(load(&c, "[port0]\nbogus = 1\n", FW_CONF_F_NO_PORTS), "");
}

/* The cross-key error of @text ("" when it passes fw_conf_check). */
static const char *check(const char *text)
{
	static char err[512];
	struct fw_conf c;
	assert_string_equal(load(&c, text, FW_CONF_F_NO_PORTS), "");
	err[0] = '\0';
	fw_conf_check(&c, FW_CONF_F_NO_PORTS, err, sizeof(err));
	return err;
}

static void test_fleet_registry(void **state)
{
	(void)state;
	struct fw_conf c;
	assert_string_equal(
		check("[fleet]\netcd = http://127.0.0.1:2379,https://e2:2379\nroot = /r\n"), "");
	/* no implicit root (issue 48): a store without [fleet] root is refused, the key named */
	contains(check("[fleet]\nzookeeper = z:2181\n"), "[fleet] root: not set");
	contains(check("[fleet]\netcd = http://a:1\n"), "[fleet] root: not set");
	contains(check("[fleet]\nzookeeper = z:2181\nroot = x/y\n"),
		 "[fleet] root = x/y: not an absolute path");
	/* a static node beside a fleet: a store, no claims */
	assert_string_equal(
		load(&c, "[fleet]\nzookeeper = z:1\nroot = /r\nstatic = yes\n", FW_CONF_F_NO_PORTS),
		"");
	assert_false(fw_conf_fleet_on(&c));
	assert_true(fw_conf_fleet_store(&c));
	assert_string_equal(check("[fleet]\nzookeeper = z:1\nroot = /r\nstatic = yes\n[id]\n"
				  "workers = 1\n"),
			    "");
	contains(check("[fleet]\nstatic = yes\n"), "[fleet] static = yes: needs [fleet] zookeeper");
	assert_string_equal(load(&c, "[fleet]\netcd = http://a:1\n", FW_CONF_F_NO_PORTS), "");
	assert_true(fw_conf_fleet_on(&c));
	assert_string_equal(load(&c, "[fleet]\nroot = /x\n", FW_CONF_F_NO_PORTS), "");
	assert_false(fw_conf_fleet_on(&c));
	contains(check("[fleet]\nzookeeper = z:2181\netcd = http://a:1\n"),
		 "[fleet] zookeeper = z:2181 and [fleet] etcd = http://a:1: set one of them");
	contains(check("[fleet]\netcd = http://a:1,a:2\n"),
		 "[fleet] etcd = http://a:1,a:2: 'a:2' is not http://HOST:PORT");
	contains(check("[fleet]\netcd = http://a:1/v3\n"), "'http://a:1/v3' is not");
	/* user info in an endpoint: refused, the password never echoed (issue 33) */
	const char *ui = check("[fleet]\netcd = http://fw:s3cret@a:1/v3\nzookeeper = z:1\n");
	contains(ui, "holds user info (USER:PASSWORD@, not shown)");
	if (strstr(ui, "s3cret"))
		fail_msg("the password echoed: '%s'", ui);
	contains(check("[fleet]\netcd = http://a:1\netcd_cert_file = /c.pem\n"),
		 "etcd_key_file = : set both or neither");
	contains(check("[fleet]\netcd = http://a:1\netcd_user = fw\n"),
		 "[fleet] etcd_user = fw, etcd_password_file = : set both or neither");
	contains(check("[fleet]\netcd = http://a:1\nroot = /r\n[id]\nworkers = 1\n"),
		 "not with a fleet ([fleet] zookeeper or etcd)");
	assert_string_equal(
		check("[fleet]\netcd = http://a:1\nroot = /r\n[clock]\nbackstep = new_worker\n"),
		"");
}

static void test_missing_file(void **state)
{
	(void)state;
	struct fw_conf c;
	char err[256];
	fw_conf_init(&c);
	assert_int_equal(fw_conf_load(&c, "/nonexistent/fw.ini", 0, err, sizeof(err)), FW_ECONF);
	contains(err, "/nonexistent/fw.ini: No such file or directory");
}

/* fw_conf_print writes fw_conf_effective's (or the sample's) text, and says when it cannot. */
static void test_print(void **state)
{
	(void)state;
	static char want[65536], got[65536];
	struct fw_conf c;
	fw_conf_init(&c);
	char err[256];
	int rc = fw_conf_set(&c, "id.worker_base=7", FW_CONF_F_NO_PORTS, err, sizeof(err));
	assert_int_equal(rc, 0);
	for (int sample = 0; sample < 2; sample++) {
		if (sample)
			fw_conf_sample(want, sizeof(want), FW_CONF_F_NO_PORTS);
		else
			fw_conf_effective(&c, want, sizeof(want), FW_CONF_F_NO_PORTS);
		FILE *f = tmpfile();
		assert_non_null(f);
		assert_int_equal(fw_conf_print(f, sample ? NULL : &c, FW_CONF_F_NO_PORTS), 0);
		rewind(f);
		size_t n = fread(got, 1, sizeof(got) - 1, f);
		fclose(f);
		got[n] = '\0';
		assert_string_equal(got, want);
		contains(got, sample ? "worker_base = 0\n" : "worker_base = 7\n");
	}
	FILE *full = fopen("/dev/full", "w");
	assert_non_null(full);
	assert_int_equal(fw_conf_print(full, &c, 0), -EIO);
	fclose(full);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_is_committed_and_loads),
		cmocka_unit_test(test_values_and_comments),
		cmocka_unit_test(test_errors_name_key_value_range),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_fleet_registry),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_print),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

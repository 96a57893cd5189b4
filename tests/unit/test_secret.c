/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/common/fw_secret.h: secret files are read only when their owner and
 * mode keep them secret (0600 owned by this user, 0640 owned by root), never
 * through a symlink, never echoed in the error line. Before issue 33 the
 * etcd password file was read whatever its mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_secret.h"

static char dir[64], path[128];

static void write_secret(const char *text, mode_t mode, uid_t uid)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	if (uid != geteuid())
		assert_int_equal(chown(path, uid, (gid_t)-1), 0);
}

static int read_it(char *buf, size_t cap, char *err, size_t errlen)
{
	err[0] = '\0';
	return fw_secret_read(path, "[fleet] etcd_password_file", buf, cap, err, errlen);
}

static void test_modes(void **state)
{
	(void)state;
	char buf[64], err[256];
	write_secret("s3cret\nignored\n", 0600, geteuid());
	assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "s3cret");
	write_secret("s3cret\n", 0400, geteuid());
	assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), 0);
	write_secret("s3cret\n", 0644, geteuid());
	assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "permissions 0644"));
	assert_null(strstr(err, "s3cret"));
	assert_string_equal(buf, ""); /* nothing left behind */
	write_secret("s3cret\n", 0660, geteuid());
	assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), -EPERM);
	if (geteuid() == 0) {
		/* root's: 0640 (a Kubernetes Secret with a group) is fine, 0644 is not */
		write_secret("s3cret\n", 0640, 0);
		assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), 0);
		write_secret("s3cret\n", 0644, 0);
		assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "0640 or stricter"));
		/* another user's: refused whatever the mode */
		write_secret("s3cret\n", 0600, 12345);
		assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "owned by uid 12345"));
	}
}

static void test_not_a_plain_secret(void **state)
{
	(void)state;
	char buf[16], err[256], link[160];
	write_secret("\n", 0600, geteuid());
	assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty"));
	write_secret("0123456789abcdefXYZ\n", 0600, geteuid());
	assert_int_equal(read_it(buf, sizeof(buf), err, sizeof(err)), -EINVAL);
	assert_null(strstr(err, "0123456789"));
	/* a symlink to a good secret: not followed */
	write_secret("s3cret\n", 0600, geteuid());
	snprintf(link, sizeof(link), "%s/link", dir);
	unlink(link);
	assert_int_equal(symlink(path, link), 0);
	err[0] = '\0';
	assert_int_equal(fw_secret_read(link, "x", buf, sizeof(buf), err, sizeof(err)), -ELOOP);
	unlink(link);
	assert_int_equal(fw_secret_read(dir, "x", buf, sizeof(buf), err, sizeof(err)), -EINVAL);
	snprintf(link, sizeof(link), "%s/none", dir);
	assert_int_equal(fw_secret_read(link, "x", buf, sizeof(buf), err, sizeof(err)), -ENOENT);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fwt-secret.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/pw", dir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_not_a_plain_secret),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	rmdir(dir);
	return rc;
}

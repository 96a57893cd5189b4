/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_err.h"
#include "fw_mark.h"

struct dir {
	char path[64];
	char mark[128];
	char tmp[160];
};

/* An independent FNV-1a 64, so the test pins the file format. */
static uint64_t fnv1a64(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The file the header documents for @ms, with an explicit check value. */
static int mark_text(char *buf, size_t size, const char *ms_text)
{
	char head[96];
	int n = snprintf(head, sizeof(head), "flakewire-mark 1\nunix_ms %s\n", ms_text);

	return snprintf(buf, size, "%scheck %016llx\n", head,
			(unsigned long long)fnv1a64(head, (size_t)n));
}

static void put_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static size_t get_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size, f);
	assert_int_equal(fclose(f), 0);
	return n;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	strcpy(d->path, "/tmp/fw_mark_XXXXXX");
	if (!mkdtemp(d->path)) {
		free(d);
		return -1;
	}
	snprintf(d->mark, sizeof(d->mark), "%s/mark", d->path);
	snprintf(d->tmp, sizeof(d->tmp), "%s/mark.tmp", d->path);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[128];

	chmod(d->path, 0700);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

static void test_round_trip(void **state)
{
	static const uint64_t values[] = {0, 1, 1767225600123ULL, UINT64_MAX};
	struct dir *d = *state;
	char want[128], got[128];
	uint64_t ms;
	size_t n;

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char dec[32];

		assert_int_equal(fw_mark_write(d->mark, values[i]), 0);
		ms = values[i] ^ 1;
		assert_int_equal(fw_mark_read(d->mark, &ms), 0);
		assert_int_equal(ms, values[i]);
		assert_false(exists(d->tmp));

		/* Byte for byte the format of the header. */
		snprintf(dec, sizeof(dec), "%llu", (unsigned long long)values[i]);
		mark_text(want, sizeof(want), dec);
		n = get_file(d->mark, got, sizeof(got));
		assert_int_equal(n, strlen(want));
		assert_memory_equal(got, want, n);
	}
}

static void test_overwrite(void **state)
{
	struct dir *d = *state;
	uint64_t ms = 0;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225601000ULL), 0);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 1767225601000ULL);
	/* Going down is the caller's business; the file just holds the last value. */
	assert_int_equal(fw_mark_write(d->mark, 5), 0);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 5);
	assert_false(exists(d->tmp));
}

/* A leftover tmp from a crash is replaced, not appended to. */
static void test_stale_tmp(void **state)
{
	struct dir *d = *state;
	uint64_t ms = 0;

	static const char old[] =
		"flakewire-mark 1\nunix_ms 99999999999999\ncheck 0123456789abcdef\nxx";

	put_file(d->tmp, old, sizeof(old) - 1);
	assert_int_equal(fw_mark_write(d->mark, 42), 0);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 42);
	assert_false(exists(d->tmp));
}

static void test_missing(void **state)
{
	struct dir *d = *state;
	uint64_t ms = 77;

	assert_int_equal(fw_mark_read(d->mark, &ms), -ENOENT);
	assert_int_equal(ms, 77);
}

static void test_truncated_every_offset(void **state)
{
	struct dir *d = *state;
	char full[128];
	uint64_t ms = 0;
	size_t len;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL), 0);
	len = get_file(d->mark, full, sizeof(full));
	assert_true(len > 40);
	for (size_t cut = 0; cut < len; cut++) {
		put_file(d->mark, full, cut);
		ms = 77;
		if (fw_mark_read(d->mark, &ms) != FW_ESTATE_CORRUPT)
			fail_msg("truncated at %zu of %zu not reported corrupt", cut, len);
		assert_int_equal(ms, 77);
	}
	put_file(d->mark, full, len);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 1767225600123ULL);
}

static void expect_corrupt(const char *path, const char *text, size_t len)
{
	uint64_t ms = 77;

	put_file(path, text, len);
	if (fw_mark_read(path, &ms) != FW_ESTATE_CORRUPT)
		fail_msg("accepted: %.*s", (int)len, text);
	assert_int_equal(ms, 77);
}

static void test_garbage(void **state)
{
	/* Each is well formed except for one thing, with a check that matches. */
	static const char *const bad_ms[] = {
		"",                     /* no digits */
		"-1",                   /* sign */
		"+1",                   /* sign */
		" 1",                   /* extra space */
		"1 ",                   /* trailing space */
		"0x10",                 /* hex */
		"18446744073709551616", /* UINT64_MAX + 1 */
		"99999999999999999999", /* overflows */
	};
	struct dir *d = *state;
	char text[4096];
	int n;

	for (size_t i = 0; i < sizeof(bad_ms) / sizeof(bad_ms[0]); i++) {
		n = mark_text(text, sizeof(text), bad_ms[i]);
		expect_corrupt(d->mark, text, (size_t)n);
	}

	expect_corrupt(d->mark, "hello world\n", 12);
	expect_corrupt(d->mark, "\0\0\0\0\0\0\0\0", 8);

	n = mark_text(text, sizeof(text), "1767225600123");
	/* Wrong magic, wrong version, wrong keyword: the check alone would not see them. */
	text[0] = 'F';
	expect_corrupt(d->mark, text, (size_t)n);
	text[0] = 'f';
	text[15] = '2';
	expect_corrupt(d->mark, text, (size_t)n);
	text[15] = '1';
	/* Extra bytes after the check line. */
	memcpy(text + n, "\n", 2);
	expect_corrupt(d->mark, text, (size_t)n + 1);
	memcpy(text + n, "x", 2);
	expect_corrupt(d->mark, text, (size_t)n + 1);
	/* CRLF is not the format. */
	text[n - 1] = '\r';
	memcpy(text + n, "\n", 2);
	expect_corrupt(d->mark, text, (size_t)n + 1);

	/* Overlong: a valid mark followed by a lot of padding. */
	n = mark_text(text, sizeof(text), "1767225600123");
	memset(text + n, ' ', sizeof(text) - (size_t)n);
	expect_corrupt(d->mark, text, sizeof(text));
}

static void test_bad_check(void **state)
{
	struct dir *d = *state;
	char text[128];
	char *check;
	int n;

	n = mark_text(text, sizeof(text), "1767225600123");
	check = strstr(text, "check ") + 6;
	/* Every digit of the check matters. */
	for (int i = 0; i < 16; i++) {
		char was = check[i];

		check[i] = was == '0' ? '1' : '0';
		expect_corrupt(d->mark, text, (size_t)n);
		check[i] = was;
	}
	/* Upper case is not what the writer produces. */
	for (int i = 0; i < 16; i++)
		if (check[i] >= 'a' && check[i] <= 'f')
			check[i] = (char)(check[i] - 'a' + 'A');
	if (strpbrk(check, "ABCDEF"))
		expect_corrupt(d->mark, text, (size_t)n);

	/* The value changed under an old check. */
	n = mark_text(text, sizeof(text), "1767225600123");
	text[strlen("flakewire-mark 1\nunix_ms 17672256001")] = '9';
	expect_corrupt(d->mark, text, (size_t)n);
}

static void test_read_errors(void **state)
{
	struct dir *d = *state;
	char path[128];
	uint64_t ms;

	/* A directory opens but cannot be read. */
	assert_int_equal(fw_mark_read(d->path, &ms), -EISDIR);
	put_file(d->mark, "x", 1);
	snprintf(path, sizeof(path), "%s/mark/inner", d->path);
	assert_int_equal(fw_mark_read(path, &ms), -ENOTDIR);
}

/* The directory cannot be written: nothing is left behind. */
static void test_write_errors(void **state)
{
	struct dir *d = *state;
	char path[128], tmp[160];

	/* Parent is a regular file. */
	put_file(d->mark, "x", 1);
	snprintf(path, sizeof(path), "%s/mark/inner", d->path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_equal(fw_mark_write(path, 1), -ENOTDIR);
	assert_false(exists(tmp));

	/* Parent does not exist. */
	snprintf(path, sizeof(path), "%s/nodir/mark", d->path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_equal(fw_mark_write(path, 1), -ENOENT);
	assert_false(exists(tmp));

	/* Permissions only hold for non-root. */
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "%s/ro", d->path);
		assert_int_equal(mkdir(path, 0555), 0);
		snprintf(path, sizeof(path), "%s/ro/mark", d->path);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		assert_int_equal(fw_mark_write(path, 1), -EACCES);
		assert_false(exists(tmp));
	}
}

/* The tmp file is written, then the rename fails: it must not remain. */
static void test_failed_rename_removes_tmp(void **state)
{
	struct dir *d = *state;
	char inside[160];
	int rc;

	assert_int_equal(mkdir(d->mark, 0700), 0);
	snprintf(inside, sizeof(inside), "%s/keep", d->mark);
	put_file(inside, "x", 1);
	rc = fw_mark_write(d->mark, 1);
	assert_true(rc == -EISDIR || rc == -ENOTEMPTY || rc == -EEXIST);
	assert_false(exists(d->tmp));
	assert_true(exists(inside));
}

/* A failed write leaves the old mark as it was. */
static void test_failed_write_keeps_old(void **state)
{
	struct dir *d = *state;
	uint64_t ms = 0;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL), 0);
	/* A directory where the tmp file goes: open fails before anything is written. */
	assert_int_equal(mkdir(d->tmp, 0700), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225609999ULL), -EISDIR);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 1767225600123ULL);
	/* It is not ours to remove. */
	assert_true(exists(d->tmp));
}

static void test_relative_path(void **state)
{
	struct dir *d = *state;
	char cwd[PATH_MAX];
	uint64_t ms = 0;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(d->path), 0);
	assert_int_equal(fw_mark_write("mark", 123), 0);
	assert_int_equal(fw_mark_read("mark", &ms), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(ms, 123);
	assert_false(exists(d->tmp));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_round_trip),
		T(test_overwrite),
		T(test_stale_tmp),
		T(test_missing),
		T(test_truncated_every_offset),
		T(test_garbage),
		T(test_bad_check),
		T(test_read_errors),
		T(test_write_errors),
		T(test_failed_rename_removes_tmp),
		T(test_failed_write_keeps_old),
		T(test_relative_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

/* The default layout, as the responders configure it by default. */
static const struct fw_mark_layout L0 = {
	.epoch_ms = 1767225600000ULL, .datacenter_bits = 0, .worker_bits = 10, .sequence_bits = 12};

/* The file the header documents for @ms in layout @l (format 2). */
static int mark_text2(char *buf, size_t size, const char *ms_text, const struct fw_mark_layout *l)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "flakewire-mark 2\nunix_ms %s\nepoch_ms %llu\ndatacenter_bits %u\n"
			 "worker_bits %u\nsequence_bits %u\ndatacenter %u\n",
			 ms_text, (unsigned long long)l->epoch_ms, l->datacenter_bits,
			 l->worker_bits, l->sequence_bits, l->datacenter);

	return snprintf(buf, size, "%scheck %016llx\n", head,
			(unsigned long long)fnv1a64(head, (size_t)n));
}

/* A format 1 file (written before layouts were recorded), with an explicit check value. */
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
	char want[320], got[320];
	uint64_t ms;
	size_t n;

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char dec[32];

		assert_int_equal(fw_mark_write(d->mark, values[i], &L0), 0);
		ms = values[i] ^ 1;
		assert_int_equal(fw_mark_read(d->mark, &ms), 0);
		assert_int_equal(ms, values[i]);
		assert_false(exists(d->tmp));

		/* Byte for byte the format of the header. */
		snprintf(dec, sizeof(dec), "%llu", (unsigned long long)values[i]);
		mark_text2(want, sizeof(want), dec, &L0);
		n = get_file(d->mark, got, sizeof(got));
		assert_int_equal(n, strlen(want));
		assert_memory_equal(got, want, n);
	}
}

static void test_overwrite(void **state)
{
	struct dir *d = *state;
	uint64_t ms = 0;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225601000ULL, &L0), 0);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 1767225601000ULL);
	/* Going down is the caller's business; the file just holds the last value. */
	assert_int_equal(fw_mark_write(d->mark, 5, &L0), 0);
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
	assert_int_equal(fw_mark_write(d->mark, 42, &L0), 0);
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
	char full[320];
	uint64_t ms = 0;
	size_t len;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), 0);
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
	assert_int_equal(fw_mark_write(path, 1, &L0), -ENOTDIR);
	assert_false(exists(tmp));

	/* Parent does not exist. */
	snprintf(path, sizeof(path), "%s/nodir/mark", d->path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_equal(fw_mark_write(path, 1, &L0), -ENOENT);
	assert_false(exists(tmp));

	/* Permissions only hold for non-root. */
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "%s/ro", d->path);
		assert_int_equal(mkdir(path, 0555), 0);
		snprintf(path, sizeof(path), "%s/ro/mark", d->path);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		assert_int_equal(fw_mark_write(path, 1, &L0), -EACCES);
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
	rc = fw_mark_write(d->mark, 1, &L0);
	assert_true(rc == -EISDIR || rc == -ENOTEMPTY || rc == -EEXIST);
	assert_false(exists(d->tmp));
	assert_true(exists(inside));
}

/* A failed write leaves the old mark as it was. */
static void test_failed_write_keeps_old(void **state)
{
	struct dir *d = *state;
	uint64_t ms = 0;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), 0);
	/* A directory where the tmp file goes: open fails before anything is written. */
	assert_int_equal(mkdir(d->tmp, 0700), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225609999ULL, &L0), -EISDIR);
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
	assert_int_equal(fw_mark_write("mark", 123, &L0), 0);
	assert_int_equal(fw_mark_read("mark", &ms), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(ms, 123);
	assert_false(exists(d->tmp));
}

/* A mark written before this change (format 1) reads, as whatever layout the reader has. */
static void test_v1_compat(void **state)
{
	static const struct fw_mark_layout other = {.epoch_ms = 1288834974657ULL,
						    .datacenter_bits = 5,
						    .worker_bits = 5,
						    .sequence_bits = 12,
						    .datacenter = 3};
	struct dir *d = *state;
	struct fw_mark m;
	char text[128];
	uint64_t ms = 0;
	int n = mark_text(text, sizeof(text), "1767225600123");

	put_file(d->mark, text, (size_t)n);
	assert_int_equal(fw_mark_read(d->mark, &ms), 0);
	assert_int_equal(ms, 1767225600123ULL);
	assert_int_equal(fw_mark_read_full(d->mark, &m), 0);
	assert_int_equal(m.format, 1);
	assert_int_equal(m.unix_ms, 1767225600123ULL);
	/* no record beside it (written by an older version): it opens for any layout */
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), 0);
	assert_int_equal(fw_mark_open(d->mark, &other, &m), 0);
	assert_int_equal(m.format, 1);
	/* the next write is format 2 in the writer's layout */
	assert_int_equal(fw_mark_write(d->mark, 1767225601000ULL, &other), 0);
	assert_int_equal(fw_mark_read_full(d->mark, &m), 0);
	assert_int_equal(m.format, 2);
	assert_true(fw_mark_layout_equal(&m.layout, &other));
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), FW_EMARK_LAYOUT);
}

/* The mark records its layout; a start with any other field refuses, naming what it read. */
static void test_layout_mismatch(void **state)
{
	struct dir *d = *state;
	struct fw_mark m;

	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), 0);
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), 0);
	assert_int_equal(m.unix_ms, 1767225600123ULL);
	for (int f = 0; f < 5; f++) {
		struct fw_mark_layout l = L0;
		switch (f) {
		case 0:
			l.epoch_ms += 5000;
			break;
		case 1:
			l.datacenter_bits = 2;
			break;
		case 2:
			l.worker_bits = 8;
			break;
		case 3:
			l.sequence_bits = 10;
			break;
		default:
			l.datacenter = 1;
			break;
		}
		memset(&m, 0, sizeof(m));
		if (fw_mark_open(d->mark, &l, &m) != FW_EMARK_LAYOUT)
			fail_msg("field %d changed: not refused", f);
		assert_true(fw_mark_layout_equal(&m.layout, &L0));
	}
	char buf[FW_MARK_LAYOUT_LEN];
	assert_string_equal(fw_mark_layout_format(&L0, buf),
			    "epoch_ms 1767225600000 datacenter_bits 0 worker_bits 10 "
			    "sequence_bits 12 datacenter 0");
}

/* Once a mark was written, its loss is FW_EMARK_LOST, never a first start. */
static void test_missing_after_written(void **state)
{
	struct dir *d = *state;
	struct fw_mark m;
	char rec[160];
	uint64_t ms = 77;

	snprintf(rec, sizeof(rec), "%s.written", d->mark);
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), -ENOENT); /* a first start */
	assert_int_equal(fw_mark_recorded(d->mark), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), 0);
	assert_int_equal(fw_mark_recorded(d->mark), 1);
	assert_true(exists(rec));
	assert_int_equal(unlink(d->mark), 0);
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), FW_EMARK_LOST);
	/* fw_mark_read keeps its meaning: there is no file */
	assert_int_equal(fw_mark_read(d->mark, &ms), -ENOENT);
	assert_int_equal(ms, 77);
	/* a corrupt mark stays corrupt, recorded or not */
	put_file(d->mark, "x", 1);
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), FW_ESTATE_CORRUPT);
}

/* A first write that fails leaves no record: that state never wrote a mark and still starts. */
static void test_failed_first_write_unrecorded(void **state)
{
	struct dir *d = *state;
	struct fw_mark m;

	assert_int_equal(mkdir(d->tmp, 0700), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), -EISDIR);
	assert_int_equal(fw_mark_recorded(d->mark), 0);
	assert_int_equal(fw_mark_open(d->mark, &L0, &m), -ENOENT);
	/* and a later failure keeps the record of the first write */
	assert_int_equal(rmdir(d->tmp), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225600123ULL, &L0), 0);
	assert_int_equal(mkdir(d->tmp, 0700), 0);
	assert_int_equal(fw_mark_write(d->mark, 1767225609999ULL, &L0), -EISDIR);
	assert_int_equal(fw_mark_recorded(d->mark), 1);
}

static uint32_t shift_of(const struct fw_mark_layout *l)
{
	return l->datacenter_bits + l->worker_bits + l->sequence_bits;
}

/*
 * The conversion: the smallest ID the new layout can issue above the new mark
 * is larger than the largest ID the old mark allowed, and the mark is the
 * lowest that does it.
 */
static void check_convert(uint64_t from_ms, const struct fw_mark_layout *a,
			  const struct fw_mark_layout *b, uint64_t expect)
{
	uint64_t to = 0;

	assert_int_equal(fw_mark_convert(from_ms, a, b, &to), 0);
	if (to != expect)
		fail_msg("convert %llu: got %llu, expected %llu", (unsigned long long)from_ms,
			 (unsigned long long)to, (unsigned long long)expect);
	uint64_t max_old = ((from_ms - a->epoch_ms + 1) << shift_of(a)) - 1;
	uint64_t min_new = (to - b->epoch_ms + 1) << shift_of(b);
	assert_true(min_new > max_old);
	/* one ms lower would issue an ID at or below an old one */
	if (to > b->epoch_ms)
		assert_true(((to - b->epoch_ms) << shift_of(b)) <= max_old);
}

static void test_convert(void **state)
{
	(void)state;
	const uint64_t M = 1780000000123ULL; /* a mark some months after the default epoch */
	const uint64_t m1 = M - L0.epoch_ms;
	struct fw_mark_layout later = L0, earlier = L0, seq8 = L0, wide = L0, dc = L0;
	later.epoch_ms += 5000;
	earlier.epoch_ms -= 5000;
	seq8.sequence_bits = 8;
	wide.worker_bits = 14;
	dc.datacenter_bits = 2;
	dc.datacenter = 1;

	check_convert(M, &L0, &L0, M);
	/* the epoch 5 s later: IDs at t equal the old ones at t - 5 s: 5 s more to wait */
	check_convert(M, &L0, &later, M + 5000);
	/* the epoch 5 s earlier: 5 s less */
	check_convert(M, &L0, &earlier, M - 5000);
	/* a narrower sequence (22 -> 18 bits below the time): 16 new ms per old one */
	check_convert(M, &L0, &seq8, L0.epoch_ms + (m1 + 1) * 16 - 1);
	/* wider worker bits (22 -> 26): one new ms spans 16 old ones */
	check_convert(M, &L0, &wide, L0.epoch_ms + (m1 + 1 + 15) / 16 - 1);
	check_convert(M + 7, &L0, &wide, L0.epoch_ms + (m1 + 8 + 15) / 16 - 1);
	/* and back, and a datacenter split */
	check_convert(M, &wide, &L0, L0.epoch_ms + (m1 + 1) * 16 - 1);
	check_convert(M, &L0, &dc, L0.epoch_ms + ((m1 + 1) + 3) / 4 - 1);
	/* only the datacenter value changes: the same mark */
	dc = L0;
	dc.datacenter = 7;
	check_convert(M, &L0, &dc, M);

	/* nothing issued under the old layout yet: the new epoch */
	uint64_t to = 0;
	assert_int_equal(fw_mark_convert(L0.epoch_ms - 1, &L0, &later, &to), 0);
	assert_int_equal(to, later.epoch_ms);
	/* old IDs up to the top of the 63 bits: no new layout issues above them */
	struct fw_mark_layout tiny = {.epoch_ms = 0, .worker_bits = 16, .sequence_bits = 15};
	struct fw_mark_layout unix0 = L0;
	unix0.epoch_ms = 0;
	/* (one new ms spans 2^9 old ones: the last 2^9 old ms fall in the last new one) */
	assert_int_equal(fw_mark_convert((1ULL << 41) - 1, &unix0, &tiny, &to), FW_ERANGE);
	assert_int_equal(fw_mark_convert((1ULL << 41) - 512, &unix0, &tiny, &to), FW_ERANGE);
	assert_int_equal(fw_mark_convert((1ULL << 41) - 513, &unix0, &tiny, &to), 0);
	assert_int_equal(to, (1ULL << 32) - 2); /* the last ms but one: the last is above all */
	assert_int_equal(fw_mark_convert(M, NULL, &tiny, &to), -EINVAL);
}

/* The advice for a lost mark: the clock plus the margin, or a higher leftover .tmp. */
static void test_advice(void **state)
{
	struct dir *d = *state;
	char text[128];
	uint64_t tmp = 1;

	assert_int_equal(fw_mark_advice(d->mark, 1000, 500, &tmp), 1500);
	assert_int_equal(tmp, 0);
	int n = mark_text(text, sizeof(text), "99999");
	put_file(d->tmp, text, (size_t)n);
	assert_int_equal(fw_mark_advice(d->mark, 1000, 500, &tmp), 99999);
	assert_int_equal(tmp, 99999);
	assert_int_equal(fw_mark_advice(d->mark, 100000, 500, NULL), 100500);
	put_file(d->tmp, "garbage", 7);
	assert_int_equal(fw_mark_advice(d->mark, 1000, 500, &tmp), 1500);
	assert_int_equal(tmp, 0);
}

/* Format 2 parses strictly: a layout line missing, out of range or out of order. */
static void test_v2_garbage(void **state)
{
	struct dir *d = *state;
	char text[320];
	struct fw_mark_layout big = L0;
	big.datacenter = 0;
	int n = mark_text2(text, sizeof(text), "1767225600123", &L0);

	expect_corrupt(d->mark, text, (size_t)n - 1); /* no final newline */
	char *w = strstr(text, "worker_bits");
	w[0] = 'W';
	expect_corrupt(d->mark, text, (size_t)n); /* keyword, with the check wrong too */
	/* a value beyond 32 bits under a matching check */
	char head[256];
	int h = snprintf(head, sizeof(head),
			 "flakewire-mark 2\nunix_ms 1\nepoch_ms 1\ndatacenter_bits 0\n"
			 "worker_bits 4294967296\nsequence_bits 12\ndatacenter 0\n");
	n = snprintf(text, sizeof(text), "%scheck %016llx\n", head,
		     (unsigned long long)fnv1a64(head, (size_t)h));
	expect_corrupt(d->mark, text, (size_t)n);
	/* lines swapped under a matching check */
	h = snprintf(head, sizeof(head),
		     "flakewire-mark 2\nunix_ms 1\nepoch_ms 1\nworker_bits 10\n"
		     "datacenter_bits 0\nsequence_bits 12\ndatacenter 0\n");
	n = snprintf(text, sizeof(text), "%scheck %016llx\n", head,
		     (unsigned long long)fnv1a64(head, (size_t)h));
	expect_corrupt(d->mark, text, (size_t)n);
	(void)big;
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
		T(test_v1_compat),
		T(test_layout_mismatch),
		T(test_missing_after_written),
		T(test_failed_first_write_unrecorded),
		cmocka_unit_test(test_convert),
		T(test_advice),
		T(test_v2_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_file.h"
#include "fw_mark.h"

#define MARK_MAGIC1 "flakewire-mark 1\n"
#define MARK_MAGIC2 "flakewire-mark 2\n"
#define MARK_MS     "unix_ms "
#define MARK_CHECK  "check "

/* The longest valid file is under 200 bytes; anything that fills this is not ours. */
#define MARK_MAX 320

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME  0x100000001b3ULL

static uint64_t fnv1a64(const char *p, size_t len)
{
	uint64_t h = FNV_OFFSET;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= FNV_PRIME;
	}
	return h;
}

/* Reading cursor: once it fails, every later read fails; check at the end. */
struct cur {
	const char *p;
	size_t len;
	size_t pos;
	bool err;
};

static void cur_lit(struct cur *c, const char *lit)
{
	size_t n = strlen(lit);

	if (c->err || c->len - c->pos < n || memcmp(c->p + c->pos, lit, n) != 0) {
		c->err = true;
		return;
	}
	c->pos += n;
}

static uint64_t cur_dec(struct cur *c)
{
	uint64_t v = 0;
	size_t start = c->pos;

	while (!c->err && c->pos < c->len && c->p[c->pos] >= '0' && c->p[c->pos] <= '9') {
		unsigned d = (unsigned)(c->p[c->pos] - '0');

		if (v > (UINT64_MAX - d) / 10)
			c->err = true;
		v = v * 10 + d;
		c->pos++;
	}
	if (c->pos == start)
		c->err = true;
	return c->err ? 0 : v;
}

/* Exactly 16 lowercase hex digits, as the writer produces them. */
static uint64_t cur_hex16(struct cur *c)
{
	uint64_t v = 0;

	for (int i = 0; i < 16 && !c->err; i++) {
		char ch;

		if (c->pos >= c->len) {
			c->err = true;
			break;
		}
		ch = c->p[c->pos++];
		if (ch >= '0' && ch <= '9')
			v = v << 4 | (uint64_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v << 4 | (uint64_t)(ch - 'a' + 10);
		else
			c->err = true;
	}
	return c->err ? 0 : v;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint32_t cur_u32(struct cur *c)
{
	uint64_t v = cur_dec(c);

	if (v > UINT32_MAX)
		c->err = true;
	return c->err ? 0 : (uint32_t)v;
}

/* Reads @path whole into @buf: its length, or a negated errno; MARK_MAX: too long. */
static ssize_t slurp(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return (ssize_t)len;
}

/* Parses either format; the cursor's error says whether it did. */
static void parse(struct cur *c, struct fw_mark *m)
{
	size_t hashed;
	uint64_t check;

	memset(m, 0, sizeof(*m));
	if (c->len >= strlen(MARK_MAGIC1) && !memcmp(c->p, MARK_MAGIC1, strlen(MARK_MAGIC1))) {
		cur_lit(c, MARK_MAGIC1);
		m->format = 1;
	} else {
		cur_lit(c, MARK_MAGIC2);
		m->format = 2;
	}
	cur_lit(c, MARK_MS);
	m->unix_ms = cur_dec(c);
	cur_lit(c, "\n");
	if (m->format == 2) {
		cur_lit(c, "epoch_ms ");
		m->layout.epoch_ms = cur_dec(c);
		cur_lit(c, "\ndatacenter_bits ");
		m->layout.datacenter_bits = cur_u32(c);
		cur_lit(c, "\nworker_bits ");
		m->layout.worker_bits = cur_u32(c);
		cur_lit(c, "\nsequence_bits ");
		m->layout.sequence_bits = cur_u32(c);
		cur_lit(c, "\ndatacenter ");
		m->layout.datacenter = cur_u32(c);
		cur_lit(c, "\n");
	}
	hashed = c->pos;
	cur_lit(c, MARK_CHECK);
	check = cur_hex16(c);
	cur_lit(c, "\n");
	if (!c->err && (c->pos != c->len || check != fnv1a64(c->p, hashed)))
		c->err = true;
}

int fw_mark_read_full(const char *path, struct fw_mark *m)
{
	char buf[MARK_MAX];
	struct fw_mark got;
	ssize_t len = slurp(path, buf, sizeof(buf));

	if (len < 0)
		return (int)len;
	if ((size_t)len == sizeof(buf))
		return FW_ESTATE_CORRUPT;
	struct cur c = {.p = buf, .len = (size_t)len};
	parse(&c, &got);
	if (c.err)
		return FW_ESTATE_CORRUPT;
	*m = got;
	return 0;
}

int fw_mark_read(const char *path, uint64_t *unix_ms)
{
	struct fw_mark m;
	int rc = fw_mark_read_full(path, &m);

	if (rc == 0)
		*unix_ms = m.unix_ms;
	return rc;
}

bool fw_mark_layout_equal(const struct fw_mark_layout *a, const struct fw_mark_layout *b)
{
	return a->epoch_ms == b->epoch_ms && a->datacenter_bits == b->datacenter_bits &&
	       a->worker_bits == b->worker_bits && a->sequence_bits == b->sequence_bits &&
	       a->datacenter == b->datacenter;
}

char *fw_mark_layout_format(const struct fw_mark_layout *l, char *buf)
{
	snprintf(buf, FW_MARK_LAYOUT_LEN,
		 "epoch_ms %llu datacenter_bits %u worker_bits %u sequence_bits %u datacenter %u",
		 (unsigned long long)l->epoch_ms, l->datacenter_bits, l->worker_bits,
		 l->sequence_bits, l->datacenter);
	return buf;
}

static int record_path(const char *path, char *out, size_t cap)
{
	if (snprintf(out, cap, "%s" FW_MARK_RECORD_SUFFIX, path) >= (int)cap)
		return -ENAMETOOLONG;
	return 0;
}

int fw_mark_recorded(const char *path)
{
	char rec[PATH_MAX];
	struct stat st;
	int rc = record_path(path, rec, sizeof(rec));

	if (rc)
		return rc;
	if (lstat(rec, &st) == 0)
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

/* Creates PATH.written, durably, unless it exists: 1 when this created it, 0, -errno. */
static int record(const char *path)
{
	static const char text[] =
		"flakewire: a mark was written beside this file. Keep it: while it exists, a "
		"missing mark refuses to start (doc/runbook.md#a-lost-or-unreadable-mark).\n";
	char rec[PATH_MAX];
	int rc = fw_mark_recorded(path);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	rc = record_path(path, rec, sizeof(rec));
	if (rc)
		return rc;
	int fd = open(rec, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	rc = write_all(fd, text, sizeof(text) - 1);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc) {
		unlink(rec); /* not recorded: the mark is not written either */
		return rc;
	}
	rc = fw_fsync_dir(rec);
	return rc ? rc : 1;
}

/* A first mark that was not written: its record goes too (a state that never wrote one). */
static void unrecord(const char *path)
{
	char rec[PATH_MAX];

	if (record_path(path, rec, sizeof(rec)) == 0 && unlink(rec) == 0 && fw_fsync_dir(rec)) {
		/* it may come back after a crash: the start then refuses, the safe side */
	}
}

int fw_mark_open(const char *path, const struct fw_mark_layout *want, struct fw_mark *found)
{
	struct fw_mark m;
	int rc = fw_mark_read_full(path, &m);

	if (rc == -ENOENT) {
		int r = fw_mark_recorded(path);
		return r < 0 ? r : r ? FW_EMARK_LOST : -ENOENT;
	}
	if (rc)
		return rc;
	if (found)
		*found = m;
	if (m.format == 2 && !fw_mark_layout_equal(&m.layout, want))
		return FW_EMARK_LAYOUT;
	return 0;
}

int fw_mark_convert(uint64_t from_ms, const struct fw_mark_layout *from,
		    const struct fw_mark_layout *to, uint64_t *to_ms)
{
	if (!from || !to || !to_ms)
		return -EINVAL;
	uint32_t s1 = from->datacenter_bits + from->worker_bits + from->sequence_bits;
	uint32_t s2 = to->datacenter_bits + to->worker_bits + to->sequence_bits;
	if (s1 > 31 || s2 > 31)
		return -EINVAL;
	uint64_t end1 = 1ull << (63 - s1), end2 = 1ull << (63 - s2);
	if (from_ms < from->epoch_ms) {
		*to_ms = to->epoch_ms; /* nothing was issued under it */
		return 0;
	}
	/* the old layout never issued past its own end: IDs are below 2^63 */
	uint64_t m1 = FW_MIN(from_ms - from->epoch_ms, end1 - 1);
	uint64_t above = (m1 + 1) << s1; /* the smallest value above every old ID, <= 2^63 */
	uint64_t m2 = (above - 1) >> s2; /* smallest m2 with (m2 + 1) << s2 >= above */
	if (m2 >= end2 - 1 || m2 > UINT64_MAX - to->epoch_ms)
		return FW_ERANGE;
	*to_ms = to->epoch_ms + m2;
	return 0;
}

uint64_t fw_mark_advice(const char *path, uint64_t now_unix_ms, uint64_t margin_ms,
			uint64_t *tmp_ms)
{
	char tmp[PATH_MAX];
	uint64_t t = 0, advice = now_unix_ms + margin_ms;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) < (int)sizeof(tmp) &&
	    fw_mark_read(tmp, &t) != 0)
		t = 0;
	if (tmp_ms)
		*tmp_ms = t;
	return FW_MAX(advice, t);
}

int fw_mark_write(const char *path, uint64_t unix_ms, const struct fw_mark_layout *layout)
{
	char tmp[PATH_MAX];
	char text[MARK_MAX];
	int len, head, fd, err;

	if (layout == NULL)
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	head = snprintf(text, sizeof(text),
			MARK_MAGIC2 MARK_MS "%llu\nepoch_ms %llu\ndatacenter_bits %u\n"
					    "worker_bits %u\nsequence_bits %u\ndatacenter %u\n",
			(unsigned long long)unix_ms, (unsigned long long)layout->epoch_ms,
			layout->datacenter_bits, layout->worker_bits, layout->sequence_bits,
			layout->datacenter);
	len = head + snprintf(text + head, sizeof(text) - (size_t)head, MARK_CHECK "%016llx\n",
			      (unsigned long long)fnv1a64(text, (size_t)head));
	/* recorded before the first mark exists: a mark on disk always has its record */
	int created = record(path);
	if (created < 0)
		return created;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		if (created)
			unrecord(path);
		return err;
	}
	err = write_all(fd, text, (size_t)len);
	if (!err && fsync(fd) < 0)
		err = -errno;
	/* close() can report a deferred write error (NFS, quotas). */
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		if (created)
			unrecord(path);
		return err;
	}
	return fw_fsync_dir(path); /* the rename itself, durable */
}

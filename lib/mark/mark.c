/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_file.h"
#include "fw_mark.h"

#define MARK_MAGIC "flakewire-mark 1\n"
#define MARK_MS    "unix_ms "
#define MARK_CHECK "check "

/* The longest valid file is 69 bytes; anything that fills this is not ours. */
#define MARK_MAX 128

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

int fw_mark_read(const char *path, uint64_t *unix_ms)
{
	char buf[MARK_MAX];
	struct cur c;
	size_t len = 0;
	uint64_t ms, check;
	size_t hashed;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err)
		return err;
	if (len == sizeof(buf))
		return FW_ESTATE_CORRUPT;

	c = (struct cur){.p = buf, .len = len};
	cur_lit(&c, MARK_MAGIC);
	cur_lit(&c, MARK_MS);
	ms = cur_dec(&c);
	cur_lit(&c, "\n");
	hashed = c.pos;
	cur_lit(&c, MARK_CHECK);
	check = cur_hex16(&c);
	cur_lit(&c, "\n");
	if (c.err || c.pos != len || check != fnv1a64(buf, hashed))
		return FW_ESTATE_CORRUPT;
	*unix_ms = ms;
	return 0;
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

int fw_mark_write(const char *path, uint64_t unix_ms)
{
	char tmp[PATH_MAX];
	char text[MARK_MAX];
	int len, head, fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;

	head = snprintf(text, sizeof(text), MARK_MAGIC MARK_MS "%llu\n",
			(unsigned long long)unix_ms);
	len = head + snprintf(text + head, sizeof(text) - (size_t)head, MARK_CHECK "%016llx\n",
			      (unsigned long long)fnv1a64(text, (size_t)head));

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
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
		return err;
	}
	return fw_fsync_dir(path); /* the rename itself, durable */
}

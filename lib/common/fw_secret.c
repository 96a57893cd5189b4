/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw_secret.h"

static int refuse(const char *path, const char *what, char *buf, size_t cap, int rc, char *err,
		  size_t errlen, const char *why)
{
	memset(buf, 0, cap);
	snprintf(err, errlen, "%s = %s: %s", what, path, why);
	return rc;
}

int fw_secret_read(const char *path, const char *what, char *buf, size_t cap, char *err,
		   size_t errlen)
{
	char why[160];
	struct stat st;
	if (cap < 2)
		return -EINVAL;
	memset(buf, 0, cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return refuse(path, what, buf, cap, -errno, err, errlen, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(path, what, buf, cap, -EINVAL, err, errlen, "not a regular file");
	}
	unsigned mode = st.st_mode & 07777;
	if (st.st_uid == 0 && (mode & 037)) {
		close(fd);
		snprintf(why, sizeof(why),
			 "permissions %04o: a secret owned by root must be 0640 or stricter", mode);
		return refuse(path, what, buf, cap, -EPERM, err, errlen, why);
	}
	if (st.st_uid != 0 && st.st_uid == geteuid() && (mode & 077)) {
		close(fd);
		snprintf(why, sizeof(why),
			 "permissions %04o: a secret owned by this user must be 0600 or stricter",
			 mode);
		return refuse(path, what, buf, cap, -EPERM, err, errlen, why);
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		close(fd);
		snprintf(why, sizeof(why),
			 "owned by uid %u: a secret must be owned by this user (uid %u) or root",
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return refuse(path, what, buf, cap, -EPERM, err, errlen, why);
	}
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return refuse(path, what, buf, cap, -e, err, errlen, strerror(e));
		}
		len += (size_t)n;
		if (n == 0 || len == cap - 1)
			break;
	}
	close(fd);
	size_t line = strcspn(buf, "\r\n");
	if (line == len && len == cap - 1)
		return refuse(path, what, buf, cap, -EINVAL, err, errlen, "longer than allowed");
	memset(buf + line, 0, cap - line);
	if (line == 0)
		return refuse(path, what, buf, cap, -EINVAL, err, errlen, "empty");
	return 0;
}

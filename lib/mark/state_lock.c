/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fw_state_lock.h"

#define WORKER_LOCKS_MAX 1024

struct fw_state_lock {
	int fd; /* STATE_FILE.lock */
	char stamp[FW_STATE_STAMP_LEN];
	uint32_t n_workers;
	int worker_fd[WORKER_LOCKS_MAX];
};

/*
 * Opens @path read-only for the lock (flock needs no write access, and a
 * lock held on a file open for writing would keep its filesystem from
 * being remounted read-only), creating it when missing. Opening an existing
 * file without O_CREAT first: in a sticky world-writable directory the
 * kernel's protected_regular refuses O_CREAT on another user's file, even
 * to root.
 */
static int open_lock_file(const char *path)
{
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 || errno != ENOENT)
			return fd < 0 ? -errno : fd;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0) {
			fchmod(fd, 0644); /* whatever the umask: others may lock it */
			close(fd);
			continue;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EAGAIN;
}

static long read_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* The holder's PID, for the next one's message; through a descriptor closed at once. */
static void write_pid(const char *path)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return; /* another user's file: the lock holds all the same, its PID unknown */
	if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)n, 0) != n) {
		/* full: the same */
	}
	close(fd);
}

/* Opens and locks @path: fd >= 0; -EWOULDBLOCK with *holder; -errno. */
static int lock_file(const char *path, long *holder)
{
	int fd = open_lock_file(path);
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		*holder = e == EWOULDBLOCK ? read_pid(fd) : 0;
		close(fd);
		return -e;
	}
	write_pid(path);
	return fd;
}

int fw_state_lock_file(const char *path, long *holder)
{
	*holder = 0;
	return lock_file(path, holder);
}

/*
 * FW_STATE_BOOT_ID_ENV's value in the kernel's form (8-4-4-4-12 lowercase
 * hex): systemd's %b is the same 128 bits without dashes. Anything but 32
 * hex digits (dashes aside) is refused: "" in @buf.
 */
static void boot_id_env(char *buf, size_t cap)
{
	const char *v = getenv(FW_STATE_BOOT_ID_ENV);
	char hex[33];
	size_t n = 0;
	buf[0] = '\0';
	for (; v != NULL && *v && n < 33; v++) {
		if (*v == '-')
			continue;
		if (!((*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'f') ||
		      (*v >= 'A' && *v <= 'F')))
			return;
		hex[n++] = (char)(*v | 0x20); /* lower case (digits keep theirs) */
	}
	if (v == NULL || *v || n != 32 || cap < 37)
		return;
	snprintf(buf, cap, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

static void boot_id(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	buf[0] = '\0';
	if (f != NULL) {
		if (fgets(buf, (int)cap, f) == NULL)
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0])
		boot_id_env(buf, cap); /* /proc/sys hidden (ProcSubset=pid): the unit's %b */
	if (!buf[0]) {
		/* unknown boot: a stamp of its own, so this state never proves a later run */
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
		snprintf(buf, cap, "unknown-%016" PRIx64, r);
	}
}

static void make_dir_of(const char *file)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", file);
	if (mkdir(dirname(dir), 0755) != 0 && errno != EEXIST) {
		/* the open below names the failure */
	}
}

int fw_state_lock_take(const char *state_file, struct fw_state_lock **out, char *err, size_t errlen)
{
	char path[PATH_MAX], boot[48];
	long holder = 0;
	struct stat st;

	*out = NULL;
	if (snprintf(path, sizeof(path), "%s.lock", state_file) >= (int)sizeof(path)) {
		snprintf(err, errlen, "[state] file = %s: name too long", state_file);
		return -ENAMETOOLONG;
	}
	struct fw_state_lock *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	make_dir_of(path);
	int fd = lock_file(path, &holder);
	if (fd == -EWOULDBLOCK) {
		char pid[32] = "an unknown PID";
		if (holder > 0)
			snprintf(pid, sizeof(pid), "PID %ld", holder);
		snprintf(err, errlen,
			 "state %s is locked by %s (%s): another responder serves from this "
			 "state; stop it first, or give this one its own [state] file",
			 state_file, pid, path);
		free(l);
		return fd;
	}
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = fd < 0 ? fd : -errno;
		snprintf(err, errlen, "state lock %s: %s ([state] file = %s)", path, strerror(-e),
			 state_file);
		if (fd >= 0)
			close(fd);
		free(l);
		return e;
	}
	l->fd = fd;
	boot_id(boot, sizeof(boot));
	snprintf(l->stamp, sizeof(l->stamp), "%ju:%ju:%s", (uintmax_t)st.st_dev,
		 (uintmax_t)st.st_ino, boot);
	*out = l;
	return 0;
}

int fw_state_lock_worker_name(char *buf, size_t cap, uint32_t node, uint32_t seq_bits)
{
	int n = snprintf(buf, cap, "node%u-seq%u.lock", node, seq_bits);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int fw_state_lock_workers(struct fw_state_lock *l, const char *lock_dir, const uint32_t *values,
			  uint32_t n, uint32_t worker_bits, uint32_t seq_bits, char *err,
			  size_t errlen)
{
	char path[PATH_MAX], name[64];
	if (n > WORKER_LOCKS_MAX || l->n_workers || worker_bits > 16 || seq_bits > 63) {
		snprintf(err, errlen, "state lock: %u worker IDs: at most %u, taken once", n,
			 WORKER_LOCKS_MAX);
		return -EINVAL;
	}
	if (mkdir(lock_dir, 01777) == 0)
		chmod(lock_dir, 01777); /* past the umask: every responder's user locks here */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t dc = values[i] >> worker_bits, w = values[i] & ((1u << worker_bits) - 1);
		long holder = 0;
		fw_state_lock_worker_name(name, sizeof(name), values[i], seq_bits);
		int fd = snprintf(path, sizeof(path), "%s/%s", lock_dir, name) >= (int)sizeof(path)
				 ? -ENAMETOOLONG
				 : lock_file(path, &holder);
		if (fd < 0) {
			char pid[32] = "an unknown PID";
			if (holder > 0)
				snprintf(pid, sizeof(pid), "PID %ld", holder);
			if (fd == -EWOULDBLOCK)
				snprintf(
					err, errlen,
					"static worker ID %u (datacenter %u: node field %u, %u "
					"sequence bits) is locked by %s (%s): another responder on "
					"this host issues IDs that can equal these; give each its "
					"own "
					"[id] worker_base / workers, or use a fleet",
					w, dc, values[i], seq_bits, pid, path);
			else
				snprintf(err, errlen,
					 "worker lock %s: %s ([state] lock_dir = %s must be a "
					 "directory this user can write)",
					 path, strerror(-fd), lock_dir);
			for (uint32_t j = 0; j < l->n_workers; j++)
				close(l->worker_fd[j]);
			l->n_workers = 0;
			return fd;
		}
		l->worker_fd[l->n_workers++] = fd;
	}
	return 0;
}

/* One field of a mountinfo line, its octal escapes (\040 for a space) decoded. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; o++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 4;
		} else {
			*o = *p++;
		}
	}
	*o = '\0';
}

int fw_state_lock_dir_mounted(const char *dir, const char *mountinfo)
{
	char real[PATH_MAX], line[4096];
	if (realpath(dir, real) == NULL)
		return -errno;
	FILE *f = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");
	if (f == NULL)
		return -errno;
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNT_POINT ... (proc(5)) */
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int k = 0; tok && k < 4; k++)
			tok = strtok_r(NULL, " ", &save);
		if (tok == NULL)
			continue;
		unescape(tok);
		found = !strcmp(tok, real) && strcmp(real, "/");
	}
	int rc = ferror(f) ? -EIO : found;
	fclose(f);
	return rc;
}

const char *fw_state_lock_stamp(const struct fw_state_lock *l)
{
	return l->stamp;
}

int fw_state_lock_holder(const char *state_file, long *pid)
{
	char path[PATH_MAX];
	*pid = 0;
	if (snprintf(path, sizeof(path), "%s.lock", state_file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? 1 : -errno;
		if (rc == 1)
			*pid = read_pid(fd);
	}
	close(fd); /* drops the lock if this took it */
	return rc;
}

void fw_state_lock_free(struct fw_state_lock *l)
{
	if (l == NULL)
		return;
	for (uint32_t j = 0; j < l->n_workers; j++)
		close(l->worker_fd[j]);
	close(l->fd);
	free(l);
}

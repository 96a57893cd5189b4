/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_file.h"
#include "fw_fleet_cache.h"

#define MAGIC_V2 "flakewire-fleet-cache v2\n" /* before the mark line (issue 48) */
#define MAGIC    "flakewire-fleet-cache v3\n"

/* The lines after the magic that say whose cache it is (the same in v2 and v3). */
static int header(char *buf, size_t cap, const struct fw_fleet_cache_of *of)
{
	return snprintf(buf, cap, "root=%s\nidentity=%s\nlayout=%" PRIu64 "/%u/%u/%u\nstate=%s\n",
			of->root, of->identity, of->layout.epoch_ms, of->layout.dc_bits,
			of->layout.worker_bits, of->layout.seq_bits, of->stamp ? of->stamp : "");
}

int fw_fleet_cache_write(const char *path, const struct fw_fleet_cache_of *of, uint64_t mark_unix,
			 const struct fw_fleet_held *slots, uint32_t n)
{
	char tmp[PATH_MAX + 8], text[1024 + 128 * FW_FLEET_SLOTS_MAX];
	if (n > FW_FLEET_SLOTS_MAX || strlen(path) >= PATH_MAX ||
	    mark_unix == FW_FLEET_CACHE_NO_MARK)
		return -EINVAL;
	size_t len = (size_t)snprintf(text, sizeof(text), MAGIC);
	len += (size_t)header(text + len, sizeof(text) - len, of);
	if (len < sizeof(text))
		len += (size_t)snprintf(text + len, sizeof(text) - len, "mark=%" PRIu64 "\n",
					mark_unix);
	for (uint32_t i = 0; i < n && len < sizeof(text); i++) {
		const struct fw_fleet_held *h = &slots[i];
		if (h->worker == FW_FLEET_WORKER_NONE)
			continue;
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"slot=%u worker=%d version=%" PRId64 " lease_until=%" PRIu64
					" floor=%" PRIu64 " token=%016" PRIx64 "\n",
					i, h->worker, h->version, h->lease, h->floor, h->token);
	}
	if (len >= sizeof(text))
		return -ENOSPC;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc ? rc : fw_fsync_dir(path);
}

int fw_fleet_cache_read(const char *path, const struct fw_fleet_cache_of *of, uint64_t *mark_unix,
			struct fw_fleet_held *slots, uint32_t n)
{
	char line[512] = "", want[1024];
	FILE *fp = fopen(path, "re");
	int loaded = 0;
	uint64_t mark = FW_FLEET_CACHE_NO_MARK;
	if (mark_unix)
		*mark_unix = FW_FLEET_CACHE_NO_MARK;
	if (fp == NULL)
		return -errno;
	header(want, sizeof(want), of);
	/* the magic line first: anything else is garbled, not someone else's */
	if (!fgets(line, sizeof(line), fp) || (strcmp(line, MAGIC) && strcmp(line, MAGIC_V2))) {
		if (!strcmp(line, "flakewire-fleet-cache v1\n")) {
			fclose(fp); /* before state stamps: proves nothing */
			return -ESTALE;
		}
		goto bad;
	}
	bool v2 = !strcmp(line, MAGIC_V2);
	if (of->stamp == NULL || !of->stamp[0]) {
		fclose(fp);
		return -ESTALE;
	}
	for (const char *w = want; *w;) {
		const char *nl = strchr(w, '\n');
		size_t l = (size_t)(nl - w) + 1;
		if (!fgets(line, sizeof(line), fp) || strlen(line) != l || strncmp(line, w, l)) {
			fclose(fp);
			return -ESTALE;
		}
		w += l;
	}
	/* v3: the mark the state had persisted when this was written; a v2 file
	 * (written before the line existed) is read as before, without one */
	if (!v2) {
		unsigned long long m;
		char end;
		if (!fgets(line, sizeof(line), fp) || sscanf(line, "mark=%llu%c", &m, &end) != 2 ||
		    end != '\n' || m == FW_FLEET_CACHE_NO_MARK)
			goto bad;
		mark = m;
	}
	uint32_t total = 1u << of->layout.worker_bits;
	while (fgets(line, sizeof(line), fp)) {
		unsigned slot;
		int worker;
		long long version;
		unsigned long long lease, floor, token;
		if (sscanf(line,
			   "slot=%u worker=%d version=%lld lease_until=%llu floor=%llu token=%llx",
			   &slot, &worker, &version, &lease, &floor, &token) != 6 ||
		    worker < 0 || (uint32_t)worker >= total)
			goto bad;
		if (slot >= n)
			continue;
		slots[slot] =
			(struct fw_fleet_held){worker, version, lease, floor, false, true, token};
		loaded++;
	}
	fclose(fp);
	if (mark_unix)
		*mark_unix = mark;
	return loaded;
bad:
	fclose(fp);
	for (uint32_t i = 0; i < n; i++)
		slots[i].worker = FW_FLEET_WORKER_NONE;
	return FW_ESTATE_CORRUPT;
}

const char *fw_fleet_cache_why(int rc)
{
	switch (rc) {
	case -ENOENT:
		return "the cache file does not exist";
	case -ESTALE:
		return "the cache file is for another root, identity, layout or state (a copied "
		       "or restored state directory, a reboot, or no state lock)";
	case FW_ESTATE_CORRUPT:
		return "the cache file is garbled";
	case FW_FLEET_CACHE_MARK_BELOW:
		return "the state's mark is missing, unreadable or below the mark this cache "
		       "recorded (a deleted, restored or rewritten mark does not fence what the "
		       "run that wrote the cache issued)";
	case 0:
		return "the cache file holds no worker ID";
	default:
		return "the cache file is unreadable";
	}
}

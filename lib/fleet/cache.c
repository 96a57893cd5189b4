/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_file.h"
#include "fw_fleet_cache.h"

static int header(char *buf, size_t cap, const struct fw_fleet_cache_of *of)
{
	return snprintf(buf, cap,
			"flakewire-fleet-cache v2\nroot=%s\nidentity=%s\nlayout=%" PRIu64
			"/%u/%u/%u\nstate=%s\n",
			of->root, of->identity, of->layout.epoch_ms, of->layout.dc_bits,
			of->layout.worker_bits, of->layout.seq_bits, of->stamp ? of->stamp : "");
}

int fw_fleet_cache_write(const char *path, const struct fw_fleet_cache_of *of,
			 const struct fw_fleet_held *slots, uint32_t n)
{
	char tmp[PATH_MAX + 8], text[1024 + 128 * FW_FLEET_SLOTS_MAX];
	if (n > FW_FLEET_SLOTS_MAX || strlen(path) >= PATH_MAX)
		return -EINVAL;
	size_t len = (size_t)header(text, sizeof(text), of);
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

int fw_fleet_cache_read(const char *path, const struct fw_fleet_cache_of *of,
			struct fw_fleet_held *slots, uint32_t n)
{
	char line[512] = "", want[1024];
	FILE *fp = fopen(path, "re");
	int loaded = 0;
	if (fp == NULL)
		return -errno;
	header(want, sizeof(want), of);
	/* the magic line first: anything else is garbled, not someone else's */
	size_t magic = strlen("flakewire-fleet-cache v2\n");
	if (!fgets(line, sizeof(line), fp) || strncmp(line, want, magic)) {
		if (!strcmp(line, "flakewire-fleet-cache v1\n")) {
			fclose(fp); /* before state stamps: proves nothing */
			return -ESTALE;
		}
		goto bad;
	}
	if (of->stamp == NULL || !of->stamp[0]) {
		fclose(fp);
		return -ESTALE;
	}
	for (const char *w = want + magic; *w;) {
		const char *nl = strchr(w, '\n');
		size_t l = (size_t)(nl - w) + 1;
		if (!fgets(line, sizeof(line), fp) || strlen(line) != l || strncmp(line, w, l)) {
			fclose(fp);
			return -ESTALE;
		}
		w += l;
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
	case 0:
		return "the cache file holds no worker ID";
	default:
		return "the cache file is unreadable";
	}
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The records' text and keys (fw_fleet_rec.h): pure, no store, no clock, no I/O. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fleet_rec.h"
#include "fw_fleet_store.h"

int fw_fleet_rec_format(char *buf, size_t cap, const struct fw_fleet_rec *r)
{
	int n = snprintf(buf, cap,
			 "flakewire-worker v1\nowner=%s\ntoken=%016" PRIx64 "\nlease_until=%" PRIu64
			 "\nfloor=%" PRIu64 "\n",
			 r->owner, r->token, r->lease, r->floor);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int fw_fleet_rec_parse(const char *buf, int len, struct fw_fleet_rec *r)
{
	char text[FW_FLEET_REC_MAX + 1], *save = NULL;
	int seen = 0;
	if (len < 0 || len > FW_FLEET_REC_MAX)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	memset(r, 0, sizeof(*r));
	char *line = strtok_r(text, "\n", &save);
	if (line == NULL || strcmp(line, "flakewire-worker v1"))
		return -EINVAL;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		char *eq = strchr(line, '=');
		if (eq == NULL)
			return -EINVAL;
		*eq = '\0';
		const char *v = eq + 1;
		char *end;
		if (!strcmp(line, "owner")) {
			if (strlen(v) >= sizeof(r->owner))
				return -EINVAL;
			strcpy(r->owner, v);
			seen |= 1;
			continue;
		}
		errno = 0;
		unsigned long long x = strtoull(v, &end, !strcmp(line, "token") ? 16 : 10);
		if (errno || end == v || *end || *v == '-')
			return -EINVAL;
		if (!strcmp(line, "token"))
			r->token = x, seen |= 2;
		else if (!strcmp(line, "lease_until"))
			r->lease = x, seen |= 4;
		else if (!strcmp(line, "floor"))
			r->floor = x, seen |= 8;
	}
	return seen == 15 ? 0 : -EINVAL;
}

int fw_fleet_layout_format(char *buf, size_t cap, const struct fw_layout *l)
{
	int n = snprintf(buf, cap,
			 "flakewire-fleet v1\nepoch_ms=%" PRIu64
			 "\ndatacenter_bits=%u\nworker_bits=%u\nsequence_bits=%u\n",
			 l->epoch_ms, l->dc_bits, l->worker_bits, l->seq_bits);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int fw_fleet_layout_parse(const char *buf, int len, struct fw_layout *l)
{
	char text[FW_FLEET_REC_MAX + 1];
	unsigned long long e;
	unsigned d, w, s;
	if (len <= 0 || len > FW_FLEET_REC_MAX)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	if (sscanf(text,
		   "flakewire-fleet v1\nepoch_ms=%llu\ndatacenter_bits=%u\nworker_bits=%u\n"
		   "sequence_bits=%u",
		   &e, &d, &w, &s) != 4)
		return -EINVAL;
	/* store data: each width checked alone (no wrap in a sum), then as any
	 * layout is (fw_layout_init: worker and sequence ranges, enough time bits) */
	struct fw_layout n;
	if (d > 63 || w > 63 || s > 63 || fw_layout_init(&n, e, d, w, s, 0) != 0)
		return -EINVAL;
	*l = n;
	return 0;
}

bool fw_fleet_layout_same(const struct fw_layout *a, const struct fw_layout *b)
{
	return a->epoch_ms == b->epoch_ms && a->dc_bits == b->dc_bits &&
	       a->worker_bits == b->worker_bits && a->seq_bits == b->seq_bits;
}

bool fw_fleet_identity_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= FW_FLEET_IDENTITY_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':'))
			return false;
	}
	return true;
}

int fw_fleet_key_worker(char *buf, size_t cap, const char *root, uint32_t worker)
{
	return snprintf(buf, cap, "%s/workers/%05u", root, worker);
}

int fw_fleet_key_node(char *buf, size_t cap, const char *root, const char *identity)
{
	return snprintf(buf, cap, "%s/nodes/%s", root, identity);
}

int fw_fleet_key_sub(char *buf, size_t cap, const char *root, const char *sub)
{
	return snprintf(buf, cap, "%s/%s", root, sub);
}

int32_t fw_fleet_key_worker_parse(const char *name, uint32_t total)
{
	char *end;
	if (name[0] < '0' || name[0] > '9')
		return -1;
	errno = 0;
	unsigned long w = strtoul(name, &end, 10);
	if (errno || *end || w >= total)
		return -1;
	return (int32_t)w;
}

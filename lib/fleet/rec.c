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

int fw_fleet_alive_format(char *buf, size_t cap, const struct fw_fleet_alive *a)
{
	int n = snprintf(buf, cap,
			 "pid=%ld\ntoken=%016" PRIx64 "\nprocess=%016" PRIx64 "\nstate=%s\n",
			 a->pid, a->token, a->process, a->state);
	return n < 0 || (size_t)n >= cap || strchr(a->state, '\n') ? -ENOSPC : n;
}

int fw_fleet_alive_parse(const char *buf, int len, struct fw_fleet_alive *a)
{
	char text[FW_FLEET_REC_MAX + 1], *save = NULL, *line;
	int seen = 0;
	if (len < 0 || len > FW_FLEET_REC_MAX)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	memset(a, 0, sizeof(*a));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '='), *end;
		if (eq == NULL)
			return -EINVAL;
		*eq = '\0';
		const char *v = eq + 1;
		if (!strcmp(line, "state")) {
			if (strlen(v) >= sizeof(a->state))
				return -EINVAL;
			strcpy(a->state, v);
			seen |= 8;
			continue;
		}
		errno = 0;
		unsigned long long x = strtoull(v, &end, !strcmp(line, "pid") ? 10 : 16);
		if (errno || end == v || *end || *v == '-')
			return -EINVAL;
		if (!strcmp(line, "pid"))
			a->pid = (long)x, seen |= 1;
		else if (!strcmp(line, "token"))
			a->token = x, seen |= 2;
		else if (!strcmp(line, "process"))
			a->process = x, seen |= 4;
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

int fw_fleet_reserve_parse(const char *s, uint32_t total, struct fw_fleet_reserve *r)
{
	memset(r, 0, sizeof(*r));
	while (*s) {
		char *end;
		if (*s < '0' || *s > '9' || r->n == FW_FLEET_RESERVE_MAX)
			return -EINVAL;
		errno = 0;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				return -EINVAL;
			hi = strtoul(s, &end, 10);
		}
		if (errno || lo > hi || hi >= total || (*end && *end != ','))
			return -EINVAL;
		r->lo[r->n] = (uint32_t)lo;
		r->hi[r->n++] = (uint32_t)hi;
		s = *end ? end + 1 : end;
		if (*end && !*s)
			return -EINVAL; /* a trailing ',' */
	}
	return 0;
}

int fw_fleet_reserve_format(char *buf, size_t cap, const struct fw_fleet_reserve *r)
{
	size_t n = 0;
	if (cap == 0)
		return -ENOSPC;
	buf[0] = '\0';
	for (uint32_t i = 0; i < r->n; i++) {
		int k = r->lo[i] == r->hi[i]
				? snprintf(buf + n, cap - n, "%s%u", i ? "," : "", r->lo[i])
				: snprintf(buf + n, cap - n, "%s%u-%u", i ? "," : "", r->lo[i],
					   r->hi[i]);
		if (k < 0 || (size_t)k >= cap - n)
			return -ENOSPC;
		n += (size_t)k;
	}
	return (int)n;
}

bool fw_fleet_reserved(const struct fw_fleet_reserve *r, uint32_t w)
{
	for (uint32_t i = 0; r != NULL && i < r->n; i++)
		if (w >= r->lo[i] && w <= r->hi[i])
			return true;
	return false;
}

bool fw_fleet_reserve_same(const struct fw_fleet_reserve *a, const struct fw_fleet_reserve *b,
			   uint32_t total)
{
	for (uint32_t w = 0; w < total; w++)
		if (fw_fleet_reserved(a, w) != fw_fleet_reserved(b, w))
			return false;
	return true;
}

int fw_fleet_root_format(char *buf, size_t cap, const struct fw_fleet_root *r)
{
	char res[FW_FLEET_RESERVE_MAX * 12 + 1];
	int n = fw_fleet_layout_format(buf, cap, &r->layout);
	if (n < 0 || fw_fleet_reserve_format(res, sizeof(res), &r->reserved) < 0)
		return -ENOSPC;
	int k = snprintf(buf + n, cap - (size_t)n,
			 "datacenter=%u\nreserved=%s\ngeneration=%016" PRIx64 "\nfence=%" PRIu64
			 "\n",
			 r->datacenter, res, r->generation, r->fence);
	if (k >= 0 && r->has_history && (size_t)k < cap - (size_t)n)
		k += snprintf(buf + n + k, cap - (size_t)(n + k), "history=%" PRId64 "\n",
			      r->history);
	return k < 0 || (size_t)k >= cap - (size_t)n ? -ENOSPC : n + k;
}

int fw_fleet_root_parse(const char *buf, int len, struct fw_fleet_root *r)
{
	char text[FW_FLEET_REC_MAX + 1], *save = NULL;
	memset(r, 0, sizeof(*r));
	if (fw_fleet_layout_parse(buf, len, &r->layout) != 0)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		if (!strncmp(line, "datacenter=", 11)) {
			errno = 0;
			unsigned long d = strtoul(line + 11, &end, 10);
			if (errno || end == line + 11 || *end || line[11] == '-' ||
			    d >> r->layout.dc_bits)
				return -EINVAL;
			r->datacenter = (uint32_t)d;
			r->has_dc = true;
		} else if (!strncmp(line, "reserved=", 9)) {
			if (fw_fleet_reserve_parse(line + 9, 1u << r->layout.worker_bits,
						   &r->reserved) != 0)
				return -EINVAL;
		} else if (!strncmp(line, "fence=", 6)) {
			errno = 0;
			r->fence = strtoull(line + 6, &end, 10);
			if (errno || end == line + 6 || *end || line[6] == '-')
				return -EINVAL;
		} else if (!strncmp(line, "generation=", 11)) {
			errno = 0;
			r->generation = strtoull(line + 11, &end, 16);
			if (errno || end == line + 11 || *end)
				return -EINVAL;
		} else if (!strncmp(line, "history=", 8)) {
			errno = 0;
			r->history = strtoll(line + 8, &end, 10);
			if (errno || end == line + 8 || *end)
				return -EINVAL;
			r->has_history = true;
		}
	}
	return 0;
}

int fw_fleet_key_ids_layout(char *buf, size_t cap)
{
	return snprintf(buf, cap, "%s/layout", FW_FLEET_IDS);
}

int fw_fleet_key_ids_dc(char *buf, size_t cap, uint32_t datacenter)
{
	return snprintf(buf, cap, "%s/dc/%04u", FW_FLEET_IDS, datacenter);
}

int fw_fleet_dc_format(char *buf, size_t cap, const char *root)
{
	int n = snprintf(buf, cap, "flakewire-root v1\nroot=%s\n", root);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int fw_fleet_dc_parse(const char *buf, int len, char *root, size_t cap)
{
	static const char head[] = "flakewire-root v1\nroot=";
	size_t hl = sizeof(head) - 1;
	if (len < (int)hl + 2 || len > FW_FLEET_REC_MAX || memcmp(buf, head, hl) ||
	    buf[len - 1] != '\n' || (size_t)len - hl - 1 >= cap)
		return -EINVAL;
	memcpy(root, buf + hl, (size_t)len - hl - 1);
	root[(size_t)len - hl - 1] = '\0';
	return strchr(root, '\n') ? -EINVAL : 0;
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

void fw_fleet_census_init(struct fw_fleet_census *c)
{
	memset(c, 0, sizeof(*c));
	c->next_stranded = UINT64_MAX;
}

int fw_fleet_census_add(struct fw_fleet_census *c, const struct fw_fleet_reserve *res, uint32_t w,
			int read_rc, const struct fw_fleet_rec *rec, uint64_t now_l,
			fw_fleet_alive_fn alive_of, void *arg)
{
	if (fw_fleet_reserved(res, w)) { /* static nodes': never claimed, so never counted */
		c->reserved++;
		return 0;
	}
	if (read_rc == -EINVAL) { /* garbled: never claimed, so never free */
		c->total++;
		c->garbled++;
		return 0;
	}
	if (read_rc == -ENOENT || !rec->owner[0] || rec->lease < now_l) {
		c->total++;
		c->free++; /* never claimed, released, or its lease ended */
		return 0;
	}
	bool alive = false;
	int rc = alive_of(arg, rec->owner, &alive);
	if (rc != 0)
		return rc;
	c->total++;
	if (alive) {
		c->held++;
	} else {
		c->stranded++;
		c->next_stranded = FW_MIN(c->next_stranded, rec->lease);
	}
	return 0;
}

int fw_fleet_census_format(char *buf, size_t cap, const struct fw_fleet_census_rec *cr)
{
	const struct fw_fleet_census *c = &cr->c;
	int n = snprintf(buf, cap,
			 "flakewire-census v1\nat=%" PRIu64 "\nby=%s\ntotal=%u\nreserved=%u\n"
			 "free=%u\nheld=%u\nstranded=%u\ngarbled=%u\nnext_stranded=%" PRIu64 "\n",
			 cr->at, cr->by, c->total, c->reserved, c->free, c->held, c->stranded,
			 c->garbled, c->stranded ? c->next_stranded : 0);
	return n < 0 || (size_t)n >= cap || !fw_fleet_identity_ok(cr->by) ? -ENOSPC : n;
}

int fw_fleet_census_parse(const char *buf, int len, struct fw_fleet_census_rec *cr)
{
	static const char *const num[] = {"at",   "total",    "reserved", "free",
					  "held", "stranded", "garbled",  "next_stranded"};
	char text[FW_FLEET_REC_MAX + 1], *save = NULL;
	uint64_t v[FW_ARRAY_SIZE(num)] = {0};
	unsigned seen = 0;
	if (len < 0 || len > FW_FLEET_REC_MAX)
		return -EINVAL;
	memcpy(text, buf, (size_t)len);
	text[len] = '\0';
	memset(cr, 0, sizeof(*cr));
	char *line = strtok_r(text, "\n", &save);
	if (line == NULL || strcmp(line, "flakewire-census v1"))
		return -EINVAL;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		char *eq = strchr(line, '='), *end;
		if (eq == NULL)
			return -EINVAL;
		*eq = '\0';
		const char *val = eq + 1;
		if (!strcmp(line, "by")) {
			if (!fw_fleet_identity_ok(val))
				return -EINVAL;
			strcpy(cr->by, val);
			seen |= 1u << FW_ARRAY_SIZE(num);
			continue;
		}
		for (size_t i = 0; i < FW_ARRAY_SIZE(num); i++) {
			if (strcmp(line, num[i]))
				continue;
			errno = 0;
			unsigned long long x = strtoull(val, &end, 10);
			if (errno || end == val || *end || *val == '-' ||
			    (i > 0 && i < 7 && x > UINT32_MAX))
				return -EINVAL;
			v[i] = x;
			seen |= 1u << i;
		}
	}
	if (seen != (1u << (FW_ARRAY_SIZE(num) + 1)) - 1)
		return -EINVAL;
	struct fw_fleet_census *c = &cr->c;
	cr->at = v[0];
	c->total = (uint32_t)v[1];
	c->reserved = (uint32_t)v[2];
	c->free = (uint32_t)v[3];
	c->held = (uint32_t)v[4];
	c->stranded = (uint32_t)v[5];
	c->garbled = (uint32_t)v[6];
	c->next_stranded = c->stranded ? v[7] : 0;
	/* the four kinds are every counted ID, once */
	if ((uint64_t)c->free + c->held + c->stranded + c->garbled != c->total ||
	    (c->stranded && !c->next_stranded))
		return -EINVAL;
	return 0;
}

int fw_fleet_names_add(void *arg, const char *identity)
{
	struct fw_fleet_names *n = arg;
	if (strlen(identity) >= FW_FLEET_IDENTITY_MAX)
		return 0;
	if (n->n == n->cap) {
		uint32_t cap = n->cap ? 2 * n->cap : 64;
		void *v = realloc(n->v, (size_t)cap * sizeof(*n->v));
		if (v == NULL)
			return -ENOMEM;
		n->v = v;
		n->cap = cap;
	}
	strcpy(n->v[n->n++], identity);
	n->sorted = false;
	return 0;
}

static int names_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

bool fw_fleet_names_has(struct fw_fleet_names *n, const char *identity)
{
	if (n->n == 0)
		return false;
	if (!n->sorted) {
		qsort(n->v, n->n, sizeof(*n->v), names_cmp);
		n->sorted = true;
	}
	return bsearch(identity, n->v, n->n, sizeof(*n->v), names_cmp) != NULL;
}

void fw_fleet_names_free(struct fw_fleet_names *n)
{
	free(n->v);
	*n = (struct fw_fleet_names){0};
}

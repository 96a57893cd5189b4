/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp: the --vdev string of DPDK's net_af_xdp PMD, built and parsed
 * (fw_xdp.h). Plain C: no libbpf, no DPDK, no kernel; its own library
 * (fw_xdp_devargs) built in every tree, tested by tests/unit/test_xdp_devargs.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_xdp.h"

FW_API void fw_xdp_devargs_init(struct fw_xdp_devargs *a)
{
	if (!a)
		return;
	memset(a, 0, sizeof(*a));
	a->queue_count = 1;
	a->busy_budget = -1;
}

#define FW_PMD_PREFIX "net_af_xdp"

static bool fw_devarg_value_ok(const char *s)
{
	return strpbrk(s, ",=") == NULL;
}

FW_API int fw_xdp_devargs_build(char *buf, size_t len, const struct fw_xdp_devargs *a)
{
	const char *name;
	size_t off = 0;
	int n;

	if (!buf || !a)
		return -EINVAL;
	if (len > 0)
		buf[0] = '\0';
	name = a->name[0] ? a->name : FW_PMD_PREFIX "0";
	if (strncmp(name, FW_PMD_PREFIX, strlen(FW_PMD_PREFIX)) != 0 || !a->iface[0] ||
	    a->queue_count == 0 || !fw_devarg_value_ok(name) || !fw_devarg_value_ok(a->iface) ||
	    !fw_devarg_value_ok(a->xdp_prog))
		return -EINVAL;

/* Appends one formatted piece; a truncated string is never returned. */
#define FW_APPEND(...)                                                           \
	do {                                                                     \
		n = snprintf(buf + off, len > off ? len - off : 0, __VA_ARGS__); \
		if (n < 0)                                                       \
			return -EINVAL;                                          \
		off += (size_t)n;                                                \
	} while (0)

	FW_APPEND("%s,iface=%s,start_queue=%u,queue_count=%u", name, a->iface, a->start_queue,
		  a->queue_count);
	if (a->shared_umem)
		FW_APPEND(",shared_umem=1");
	if (a->xdp_prog[0])
		FW_APPEND(",xdp_prog=%s", a->xdp_prog);
	if (a->busy_budget >= 0)
		FW_APPEND(",busy_budget=%d", a->busy_budget);
	if (a->force_copy)
		FW_APPEND(",force_copy=1");
#undef FW_APPEND
	if (off >= len || off > INT_MAX) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return (int)off;
}

static int fw_parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int fw_parse_copy(char *dst, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return -EINVAL;
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dst, s, n + 1);
	return 0;
}

enum fw_devarg_key {
	FW_KEY_IFACE,
	FW_KEY_START_QUEUE,
	FW_KEY_QUEUE_COUNT,
	FW_KEY_SHARED_UMEM,
	FW_KEY_XDP_PROG,
	FW_KEY_BUSY_BUDGET,
	FW_KEY_FORCE_COPY,
};

static const char *const fw_devarg_keys[] = {
	[FW_KEY_IFACE] = "iface",
	[FW_KEY_START_QUEUE] = "start_queue",
	[FW_KEY_QUEUE_COUNT] = "queue_count",
	[FW_KEY_SHARED_UMEM] = "shared_umem",
	[FW_KEY_XDP_PROG] = "xdp_prog",
	[FW_KEY_BUSY_BUDGET] = "busy_budget",
	[FW_KEY_FORCE_COPY] = "force_copy",
};

static int fw_parse_pair(struct fw_xdp_devargs *a, enum fw_devarg_key k, const char *v)
{
	uint32_t u;
	int err;

	switch (k) {
	case FW_KEY_IFACE:
		return fw_parse_copy(a->iface, sizeof(a->iface), v);
	case FW_KEY_XDP_PROG:
		return fw_parse_copy(a->xdp_prog, sizeof(a->xdp_prog), v);
	case FW_KEY_START_QUEUE:
		return fw_parse_u32(v, UINT32_MAX, &a->start_queue);
	case FW_KEY_QUEUE_COUNT:
		err = fw_parse_u32(v, UINT32_MAX, &a->queue_count);
		return err ? err : a->queue_count ? 0 : -EINVAL;
	case FW_KEY_BUSY_BUDGET:
		err = fw_parse_u32(v, INT32_MAX, &u);
		a->busy_budget = (int32_t)u;
		return err;
	case FW_KEY_SHARED_UMEM:
	case FW_KEY_FORCE_COPY:
		err = fw_parse_u32(v, 1, &u);
		if (k == FW_KEY_SHARED_UMEM)
			a->shared_umem = u;
		else
			a->force_copy = u;
		return err;
	}
	return -EINVAL;
}

FW_API int fw_xdp_devargs_parse(const char *str, struct fw_xdp_devargs *a)
{
	char *copy, *tok, *save = NULL, *eq;
	unsigned int seen = 0;
	int err = 0;

	if (!str || !a)
		return -EINVAL;
	fw_xdp_devargs_init(a);
	copy = strdup(str);
	if (!copy)
		return -ENOMEM;
	tok = strtok_r(copy, ",", &save);
	if (!tok || strncmp(tok, FW_PMD_PREFIX, strlen(FW_PMD_PREFIX)) != 0 || strchr(tok, '=')) {
		err = -EINVAL;
		goto out;
	}
	err = fw_parse_copy(a->name, sizeof(a->name), tok);
	while (err == 0 && (tok = strtok_r(NULL, ",", &save)) != NULL) {
		size_t k;

		eq = strchr(tok, '=');
		if (!eq) {
			err = -EINVAL;
			break;
		}
		*eq = '\0';
		for (k = 0; k < FW_ARRAY_SIZE(fw_devarg_keys); k++)
			if (strcmp(tok, fw_devarg_keys[k]) == 0)
				break;
		if (k == FW_ARRAY_SIZE(fw_devarg_keys) || (seen & (1u << k))) {
			err = -EINVAL;
			break;
		}
		seen |= 1u << k;
		err = fw_parse_pair(a, (enum fw_devarg_key)k, eq + 1);
	}
	if (err == 0 && !(seen & (1u << FW_KEY_IFACE)))
		err = -EINVAL;
out:
	free(copy);
	return err;
}

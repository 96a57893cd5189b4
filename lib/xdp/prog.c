/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp: the programs attached to an interface. Scans them (netlink query,
 * then the programs behind a libxdp dispatcher), recognises flakewire's,
 * reads and writes its configuration map and detaches it (fw_xdp.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "fw_xdp.h"
#include "xdp_sys.h"

#define FW_XDP_DISPATCHER_NAME "xdp_dispatcher"
#define FW_XDP_MAX_MAPS        32

/* One program found on the interface. */
struct fw_prog {
	uint32_t id;
	char name[FW_XDP_NAME_MAX];
	bool ours;
	int cfg_fd;
	int stats_fd;
};

/* libbpf/libxdp print callbacks in force before a library call. */
struct fw_quiet {
	libbpf_print_fn_t bpf;
	libxdp_print_fn_t xdp;
};

static int fw_silent_bpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int fw_silent_xdp(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static void fw_quiet_begin(struct fw_quiet *q)
{
	q->bpf = libbpf_set_print(fw_silent_bpf);
	q->xdp = libxdp_set_print(fw_silent_xdp);
}

static void fw_quiet_end(const struct fw_quiet *q)
{
	libbpf_set_print(q->bpf);
	libxdp_set_print(q->xdp);
}

static void fw_prog_release(struct fw_prog *p)
{
	if (p->cfg_fd >= 0)
		close(p->cfg_fd);
	if (p->stats_fd >= 0)
		close(p->stats_fd);
	p->cfg_fd = -1;
	p->stats_fd = -1;
}

/* Keeps an fd of @map_id in *@slot if the map is named @want; returns whether it did. */
static bool fw_map_match(uint32_t map_id, const char *want, int *slot)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);
	int fd;

	if (*slot >= 0)
		return false;
	fd = bpf_map_get_fd_by_id(map_id);
	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && strcmp(info.name, want) == 0) {
		*slot = fd;
		return true;
	}
	close(fd);
	return false;
}

/* Reads name and maps of program @id; keeps fds of our maps open when it is ours. */
static int fw_prog_inspect(uint32_t id, struct fw_prog *p)
{
	uint32_t map_ids[FW_XDP_MAX_MAPS];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info), n;
	int fd, err = 0;

	memset(p, 0, sizeof(*p));
	p->id = id;
	p->cfg_fd = -1;
	p->stats_fd = -1;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return fw_xdp_neg_errno();
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = FW_ARRAY_SIZE(map_ids);
	info.map_ids = (uint64_t)(uintptr_t)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0) {
		err = fw_xdp_neg_errno();
		goto out;
	}
	memcpy(p->name, info.name, sizeof(p->name));
	p->name[sizeof(p->name) - 1] = '\0';
	if (strcmp(p->name, FW_XDP_PROG_NAME) != 0)
		goto out;
	n = FW_MIN(info.nr_map_ids, (uint32_t)FW_ARRAY_SIZE(map_ids));
	for (uint32_t i = 0; i < n; i++)
		if (!fw_map_match(map_ids[i], FW_XDP_CFG_MAP, &p->cfg_fd))
			fw_map_match(map_ids[i], FW_XDP_STATS_MAP, &p->stats_fd);
	p->ours = p->cfg_fd >= 0;
	if (!p->ours)
		fw_prog_release(p);
out:
	close(fd);
	return err;
}

static void fw_read_own(struct fw_xdp_info *info, const struct fw_prog *p)
{
	struct fw_xdp_cfg cfg;
	uint32_t key = 0;
	uint64_t *vals;
	int ncpu;

	if (bpf_map_lookup_elem(p->cfg_fd, &key, &cfg) == 0) {
		info->port = cfg.port;
		info->cfg = cfg;
	}
	if (p->stats_fd < 0)
		return;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return;
	for (key = 0; key < FW_XDP_STAT_MAX; key++) {
		if (bpf_map_lookup_elem(p->stats_fd, &key, vals) < 0)
			goto out;
		info->counters[key] = 0;
		for (int c = 0; c < ncpu; c++)
			info->counters[key] += vals[c];
	}
	info->has_counters = true;
out:
	free(vals);
}

/*
 * Records program @p in @info. The fd of the first own program's config map
 * is handed to *@cfg_fd when the caller asks for it.
 */
static void fw_account(struct fw_xdp_info *info, struct fw_prog *p, int *cfg_fd)
{
	info->n_progs++;
	if (p->ours && !info->ours) {
		info->ours = true;
		info->own_prog_id = p->id;
		fw_read_own(info, p);
		if (cfg_fd) {
			*cfg_fd = p->cfg_fd;
			p->cfg_fd = -1;
		}
	} else if (!p->ours && !info->foreign) {
		info->foreign = true;
		info->foreign_id = p->id;
		memcpy(info->foreign_name, p->name, sizeof(info->foreign_name));
	}
	fw_prog_release(p);
}

/* Programs behind a libxdp dispatcher (needs the dispatcher's bpffs state). */
static int fw_scan_dispatcher(int ifindex, struct fw_xdp_info *info, int *cfg_fd)
{
	struct xdp_multiprog *mp;
	struct xdp_program *prog;
	struct fw_prog p;
	int err;

	mp = xdp_multiprog__get_from_ifindex(ifindex);
	err = (int)libxdp_get_error(mp);
	if (err)
		return err < 0 ? err : -EIO;
	for (prog = xdp_multiprog__next_prog(NULL, mp); prog;
	     prog = xdp_multiprog__next_prog(prog, mp)) {
		if (fw_prog_inspect(xdp_program__id(prog), &p) == 0)
			fw_account(info, &p, cfg_fd);
	}
	xdp_multiprog__close(mp);
	return 0;
}

static enum fw_xdp_mode fw_mode_from_kernel(uint8_t attach_mode)
{
	switch (attach_mode) {
	case XDP_ATTACHED_DRV:
		return FW_XDP_MODE_DRV;
	case XDP_ATTACHED_SKB:
		return FW_XDP_MODE_SKB;
	case XDP_ATTACHED_HW:
		return FW_XDP_MODE_HW;
	case XDP_ATTACHED_MULTI:
		return FW_XDP_MODE_MULTI;
	default:
		return FW_XDP_MODE_NONE;
	}
}

static int fw_scan(const char *ifname, struct fw_xdp_info *info, int *cfg_fd)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	uint32_t ids[3];
	struct fw_prog p;
	int ifindex, err;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	ifindex = fw_xdp_ifindex(ifname);
	if (ifindex < 0)
		return ifindex;
	info->ifindex = ifindex;
	err = bpf_xdp_query(ifindex, 0, &q);
	if (err < 0)
		return err;
	info->mode = fw_mode_from_kernel(q.attach_mode);
	if (info->mode == FW_XDP_MODE_NONE)
		return 0;
	ids[0] = q.drv_prog_id;
	ids[1] = q.skb_prog_id;
	ids[2] = q.hw_prog_id;
	info->prog_id = q.prog_id;
	for (size_t i = 0; i < FW_ARRAY_SIZE(ids); i++) {
		if (ids[i] == 0)
			continue;
		if (info->prog_id == 0)
			info->prog_id = ids[i];
		err = fw_prog_inspect(ids[i], &p);
		if (err < 0)
			return err;
		if (ids[i] == info->prog_id)
			memcpy(info->prog_name, p.name, sizeof(info->prog_name));
		if (strcmp(p.name, FW_XDP_DISPATCHER_NAME) != 0) {
			fw_account(info, &p, cfg_fd);
			continue;
		}
		info->dispatcher = true;
		/*
		 * Without the dispatcher's state (bpffs) its programs are
		 * unknown: count the dispatcher itself as foreign, so that
		 * nothing is detached blindly.
		 */
		if (fw_scan_dispatcher(ifindex, info, cfg_fd) < 0)
			fw_account(info, &p, cfg_fd);
	}
	return 0;
}

FW_API int fw_xdp_status(const char *ifname, struct fw_xdp_info *info)
{
	struct fw_quiet q;
	int err;

	fw_quiet_begin(&q);
	err = fw_scan(ifname, info, NULL);
	fw_quiet_end(&q);
	return err;
}

/* Read-modify-write of the configuration of flakewire's program on @ifname. */
static int fw_cfg_update(const char *ifname, int (*edit)(struct fw_xdp_cfg *, const void *),
			 const void *arg)
{
	struct fw_xdp_cfg cfg;
	struct fw_xdp_info info;
	struct fw_quiet q;
	uint32_t key = 0;
	int cfg_fd = -1, err;

	fw_quiet_begin(&q);
	err = fw_scan(ifname, &info, &cfg_fd);
	if (err < 0)
		goto out;
	if (info.mode == FW_XDP_MODE_NONE) {
		err = -ENOENT;
		goto out;
	}
	if (!info.ours) {
		err = FW_XDP_EFOREIGN;
		goto out;
	}
	memset(&cfg, 0, sizeof(cfg));
	if (bpf_map_lookup_elem(cfg_fd, &key, &cfg) < 0) {
		err = fw_xdp_neg_errno();
		goto out;
	}
	err = edit(&cfg, arg);
	if (err == 0 && bpf_map_update_elem(cfg_fd, &key, &cfg, BPF_ANY) < 0)
		err = fw_xdp_neg_errno();
out:
	if (cfg_fd >= 0)
		close(cfg_fd);
	fw_quiet_end(&q);
	return err;
}

static int fw_edit_port(struct fw_xdp_cfg *cfg, const void *arg)
{
	cfg->port = *(const uint16_t *)arg;
	return 0;
}

FW_API int fw_xdp_set_port(const char *ifname, uint16_t port)
{
	return fw_cfg_update(ifname, fw_edit_port, &port);
}

struct fw_addrs_arg {
	uint32_t addr4;
	const uint8_t (*addr6)[16];
	uint32_t n6;
};

static int fw_edit_addrs(struct fw_xdp_cfg *cfg, const void *arg)
{
	const struct fw_addrs_arg *a = arg;

	cfg->flags |= FW_XDP_CFG_F_ADDRS;
	cfg->addr4 = a->addr4;
	cfg->n_addr6 = (uint16_t)a->n6;
	memset(cfg->addr6, 0, sizeof(cfg->addr6));
	if (a->n6)
		memcpy(cfg->addr6, a->addr6, a->n6 * 16);
	return 0;
}

FW_API int fw_xdp_set_addrs(const char *ifname, uint32_t addr4, const uint8_t (*addr6)[16],
			    uint32_t n6)
{
	struct fw_addrs_arg a = {.addr4 = addr4, .addr6 = addr6, .n6 = n6};

	if (n6 > FW_XDP_ADDR6_MAX || (n6 && !addr6))
		return -EINVAL;
	return fw_cfg_update(ifname, fw_edit_addrs, &a);
}

/* Removes program @id from each mode slot it occupies, only if it is still there. */
static int fw_detach_direct(int ifindex, uint32_t id)
{
	static const uint32_t mode_flags[] = {XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE,
					      XDP_FLAGS_HW_MODE};
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_xdp_attach_opts, a);
	uint32_t ids[3];
	int fd, err;

	err = bpf_xdp_query(ifindex, 0, &q);
	if (err < 0)
		return err;
	ids[0] = q.drv_prog_id;
	ids[1] = q.skb_prog_id;
	ids[2] = q.hw_prog_id;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return fw_xdp_neg_errno();
	/* old_prog_fd makes the kernel detach only if our program is still the one attached. */
	a.old_prog_fd = fd;
	for (size_t i = 0; i < FW_ARRAY_SIZE(ids) && err == 0; i++)
		if (ids[i] == id)
			err = bpf_xdp_detach(ifindex, mode_flags[i], &a);
	close(fd);
	return err;
}

static int fw_detach_dispatched(int ifindex, uint32_t id)
{
	struct xdp_program *prog, *own = NULL;
	struct xdp_multiprog *mp;
	int others = 0, err;

	mp = xdp_multiprog__get_from_ifindex(ifindex);
	err = (int)libxdp_get_error(mp);
	if (err)
		return err < 0 ? err : -EIO;
	for (prog = xdp_multiprog__next_prog(NULL, mp); prog;
	     prog = xdp_multiprog__next_prog(prog, mp)) {
		if (xdp_program__id(prog) == id)
			own = prog;
		else
			others++;
	}
	if (!own)
		err = -ENOENT;
	else if (others == 0)
		err = xdp_multiprog__detach(mp);
	else
		err = xdp_program__detach(own, ifindex, xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	return err;
}

FW_API int fw_xdp_detach_own(const char *ifname)
{
	struct fw_xdp_info info;
	struct fw_quiet q;
	int err;

	fw_quiet_begin(&q);
	err = fw_scan(ifname, &info, NULL);
	if (err < 0)
		goto out;
	if (info.mode == FW_XDP_MODE_NONE)
		err = -ENOENT;
	else if (!info.ours)
		err = FW_XDP_EFOREIGN;
	else if (info.dispatcher)
		err = fw_detach_dispatched(info.ifindex, info.own_prog_id);
	else
		err = fw_detach_direct(info.ifindex, info.own_prog_id);
	/* Keep FW_XDP_EFOREIGN unambiguous: a busy kernel is not a foreign program. */
	if (err == FW_XDP_EFOREIGN && info.ours)
		err = -EAGAIN;
out:
	fw_quiet_end(&q);
	return err;
}

FW_API const char *fw_xdp_mode_name(enum fw_xdp_mode mode)
{
	static const char *const names[] = {
		[FW_XDP_MODE_NONE] = "none",   [FW_XDP_MODE_SKB] = "skb",
		[FW_XDP_MODE_DRV] = "drv",     [FW_XDP_MODE_HW] = "hw",
		[FW_XDP_MODE_MULTI] = "multi",
	};

	if ((unsigned int)mode < FW_ARRAY_SIZE(names))
		return names[mode];
	return "?";
}

FW_API const char *fw_xdp_stat_name(unsigned int stat)
{
	static const char *const names[FW_XDP_STAT_MAX] = {
		[FW_XDP_STAT_REDIRECT] = "redirect",
		[FW_XDP_STAT_NO_XSK] = "no_xsk",
		[FW_XDP_STAT_NOT_IP] = "not_ip",
		[FW_XDP_STAT_NOT_UDP] = "not_udp",
		[FW_XDP_STAT_FRAGMENT] = "fragment",
		[FW_XDP_STAT_OTHER_PORT] = "other_port",
		[FW_XDP_STAT_MALFORMED] = "malformed",
		[FW_XDP_STAT_UNCONF] = "unconfigured",
		[FW_XDP_STAT_IP_OPTIONS] = "ip_options",
		[FW_XDP_STAT_NOT_OURS] = "not_ours",
		[FW_XDP_STAT_IPV6_EXT] = "ipv6_ext",
		[FW_XDP_STAT_MARTIAN_LOOPBACK] = "martian_loopback",
		[FW_XDP_STAT_MARTIAN_UNSPECIFIED] = "martian_unspecified",
		[FW_XDP_STAT_MARTIAN_MULTICAST] = "martian_multicast",
		[FW_XDP_STAT_MARTIAN_BROADCAST] = "martian_broadcast",
		[FW_XDP_STAT_MARTIAN_SELF] = "martian_self",
		[FW_XDP_STAT_MARTIAN_MAC] = "martian_mac",
	};

	return stat < FW_XDP_STAT_MAX ? names[stat] : "?";
}

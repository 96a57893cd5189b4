/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP ports: a kernel interface shared with the kernel through DPDK's
 * net_af_xdp PMD. flakewire's XDP program steers only [net] udp_port to the
 * AF_XDP sockets; ARP, ICMP and everything else stay with the kernel, which
 * owns the interface's MAC and IPv4 address (flakewire answers with them).
 *
 * The checks run before the probe, after EAL init, because queue_count is
 * the number of worker lcores, which EAL decides.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "log.h"
#include "port.h"
#include "fw_err.h"
#include "fw_xdp.h"

/* Set by meson: the object in the build tree, where `ninja install` puts it, the app's build dir.
 */
#ifndef FW_XDP_OBJ_BUILD
#define FW_XDP_OBJ_BUILD ""
#endif
#ifndef FW_XDP_OBJ_INSTALLED
#define FW_XDP_OBJ_INSTALLED "/usr/local/lib/bpf/flakewire.bpf.o"
#endif
#ifndef FW_APP_BUILD_DIR
#define FW_APP_BUILD_DIR ""
#endif

#define AF_XDP_PREFIX     "net_af_xdp"
#define FW_AFXDP_LOCK_DIR "/run/flakewire"

bool fwire_afxdp_wanted(const struct fw_conf_port *pc)
{
	return pc->mode == FW_CONF_PORT_AF_XDP ||
	       !strncmp(pc->device, AF_XDP_PREFIX, strlen(AF_XDP_PREFIX));
}

/* The build tree's object when this binary is the build tree's, the installed one otherwise. */
static const char *default_prog(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0 && FW_APP_BUILD_DIR[0] && FW_XDP_OBJ_BUILD[0]) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if (!strcmp(exe, FW_APP_BUILD_DIR))
				return FW_XDP_OBJ_BUILD;
		}
	}
	return FW_XDP_OBJ_INSTALLED;
}

static int check_bpffs(uint32_t idx)
{
	int rc = fw_xdp_bpffs_check(NULL);

	if (!rc)
		return 0;
	rc = fw_xdp_bpffs_mount(NULL);
	if (!rc) {
		FW_LOG(INFO, "port%u: mounted bpffs at %s", idx, FW_XDP_BPFFS);
		return 0;
	}
	/* Not fatal: the PMD attaches our object directly; only libxdp's dispatcher needs it. */
	FW_LOG(WARNING,
	       "port%u: no bpffs at %s and mounting one failed (%s); libxdp cannot share the "
	       "interface with other XDP programs. Mount it with: mount -t bpf bpf %s",
	       idx, FW_XDP_BPFFS, fw_strerror(rc), FW_XDP_BPFFS);
	return 0;
}

/*
 * A lock per (network namespace, interface), held while a flakewire serves it:
 * our program on the interface is stale only when nobody holds the lock. The
 * kernel releases it when the holder dies, kill -9 included.
 */
static int lock_iface(uint32_t idx, const char *ifname, int ifindex)
{
	char path[128];
	struct stat st;
	int fd;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	if (mkdir(FW_AFXDP_LOCK_DIR, 0755) && errno != EEXIST) {
		FW_LOG(ERR, "port%u: cannot create %s: %s", idx, FW_AFXDP_LOCK_DIR,
		       strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), FW_AFXDP_LOCK_DIR "/xdp-%lu-%d.lock", (unsigned long)st.st_ino,
		 ifindex);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		FW_LOG(ERR, "port%u: cannot open %s: %s", idx, path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		char pid[32] = "?";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 1] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		FW_LOG(ERR, "port%u: another flakewire (pid %s) serves %s (lock %s)", idx, pid,
		       ifname, path);
		close(fd);
		return -1;
	}
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)len, 0) != len)
		FW_LOG(WARNING, "port%u: cannot write the pid into %s", idx, path);
	return fd;
}

/* Removes our program left by a crashed run; refuses anything else attached. */
static int check_stale(uint32_t idx, const char *ifname)
{
	struct fw_xdp_info info;
	int rc = fw_xdp_status(ifname, &info);

	if (rc == -EPERM) {
		FW_LOG(ERR,
		       "port%u: cannot read the XDP programs of %s: run as root (or with "
		       "CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW)",
		       idx, ifname);
		return -1;
	}
	if (rc) {
		FW_LOG(ERR, "port%u: XDP status of %s: %s", idx, ifname, fw_strerror(rc));
		return -1;
	}
	if (info.mode == FW_XDP_MODE_NONE)
		return 0;
	if (info.foreign) {
		FW_LOG(ERR,
		       "port%u: %s already runs XDP program '%s' (id %u, mode %s), not "
		       "flakewire's: "
		       "refusing to replace it. Inspect with `flakectl xdp status %s`; remove it "
		       "(if nothing needs it) with `ip link set dev %s %s off`",
		       idx, ifname, info.foreign_name, info.foreign_id, fw_xdp_mode_name(info.mode),
		       ifname, ifname,
		       info.mode == FW_XDP_MODE_SKB   ? "xdpgeneric"
		       : info.mode == FW_XDP_MODE_HW  ? "xdpoffload"
		       : info.mode == FW_XDP_MODE_DRV ? "xdpdrv"
						      : "xdp");
		return -1;
	}
	if (!info.ours)
		return 0;
	rc = fw_xdp_detach_own(ifname);
	if (rc && rc != -ENOENT) {
		FW_LOG(ERR, "port%u: cannot detach the stale flakewire program (id %u) from %s: %s",
		       idx, info.own_prog_id, ifname, fw_strerror(rc));
		return -1;
	}
	FW_LOG(WARNING,
	       "port%u: removed flakewire's XDP program (id %u, mode %s) left on %s by an earlier "
	       "run that did not exit cleanly",
	       idx, info.own_prog_id, fw_xdp_mode_name(info.mode), ifname);
	return 0;
}

static int check_iface(uint32_t idx, const char *ifname, const struct fw_xdp_devargs *a,
		       struct fw_xdp_ifinfo *in)
{
	char hint[128];
	int rc = fw_xdp_ifinfo(ifname, in);

	if (rc == -ENODEV) {
		FW_LOG(ERR, "port%u: interface %s does not exist (see `ip link show`)", idx,
		       ifname);
		return -1;
	}
	if (rc) {
		FW_LOG(ERR, "port%u: interface %s: %s", idx, ifname, fw_strerror(rc));
		return -1;
	}
	if (!in->up) {
		FW_LOG(ERR, "port%u: interface %s is down: `ip link set dev %s up`", idx, ifname,
		       ifname);
		return -1;
	}
	if (!in->has_mac) {
		FW_LOG(ERR, "port%u: %s is not an Ethernet interface", idx, ifname);
		return -1;
	}
	if (!in->has_ipv4 && in->n_ipv6 == 0) {
		FW_LOG(ERR,
		       "port%u: %s has no IPv4 or IPv6 address; flakewire answers with the "
		       "kernel's: `ip addr add A.B.C.D/N dev %s` or `ip addr add 2001:db8::2/64 "
		       "dev %s`",
		       idx, ifname, ifname, ifname);
		return -1;
	}
	if (fw_xdp_queues_fit(in, a->start_queue, a->queue_count)) {
		rc = fw_xdp_channels_hint(hint, sizeof(hint), ifname, in,
					  a->start_queue + a->queue_count);
		if (rc >= 0)
			FW_LOG(ERR,
			       "port%u: %s has %u receive queue(s); queues %u..%u (start_queue + "
			       "one "
			       "per worker lcore) do not fit. Add queues: `%s`, or use fewer "
			       "lcores",
			       idx, ifname, in->rx_queues, a->start_queue,
			       a->start_queue + a->queue_count - 1, hint);
		else
			FW_LOG(ERR,
			       "port%u: %s has %u receive queue(s), the driver cannot have more; "
			       "queues %u..%u do not fit: use fewer lcores (-l) or a lower "
			       "start_queue",
			       idx, ifname, in->rx_queues, a->start_queue,
			       a->start_queue + a->queue_count - 1);
		return -1;
	}
	return 0;
}

/* The devargs from mode = af_xdp, or from a net_af_xdp device string. */
static int build_args(struct fwire_app *app, uint32_t idx, struct fw_xdp_devargs *a)
{
	const struct fw_conf_port *pc = &app->conf.port[idx];
	int rc;

	fw_xdp_devargs_init(a);
	if (pc->mode == FW_CONF_PORT_AF_XDP) {
		snprintf(a->name, sizeof(a->name), AF_XDP_PREFIX "%u", idx);
		snprintf(a->iface, sizeof(a->iface), "%s", pc->iface);
		a->start_queue = pc->start_queue;
		a->queue_count = app->n_lcores;
		snprintf(a->xdp_prog, sizeof(a->xdp_prog), "%s", pc->xdp_prog);
	} else {
		rc = fw_xdp_devargs_parse(pc->device, a);
		if (rc) {
			FW_LOG(ERR,
			       "port%u: device '%s': %s (keys: iface, start_queue, "
			       "queue_count, xdp_prog, shared_umem, force_copy, busy_budget)",
			       idx, pc->device, fw_strerror(rc));
			return -1;
		}
		if (!strstr(pc->device, "queue_count="))
			a->queue_count = app->n_lcores;
		if (a->queue_count != app->n_lcores) {
			FW_LOG(ERR,
			       "port%u: device '%s': queue_count=%u, but there are %u worker "
			       "lcores (one queue each)",
			       idx, pc->device, a->queue_count, app->n_lcores);
			return -1;
		}
	}
	/* Without our program the PMD's default one would steal every packet of its queues. */
	if (!a->xdp_prog[0])
		snprintf(a->xdp_prog, sizeof(a->xdp_prog), "%s", default_prog());
	if (access(a->xdp_prog, R_OK)) {
		FW_LOG(ERR,
		       "port%u: XDP object %s: %s; build it (ninja) or install it (ninja install), "
		       "or "
		       "set [port%u] xdp_prog",
		       idx, a->xdp_prog, strerror(errno), idx);
		return -1;
	}
	return 0;
}

int fwire_afxdp_prepare(struct fwire_app *app, uint32_t idx, char *devargs, size_t len)
{
	struct fwire_port *p = &app->port[idx];
	struct fw_xdp_devargs a;
	struct fw_xdp_ifinfo in;
	char addr[INET_ADDRSTRLEN];
	int rc;

	if (build_args(app, idx, &a))
		return -1;
	if (check_iface(idx, a.iface, &a, &in) || check_bpffs(idx))
		return -1;
	rc = fw_xdp_devargs_build(devargs, len, &a);
	if (rc < 0) {
		FW_LOG(ERR, "port%u: cannot build the net_af_xdp devargs: %s", idx,
		       fw_strerror(rc));
		return -1;
	}
	p->lock_fd = lock_iface(idx, a.iface, in.ifindex);
	if (p->lock_fd < 0)
		return -1;
	if (check_stale(idx, a.iface)) {
		close(p->lock_fd);
		return -1;
	}
	p->af_xdp = true;
	snprintf(p->iface, sizeof(p->iface), "%s", a.iface);
	p->addr_be = in.has_ipv4 ? in.ipv4.s_addr : 0;
	p->n_addr6 = FW_MIN(in.n_ipv6, (uint32_t)FW_CONF_ADDR6_MAX);
	for (uint32_t i = 0; i < p->n_addr6; i++)
		memcpy(p->addr6[i], &in.ipv6[i], 16);
	memcpy(p->mac.addr_bytes, in.mac, sizeof(p->mac.addr_bytes));
	inet_ntop(AF_INET, &p->addr_be, addr, sizeof(addr));
	FW_LOG(INFO, "port%u: AF_XDP on %s (kernel address %s, %u rx queue(s)): %s", idx, a.iface,
	       addr, in.rx_queues, devargs);
	return 0;
}

int fwire_afxdp_started(struct fwire_app *app, uint32_t idx)
{
	struct fwire_port *p = &app->port[idx];
	uint16_t udp = (uint16_t)app->conf.net.udp_port;
	struct fw_xdp_info info;
	/* the addresses first: steering starts with the port, already filtered */
	int rc = fw_xdp_set_addrs(p->iface, p->addr_be, (const uint8_t(*)[16])p->addr6, p->n_addr6);

	if (!rc)
		rc = fw_xdp_set_port(p->iface, udp);

	if (rc == FW_XDP_EFOREIGN) {
		FW_LOG(ERR, "port%u: the program attached to %s is not flakewire's", idx, p->iface);
		return -1;
	}
	if (rc) {
		FW_LOG(ERR,
		       "port%u: cannot set UDP port %u and addresses in the XDP program on %s: %s",
		       idx, udp, p->iface, fw_strerror(rc));
		return -1;
	}
	rc = fw_xdp_status(p->iface, &info);
	FW_LOG(INFO, "port%u: XDP program id %u (%s mode) on %s steers UDP port %u to DPDK", idx,
	       rc ? 0 : info.own_prog_id, rc ? "?" : fw_xdp_mode_name(info.mode), p->iface, udp);
	return 0;
}

void fwire_afxdp_closed(struct fwire_app *app, uint32_t idx)
{
	struct fwire_port *p = &app->port[idx];
	int rc = fw_xdp_detach_own(p->iface);

	/* The PMD detaches the program it loaded on close; this covers the paths where it did not.
	 */
	if (!rc)
		FW_LOG(INFO, "port%u: detached flakewire's XDP program from %s", idx, p->iface);
	else if (rc == -ENOENT)
		FW_LOG(INFO, "port%u: no XDP program left on %s", idx, p->iface);
	else if (rc == FW_XDP_EFOREIGN)
		FW_LOG(INFO, "port%u: only a foreign XDP program is left on %s", idx, p->iface);
	else
		FW_LOG(WARNING,
		       "port%u: cannot detach flakewire's XDP program from %s: %s; remove it with "
		       "`flakectl xdp detach %s`",
		       idx, p->iface, fw_strerror(rc), p->iface);
	close(p->lock_fd);
	p->af_xdp = false;
}

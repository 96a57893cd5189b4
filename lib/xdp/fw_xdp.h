/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP deployment helpers: inspect and remove flakewire's XDP program,
 * configure it, and the pre-flight checks flakewire runs before it hands an
 * interface to DPDK's net_af_xdp PMD.
 *
 * How the UDP port reaches the program
 * ------------------------------------
 * With `xdp_prog=PATH` the PMD opens and loads flakewire.bpf.o itself, so
 * nothing can be set before load (a `const volatile` global would be frozen
 * at its compiled default). The program therefore reads the port from a
 * 1-entry array map, `fw_cfg` (struct fw_xdp_cfg in fw_xdp_kern_user.h).
 * After the PMD has attached the program, flakewire calls fw_xdp_set_addrs()
 * (the interface's primary IPv4 and its IPv6 addresses: datagrams to any
 * other address are passed to the kernel) and then fw_xdp_set_port():
 * it finds the program attached to the interface (netlink query -> program
 * id, also behind a libxdp dispatcher), checks that it is flakewire's, walks
 * the program's map ids to the map named `fw_cfg` and writes the port.
 * Until then the port is 0 and the program passes every packet to the
 * kernel, so the short window between attach and configuration loses
 * nothing (the kernel answers ID requests with ICMP port unreachable, as it
 * would with no responder). This needs no bpffs pinning, works with any
 * loader (the PMD, `ip link`, libxdp) and with several interfaces at once,
 * each with its own program instance and port.
 *
 * Recognising flakewire's program
 * -------------------------------
 * A program is flakewire's when the kernel's program name is
 * FW_XDP_PROG_NAME ("fw_xdp_redirect") and it uses a map named `fw_cfg`.
 * Anything else is foreign and is never detached by this library.
 *
 * Conventions
 * -----------
 * Functions return 0 or a negative errno value (see each function); the
 * library never prints: while it runs, libbpf's and libxdp's own messages are
 * silenced and the previous print callbacks restored afterwards (so calls
 * must not race with other threads' libbpf use that relies on printing).
 * Inspecting programs and maps needs CAP_SYS_ADMIN (or CAP_BPF +
 * CAP_NET_ADMIN): without it, functions return -EPERM.
 *
 * Manual: doc/afxdp.md.
 */
#pragma once

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_xdp_kern_user.h"

/*
 * Returned by fw_xdp_detach_own() and fw_xdp_set_port() when a program that
 * is not flakewire's is attached: the caller should refuse to go on and
 * report fw_xdp_info.foreign_name / foreign_id.
 */
#define FW_XDP_EFOREIGN (-EBUSY)

/* Size of a kernel program name, NUL included (BPF_OBJ_NAME_LEN). */
#define FW_XDP_NAME_MAX 16

/* Default bpffs mount point. */
#define FW_XDP_BPFFS "/sys/fs/bpf"

/* How the program on an interface is attached. */
enum fw_xdp_mode {
	FW_XDP_MODE_NONE = 0, /* nothing attached */
	FW_XDP_MODE_SKB,      /* generic XDP (xdpgeneric) */
	FW_XDP_MODE_DRV,      /* native, in the driver */
	FW_XDP_MODE_HW,       /* offloaded to the NIC */
	FW_XDP_MODE_MULTI,    /* programs in more than one mode at once */
};

/* What is attached to an interface, filled by fw_xdp_status(). */
struct fw_xdp_info {
	int ifindex;
	enum fw_xdp_mode mode;
	/* The program the interface runs: the dispatcher's when one is in front. */
	uint32_t prog_id;
	char prog_name[FW_XDP_NAME_MAX];
	/* A libxdp dispatcher is attached; n_progs programs run behind it. */
	bool dispatcher;
	/* Programs attached: 1 without a dispatcher; 0 if none or unknown. */
	unsigned int n_progs;
	/* flakewire's program is attached (alone or behind the dispatcher). */
	bool ours;
	uint32_t own_prog_id;
	/* Another program is attached; the first one found is named here. */
	bool foreign;
	uint32_t foreign_id;
	char foreign_name[FW_XDP_NAME_MAX];
	/* Valid when ours: the configured port (0: none) and the counters summed over CPUs. */
	uint16_t port;
	/* Valid when ours: the whole configuration (addresses steered to, flags). */
	struct fw_xdp_cfg cfg;
	bool has_counters;
	uint64_t counters[FW_XDP_STAT_MAX];
};

/*
 * Describes what is attached to @ifname.
 * @info: filled on success (zeroed first).
 * Returns 0 (also when nothing is attached: info->mode is FW_XDP_MODE_NONE),
 * -ENODEV if there is no such interface, -EINVAL if an argument is NULL or
 * the name is too long, -EPERM without the privileges to read programs, or
 * another negative errno from the kernel.
 */
FW_API int fw_xdp_status(const char *ifname, struct fw_xdp_info *info);

/*
 * Removes flakewire's program from @ifname if, and only if, it is attached
 * there: a direct attachment is removed atomically (the detach fails if the
 * program changed meanwhile); behind a libxdp dispatcher only flakewire's
 * program is removed (the whole dispatcher when it was the only one).
 * Returns 0 when flakewire's program was removed, -ENOENT if nothing is
 * attached, FW_XDP_EFOREIGN if only other programs are attached (nothing is
 * removed; fw_xdp_status() says what they are), -ENODEV, -EINVAL, -EPERM, or
 * another negative errno.
 */
FW_API int fw_xdp_detach_own(const char *ifname);

/*
 * Sets the UDP destination port flakewire's program attached to @ifname
 * steers to AF_XDP sockets (host byte order; 0 stops steering); the rest of
 * its configuration (addresses) is kept.
 * Returns 0, -ENOENT if nothing is attached, FW_XDP_EFOREIGN if what is
 * attached is not flakewire's, -ENODEV, -EINVAL, -EPERM, or another negative
 * errno.
 */
FW_API int fw_xdp_set_port(const char *ifname, uint16_t port);

/*
 * Restricts steering by flakewire's program on @ifname to datagrams for
 * the IPv4 address @addr4 (network order; 0: no IPv4 datagram is steered)
 * and the @n6 IPv6 addresses at @addr6 (16 bytes each, network order), so
 * that datagrams to other addresses of the host reach the kernel, as
 * flakewire would not answer them. The port is kept.
 * Returns 0, -EINVAL when n6 > FW_XDP_ADDR6_MAX (or addr6 NULL with n6 > 0),
 * and the errors of fw_xdp_set_port().
 */
FW_API int fw_xdp_set_addrs(const char *ifname, uint32_t addr4, const uint8_t (*addr6)[16],
			    uint32_t n6);

/* Short name of a mode ("none", "skb", "drv", "hw", "multi"); never NULL. */
FW_API const char *fw_xdp_mode_name(enum fw_xdp_mode mode);

/* Short name of a counter ("redirect", "no_xsk", ...); "?" when out of range. */
FW_API const char *fw_xdp_stat_name(unsigned int stat);

/* Interface facts the AF_XDP mode needs, filled by fw_xdp_ifinfo(). */
struct fw_xdp_ifinfo {
	int ifindex;
	bool up;      /* administratively up (IFF_UP) */
	bool running; /* carrier (IFF_RUNNING) */
	bool has_mac; /* an Ethernet interface: mac is valid */
	uint8_t mac[6];
	bool has_ipv4; /* ipv4 is the interface's primary IPv4 address */
	struct in_addr ipv4;
	/* Its IPv6 addresses, global ones first, then link-local (at most FW_XDP_ADDR6_MAX). */
	uint32_t n_ipv6;
	struct in6_addr ipv6[FW_XDP_ADDR6_MAX];
	/*
	 * Channels as `ethtool -l` shows them. When the driver does not
	 * implement them (EOPNOTSUPP), channels_known is false and rx_queues
	 * is 1: the driver has a single queue.
	 */
	bool channels_known;
	uint32_t combined, rx, max_combined, max_rx;
	/* Receive queues AF_XDP sockets can bind to: combined + rx, at least 1. */
	uint32_t rx_queues;
};

/*
 * Reads index, flags, MAC, primary IPv4 address, IPv6 addresses and channel counts of
 * @ifname. A missing address or channel support is reported in the struct,
 * not as an error.
 * Returns 0, -ENODEV if there is no such interface, -EINVAL if an argument is
 * NULL or the name is too long, or another negative errno from the kernel.
 */
FW_API int fw_xdp_ifinfo(const char *ifname, struct fw_xdp_ifinfo *info);

/*
 * Checks that queues [@start, @start + @count) exist on the interface.
 * Returns 0, -EINVAL if @count is 0 or @info is NULL, -ERANGE if they do not
 * fit (fw_xdp_channels_hint() says how to fix it).
 */
FW_API int fw_xdp_queues_fit(const struct fw_xdp_ifinfo *info, uint32_t start, uint32_t count);

/*
 * Writes into @buf the command that gives @ifname at least @needed receive
 * queues, e.g. "ethtool -L eth0 combined 4" (or "... rx 4 tx 4" for drivers
 * with separate channels such as veth), NUL-terminated.
 * Returns the length written, -EINVAL on a NULL argument, -ENOSPC if @len is
 * too small, -EOPNOTSUPP if the driver cannot change its channels (its
 * maximum is below @needed or it has no channel support).
 */
FW_API int fw_xdp_channels_hint(char *buf, size_t len, const char *ifname,
				const struct fw_xdp_ifinfo *info, uint32_t needed);

/*
 * Checks that a bpffs is mounted at @path (NULL: FW_XDP_BPFFS). libxdp needs
 * it for its dispatcher; without it, it falls back to a single program.
 * Returns 0 if mounted, -ENOENT if @path is not a bpffs (or does not exist),
 * or another negative errno from statfs().
 */
FW_API int fw_xdp_bpffs_check(const char *path);

/*
 * Mounts a bpffs at @path (NULL: FW_XDP_BPFFS), as `mount -t bpf bpf PATH`.
 * Returns 0 (also when one is mounted there already), -EPERM without
 * CAP_SYS_ADMIN, or another negative errno from mount().
 */
FW_API int fw_xdp_bpffs_mount(const char *path);

/* Size limits of struct fw_xdp_devargs fields, NUL included. */
#define FW_XDP_DEV_NAME_MAX 64
#define FW_XDP_PATH_MAX     1024

/*
 * Arguments of DPDK 22.11's net_af_xdp virtual device. 22.11 knows iface,
 * start_queue, queue_count, shared_umem, xdp_prog, busy_budget and
 * force_copy (use_cni only exists from 23.03).
 */
struct fw_xdp_devargs {
	char name[FW_XDP_DEV_NAME_MAX]; /* "net_af_xdp<suffix>"; "" means net_af_xdp0 */
	char iface[IF_NAMESIZE];
	uint32_t start_queue;
	uint32_t queue_count;           /* >= 1 */
	char xdp_prog[FW_XDP_PATH_MAX]; /* "" leaves the PMD's default program */
	bool shared_umem;
	bool force_copy;
	int32_t busy_budget; /* < 0: not given (PMD default); 0 disables busy polling */
};

/* Fills @a with the PMD's defaults: start_queue 0, queue_count 1, busy_budget unset. */
FW_API void fw_xdp_devargs_init(struct fw_xdp_devargs *a);

/*
 * Builds the EAL --vdev string, e.g.
 * "net_af_xdp0,iface=eth0,start_queue=0,queue_count=2,xdp_prog=/x/flakewire.bpf.o".
 * Options at their default (shared_umem, force_copy off, busy_budget unset,
 * empty xdp_prog) are left out.
 * Returns the length of the string (NUL not counted), -EINVAL if an argument
 * is NULL, iface is empty, queue_count is 0, the name does not start with
 * "net_af_xdp", or a string holds ',' or '=' (which EAL would split on), or
 * -ENOSPC if @buf is too small (then @buf holds "" when @len > 0).
 */
FW_API int fw_xdp_devargs_build(char *buf, size_t len, const struct fw_xdp_devargs *a);

/*
 * Parses a --vdev string as fw_xdp_devargs_build() writes it, in any key
 * order, into @a (initialised with fw_xdp_devargs_init() first). Used when
 * the operator gives the device string instead of mode = af_xdp.
 * Returns 0, -EINVAL on a NULL argument, a name not starting with
 * "net_af_xdp", an unknown key, a key given twice, a malformed number or a
 * missing iface, or -ENAMETOOLONG if a value does not fit its field.
 */
FW_API int fw_xdp_devargs_parse(const char *str, struct fw_xdp_devargs *a);

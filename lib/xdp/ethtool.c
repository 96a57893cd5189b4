/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp: what the AF_XDP mode needs to know about an interface (flags,
 * MAC, addresses, ethtool channels) and whether its queues fit (fw_xdp.h).
 * No libbpf.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "fw_xdp.h"
#include "xdp_sys.h"

FW_API int fw_xdp_ifinfo(const char *ifname, struct fw_xdp_ifinfo *info)
{
	struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
	struct ifreq ifr;
	int fd, idx, err = 0;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	idx = fw_xdp_ifindex(ifname);
	if (idx < 0)
		return idx;
	info->ifindex = idx;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fw_xdp_neg_errno();

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		err = errno == ENXIO ? -ENODEV : fw_xdp_neg_errno();
		goto out;
	}
	info->up = ifr.ifr_flags & IFF_UP;
	info->running = ifr.ifr_flags & IFF_RUNNING;

	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0 && ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER) {
		info->has_mac = true;
		memcpy(info->mac, ifr.ifr_hwaddr.sa_data, sizeof(info->mac));
	}

	/* SIOCGIFADDR answers with the primary address; EADDRNOTAVAIL means none. */
	ifr.ifr_addr.sa_family = AF_INET;
	if (ioctl(fd, SIOCGIFADDR, &ifr) == 0) {
		struct sockaddr_in sin;

		memcpy(&sin, &ifr.ifr_addr, sizeof(sin));
		info->has_ipv4 = true;
		info->ipv4 = sin.sin_addr;
	}

	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) == 0) {
		for (int pass = 0; pass < 2; pass++)
			for (struct ifaddrs *i = ifa; i && info->n_ipv6 < FW_XDP_ADDR6_MAX;
			     i = i->ifa_next) {
				if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET6 ||
				    strcmp(i->ifa_name, ifname))
					continue;
				const struct in6_addr *a =
					&((const struct sockaddr_in6 *)(const void *)i->ifa_addr)
						 ->sin6_addr;
				if (IN6_IS_ADDR_MULTICAST(a) || IN6_IS_ADDR_LOOPBACK(a) ||
				    IN6_IS_ADDR_LINKLOCAL(a) != (pass == 1))
					continue;
				info->ipv6[info->n_ipv6++] = *a;
			}
		freeifaddrs(ifa);
	}

	ifr.ifr_data = (char *)&ch;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
		info->channels_known = true;
		info->combined = ch.combined_count;
		info->rx = ch.rx_count;
		info->max_combined = ch.max_combined;
		info->max_rx = ch.max_rx;
	} else if (errno != EOPNOTSUPP) {
		err = fw_xdp_neg_errno();
		goto out;
	}
	info->rx_queues = FW_MAX(info->combined + info->rx, 1u);
out:
	close(fd);
	return err;
}

FW_API int fw_xdp_queues_fit(const struct fw_xdp_ifinfo *info, uint32_t start, uint32_t count)
{
	if (!info || count == 0)
		return -EINVAL;
	if (start >= info->rx_queues || count > info->rx_queues - start)
		return -ERANGE;
	return 0;
}

FW_API int fw_xdp_channels_hint(char *buf, size_t len, const char *ifname,
				const struct fw_xdp_ifinfo *info, uint32_t needed)
{
	int n;

	if (!buf || !ifname || !info)
		return -EINVAL;
	if (len > 0)
		buf[0] = '\0';
	if (!info->channels_known)
		return -EOPNOTSUPP;
	/* Keep the drivers' own kind of channel: combined for NICs, rx/tx for veth. */
	if (info->max_combined >= needed)
		n = snprintf(buf, len, "ethtool -L %s combined %u", ifname, needed);
	else if (info->max_combined == 0 && info->max_rx >= needed)
		n = snprintf(buf, len, "ethtool -L %s rx %u", ifname, needed);
	else
		return -EOPNOTSUPP;
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return n;
}

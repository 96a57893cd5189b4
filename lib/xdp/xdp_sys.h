/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp's own helpers shared by its files (prog.c, ethtool.c, bpffs.c);
 * not installed, not part of fw_xdp.h.
 */
#pragma once

#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <string.h>

/*
 * The errno of the call that just failed, negated; never 0 (-EIO when errno
 * is 0), so a failure is never mistaken for success.
 */
static inline int fw_xdp_neg_errno(void)
{
	return errno ? -errno : -EIO;
}

/*
 * The index of interface @ifname.
 * Returns the index (> 0), -EINVAL if @ifname is NULL, empty or too long,
 * -ENODEV if there is no such interface, -ERANGE if the index does not fit
 * an int, or another negative errno from if_nametoindex().
 */
static inline int fw_xdp_ifindex(const char *ifname)
{
	unsigned int idx;

	if (!ifname || !ifname[0] || strlen(ifname) >= IF_NAMESIZE)
		return -EINVAL;
	idx = if_nametoindex(ifname);
	if (idx == 0)
		return errno == ENXIO || errno == ENODEV || errno == 0 ? -ENODEV : -errno;
	if (idx > INT_MAX)
		return -ERANGE;
	return (int)idx;
}

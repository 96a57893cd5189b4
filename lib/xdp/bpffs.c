/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xdp: the bpffs libxdp keeps its dispatcher state in: checked and
 * mounted (fw_xdp.h). No libbpf.
 */
#include <errno.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#include "fw_xdp.h"
#include "xdp_sys.h"

FW_API int fw_xdp_bpffs_check(const char *path)
{
	struct statfs st;

	if (statfs(path ? path : FW_XDP_BPFFS, &st) < 0)
		return errno == ENOENT ? -ENOENT : fw_xdp_neg_errno();
	return st.f_type == BPF_FS_MAGIC ? 0 : -ENOENT;
}

FW_API int fw_xdp_bpffs_mount(const char *path)
{
	const char *p = path ? path : FW_XDP_BPFFS;

	if (fw_xdp_bpffs_check(p) == 0)
		return 0;
	if (mount("bpf", p, "bpf", 0, NULL) < 0)
		return fw_xdp_neg_errno();
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A foreign XDP program for the tests: passes everything, owns no fw_cfg map. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int foreign_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 11, fix 6: every ethdev/EAL call in flakewire's port and main code
# whose result says whether it worked is checked, as DPDK's examples do.
# A call used as a statement (its int result thrown away) fails the test;
# the DPDK functions that return void are listed here as allowed.
#   test_ethdev_checked.sh SRC_ROOT
set -u
src="${1:?usage: $0 SRC_ROOT}"
void_ok='rte_eal_mp_wait_lcore|rte_pktmbuf_free|rte_pktmbuf_free_bulk|rte_free|rte_pause|rte_delay_ms|rte_delay_us_sleep|rte_eth_tx_buffer_init'
bad=0
for f in app/flakewire/port.c app/flakewire/main.c; do
	[ -f "$src/$f" ] || { echo "FAIL $f missing"; exit 1; }
	# a line that starts (after indentation) with a call of rte_eth_* / rte_eal_*
	hits=$(grep -nE '^[[:space:]]*(rte_eth_[a-z0-9_]+|rte_eal_[a-z0-9_]+|rte_dev_[a-z0-9_]+)[[:space:]]*\(' "$src/$f" |
		grep -vE "^[0-9]+:[[:space:]]*($void_ok)[[:space:]]*\(" || true)
	if [ -n "$hits" ]; then
		echo "FAIL $f: return value not checked:"
		echo "$hits" | sed 's/^/       /'
		bad=1
	else
		echo "ok   $f: every ethdev/EAL result checked"
	fi
done
exit $bad

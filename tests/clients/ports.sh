#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Free loopback UDP ports for the client tests (live.sh, consumer.sh), sourced.

# port_busy PORT: something listens on UDP PORT.
port_busy() { ss -Hunl "sport = :$1" 2>/dev/null | grep -q .; }

# free_port: prints a UDP port in 20000-59999 nothing listens on (50 tries).
free_port()
{
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		port_busy "$p" || { echo "$p"; return 0; }
	done
	return 1
}

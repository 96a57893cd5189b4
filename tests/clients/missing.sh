#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stands in for a client test whose toolchain is missing: a skip (77), or a
# failure naming the tool under CI=true.
echo "client tests need $1 (scripts/install-deps.sh installs it)" >&2
[ "${CI:-}" = true ] && exit 1
exit 77

#!/usr/bin/env bash
# An etcd cluster for a test or a script: scripts/lib/servers.sh (etcd_start, etcd_stop_all, ...), which
# starts every server the tests and scripts need. This name stays for the callers
# that still source it here (scripts/try-fleet.sh, tests/system/metrics/test_probes.sh);
# new code sources scripts/lib/servers.sh.
# shellcheck source=../../../scripts/lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/servers.sh"

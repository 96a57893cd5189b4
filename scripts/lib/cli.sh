# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# The command-line helpers the entry points share (sourced, never run). The
# caller sets CLI_NAME, the name its messages start with.
#
#   cli_usage FIRST LAST   prints lines FIRST..LAST of the running script ($0),
#                          its header comment, without the leading '# '
#   die MESSAGE...         "CLI_NAME: MESSAGE" on stderr, then exit 2
#   posint OPTION VALUE    dies unless VALUE is a positive integer, naming
#                          OPTION and VALUE

cli_usage() { sed -n "$1,$2p" "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "${CLI_NAME:-$(basename "$0")}: $*" >&2; exit 2; }
posint() { case "$2" in '' | *[!0-9]* | 0*) die "$1 wants a positive integer, got '$2'" ;; esac; }

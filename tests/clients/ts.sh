#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compiles the TypeScript client (lib/ts) into OUT with its pinned tsc
# (npm ci from package-lock.json the first time), serialised by a lock so
# parallel tests compile once, then runs CMD.
# usage: ts.sh SRC OUT CMD...
set -eu
src=$1 out=$2
shift 2
mkdir -p "$out"
(
	flock 9
	if [ ! -x "$src/node_modules/.bin/tsc" ]; then
		(cd "$src" && npm ci --no-audit --no-fund --loglevel=error) >&2
	fi
	"$src/node_modules/.bin/tsc" -p "$src" --outDir "$out" --incremental \
		--tsBuildInfoFile "$out/tsbuildinfo"
	echo '{"type": "module"}' >"$out/package.json"
) 9>"$out.lock"
exec "$@"

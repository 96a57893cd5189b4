#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compiles the TypeScript client (clients/ts) into OUT with its pinned tsc
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
	stamp=$out/build.stamp
	if [ ! -f "$stamp" ] || [ -n "$(find "$src/src" "$src/test" "$src/examples" \
		"$src/tsconfig.json" -newer "$stamp" | head -n 1)" ]; then
		"$src/node_modules/.bin/tsc" -p "$src" --outDir "$out"
		echo '{"type": "module"}' >"$out/package.json"
		touch "$stamp"
	fi
) 9>"$out.lock"
exec "$@"

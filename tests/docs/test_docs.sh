#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The manual cannot rot:
#  - `mkdocs build --strict` of mkdocs.yml (doc/ as a site): every page in
#    the nav, every link between pages resolves, and (tests/docs/docs_check.py
#    as its hook) every link out of doc/ names a file of the tree and every
#    #anchor a heading of its target;
#  - the same link and anchor rules for README.md, which is not in the site;
#  - every runbook_url of the alert rules lands on a heading of doc/runbook.md,
#    and every doc/PAGE.md#anchor named in a header or script resolves;
#  - every flakectl, flakesock and flakewire option and config key that
#    README.md and doc/ name in code exists in the programs' --help;
#  - every ```ini block passes flakewire --check-config, every ```c block
#    compiles against the headers of lib/ (cc -fsyntax-only), every shown
#    `$ flakectl decode ID` prints what the page shows, and every metric
#    name of doc/metrics.md and doc/runbook.md is exported;
#  - README.md stays a page (at most 150 lines), and no page reads as a log
#    of runs (a run's date or time, a commit hash, a numbered pass).
set -u
SRC=${FW_SRC:?}
TMP=$(mktemp -d /tmp/fw-docs.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PY=/usr/bin/python3 # Debian's: mkdocs and python3-markdown
command -v mkdocs >/dev/null || fail "mkdocs missing (Debian package mkdocs)"
CHECK=$SRC/tests/docs/docs_check.py

mkdocs build --strict -f "$SRC/mkdocs.yml" -d "$TMP/site" ||
	fail "mkdocs build --strict (the WARNINGs above)"
[ -f "$TMP/site/index.html" ] && [ -f "$TMP/site/runbook.html" ] ||
	fail "mkdocs wrote no site"
echo "mkdocs build --strict: $(find "$SRC/doc" -name '*.md' | wc -l) pages"

"$PY" "$CHECK" links "$SRC" "$SRC/README.md" || fail "README.md links"
"$PY" "$CHECK" runbook "$SRC" "$SRC/config/prometheus/flakewire-alerts.yml" ||
	fail "runbook_url"
"$PY" "$CHECK" pointers "$SRC" || fail "pointers from the sources into doc/"

# the programs' own --help, one file per program and flakectl command
mkdir "$TMP/help"
"${FLAKEWIRE:?}" --help >"$TMP/help/flakewire" 2>&1 || fail "flakewire --help"
"${FLAKESOCK:?}" --help >"$TMP/help/flakesock" 2>&1 || fail "flakesock --help"
"${FLAKECTL:?}" --help >"$TMP/help/flakectl" 2>&1 || fail "flakectl --help"
for c in $(sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' "$TMP/help/flakectl"); do
	"$FLAKECTL" "$c" --help >"$TMP/help/flakectl_$c" 2>&1 || fail "flakectl $c --help"
done
[ -s "$TMP/help/flakectl_get" ] || fail "no flakectl commands read from flakectl --help"
mapfile -t pages < <(find "$SRC/doc" -name '*.md' | sort)
"$PY" "$CHECK" names "$SRC" "$TMP/help" "$SRC/README.md" "${pages[@]}" ||
	fail "options or config keys named in the docs"
"$PY" "$CHECK" dated "$SRC" "$SRC/README.md" "${pages[@]}" || fail "the docs read as a log of runs"
n=$(wc -l <"$SRC/README.md")
[ "$n" -le 150 ] || fail "README.md has $n lines: it is a page (at most 150), the manual is doc/"
"$PY" "$CHECK" examples "$SRC" "$FLAKECTL" "$FLAKEWIRE" "$SRC/README.md" "${pages[@]}" ||
	fail "examples, config blocks or metric names in the docs"
echo PASS

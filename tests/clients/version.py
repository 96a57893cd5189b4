#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The clients' package metadata carries meson.build's project() version.

usage: version.py check|write VERSION CLIENTS_DIR

The version is defined once, in meson.build; this writes it into
ts/package.json, ts/package-lock.json, java/pom.xml, python/pyproject.toml, the Python package's __version__
and rust/Cargo.toml
(`ninja -C build update-client-versions`), or checks that they agree with it
(test `client-versions`), naming each file that does not. Go modules take
their version from the repository's tags, so clients/go has none.
"""
import re
import sys

# (file, pattern whose group 2 is the version); every match must agree.
FIELDS = [
    ("ts/package.json", r'(\A\{\s*"name": "flakewire",\s*"version": ")([^"]*)(")'),
    ("ts/package-lock.json", r'(\A\{\s*"name": "flakewire",\s*"version": ")([^"]*)(")'),
    ("ts/package-lock.json", r'("packages": \{\s*"": \{\s*"name": "flakewire",\s*"version": ")([^"]*)(")'),
    ("java/pom.xml", r'(<artifactId>flakewire-client</artifactId>\s*<version>)([^<]*)(</version>)'),
    ("python/pyproject.toml", r'(\[project\]\nname = "flakewire"\nversion = ")([^"]*)(")'),
    ("python/src/flakewire/__init__.py", r'(__version__ = ")([^"]*)(")'),
    ("rust/Cargo.toml", r'(\[package\]\nname = "flakewire"\nversion = ")([^"]*)(")'),
]


def main(argv):
    if len(argv) != 4 or argv[1] not in ("check", "write"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    mode, version, root = argv[1:]
    bad = 0
    for name, pat in FIELDS:
        path = f"{root}/{name}"
        with open(path, encoding="utf-8") as f:
            text = f.read()
        m = re.search(pat, text)
        if not m:
            print(f"{path}: no version field matching {pat!r}", file=sys.stderr)
            bad += 1
            continue
        if m.group(2) == version:
            continue
        if mode == "check":
            print(f"{path}: version {m.group(2)!r}, meson.build says {version!r} "
                  "(ninja -C build update-client-versions)", file=sys.stderr)
            bad += 1
            continue
        text = text[:m.start(2)] + version + text[m.end(2):]
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{path}: {m.group(2)} -> {version}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

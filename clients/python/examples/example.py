#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prints a few IDs from flakewire responders and takes the first apart.
usage: example.py [SERVER...]   (default 127.0.0.1:4242)"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

import flakewire  # noqa: E402


def main() -> int:
    servers = sys.argv[1:] or ["127.0.0.1:4242"]
    try:
        with flakewire.Client(servers) as c:
            ids = [c.next() for _ in range(5)]
            p = c.layout.decode(ids[0]) if c.layout else flakewire.decode(ids[0])
            print(*ids, sep="\n")
            print(f"first: unix_ms {p.unix_ms} datacenter {p.datacenter} worker {p.worker} "
                  f"sequence {p.sequence}")
    except (flakewire.FlakewireError, ValueError) as e:
        print(f"example: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

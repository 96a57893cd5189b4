#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks over files of decimal IDs (one per line) for the fault tests.

The default layout is assumed (epoch 2026-01-01, 10 worker and 12 sequence
bits, no datacenter bits) unless --epoch/--shift say otherwise.

  faultcheck.py span FILE...            min_ms max_ms count (unix ms of the IDs)
  faultcheck.py maxgap FILE             largest gap in ms between IDs' times
  faultcheck.py count-above MS FILE...  IDs whose time is above MS
  faultcheck.py none-at-or-below MS FILE...  exit 1 if an ID's time is <= MS
  faultcheck.py rounds FILE...          each file's IDs all above every earlier
                                        file's; no duplicate anywhere
  faultcheck.py unique FILE...          no ID twice across all files
  faultcheck.py workers FILE...         per worker: increasing in file order
Exit status 0 when the check holds, 1 otherwise (with a line on stderr).
"""
import argparse
import sys


def ids(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield int(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("args", nargs="+")
    ap.add_argument("--epoch", type=int, default=1767225600000)
    ap.add_argument("--shift", type=int, default=22)
    ap.add_argument("--worker-shift", type=int, default=12)
    ap.add_argument("--worker-mask", type=int, default=1023)
    a = ap.parse_args()
    ms = lambda x: (x >> a.shift) + a.epoch

    if a.cmd == "span":
        lo = hi = None
        n = 0
        for p in a.args:
            for x in ids(p):
                lo = x if lo is None or x < lo else lo
                hi = x if hi is None or x > hi else hi
                n += 1
        if n == 0:
            print("no IDs", file=sys.stderr)
            return 1
        print(ms(lo), ms(hi), n)
        return 0
    if a.cmd == "maxgap":
        t = sorted({ms(x) for x in ids(a.args[0])})
        if not t:
            print("no IDs", file=sys.stderr)
            return 1
        g = max((b - c for c, b in zip(t, t[1:])), default=0)
        print(g)
        return 0
    if a.cmd in ("count-above", "none-at-or-below"):
        limit = int(a.args[0])
        above = below = 0
        for p in a.args[1:]:
            for x in ids(p):
                if ms(x) > limit:
                    above += 1
                else:
                    below += 1
        if a.cmd == "count-above":
            print(above)
            return 0
        if below:
            print("%d ID(s) at or below %d" % (below, limit), file=sys.stderr)
            return 1
        return 0
    if a.cmd in ("rounds", "unique"):
        seen = set()
        prev_max = None
        for p in a.args:
            v = list(ids(p))
            for x in v:
                if x in seen:
                    print("duplicate ID %d (in %s)" % (x, p), file=sys.stderr)
                    return 1
                seen.add(x)
            if a.cmd == "rounds" and v:
                if prev_max is not None and min(v) <= prev_max:
                    print("%s: smallest ID %d not above an earlier round's %d"
                          % (p, min(v), prev_max), file=sys.stderr)
                    return 1
                prev_max = max(v) if prev_max is None else max(prev_max, max(v))
        print(len(seen))
        return 0
    if a.cmd == "workers":
        last = {}
        for p in a.args:
            for x in ids(p):
                w = (x >> a.worker_shift) & a.worker_mask
                if w in last and x <= last[w]:
                    print("worker %d: %d after %d" % (w, x, last[w]), file=sys.stderr)
                    return 1
                last[w] = x
        print(" ".join("%d" % w for w in sorted(last)))
        return 0
    print("unknown command " + a.cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

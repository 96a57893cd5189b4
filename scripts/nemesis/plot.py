#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A picture of a nemesis run (scripts/nemesis.sh; doc/nemesis.md), drawn
the way Jepsen draws its reports: IDs per second per node over the run, one
line per node (twins dashed), every fault shaded over the time it acted,
one colour per kind, its target written at the top of the band.

  scripts/nemesis/plot.py RUN_DIR [OUT.png]

Reads RUN_DIR/clients/*.log and RUN_DIR/events.log (scripts/nemesis/check.py
describes both), writes RUN_DIR/plot/ (the data and the gnuplot script) and
OUT.png (default RUN_DIR/ids.png) with gnuplot's pngcairo terminal. A second
in which a node issued nothing is drawn at the axis' floor (1), so that an
outage shows as a drop to the bottom. Exit 0 when the PNG was written.
"""
import collections
import glob
import os
import re
import subprocess
import sys

# one colour per fault kind (Jepsen shades each nemesis in its own colour)
COLOURS = ["#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a6761d",
           "#f781bf", "#999999", "#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3",
           "#a6d854", "#ffd92f", "#e5c494", "#1b9e77", "#6a3d9a", "#b15928"]
NODE_COLOURS = ["#000000", "#1f4e9c", "#b2182b", "#1a7f37", "#7b3294", "#8c510a",
                "#01665e", "#c51b7d"]


def load_events(path):
    faults, start, end, store = [], None, None, ""
    open_f = {}
    for line in open(path):
        p = line.split()
        if len(p) < 3:
            continue
        t, w, a = int(p[0]), p[1], p[2:]
        if w == "phase" and a[0] == "start" and start is None:
            start = t
        elif w == "phase" and a[0] == "end":
            end = t
        elif w == "fault" and len(a) >= 2:
            f = [t, None, a[0], a[1]]
            faults.append(f)
            open_f[(a[0], a[1])] = f
        elif w == "heal" and len(a) >= 2 and (a[0], a[1]) in open_f:
            open_f.pop((a[0], a[1]))[1] = t
    return faults, start, end, store


def per_second(path, t0):
    ids = collections.Counter()
    for line in open(path):
        p = line.split()
        if len(p) >= 8 and p[0] == "R" and p[4] == "0" and p[7] != "-":
            n = sum(int(r.split("+")[1]) for r in p[7].split(","))
            ids[(int(p[2]) - t0) // 1000000] += n
    return ids


def main():
    if len(sys.argv) not in (2, 3) or not os.path.isdir(sys.argv[1]):
        print("usage: scripts/nemesis/plot.py RUN_DIR [OUT.png]", file=sys.stderr)
        return 2
    run = sys.argv[1]
    png = sys.argv[2] if len(sys.argv) == 3 else os.path.join(run, "ids.png")
    faults, start, end, _ = load_events(os.path.join(run, "events.log"))
    logs = sorted(glob.glob(os.path.join(run, "clients", "*.log")))
    logs = [x for x in logs if not x.endswith(".resp.log")]
    if start is None or not logs:
        print("nemesis_plot: no phase start or no client log in %s" % run, file=sys.stderr)
        return 2
    info = {}
    if os.path.exists(os.path.join(run, "run.info")):
        for line in open(os.path.join(run, "run.info")):
            p = line.split(None, 1)
            if len(p) == 2:
                info[p[0]] = p[1].strip()
    if end is None:
        end = max([f[1] or f[0] for f in faults] + [start + 1000000])
    secs = max(1, (end - start) // 1000000 + 1)
    d = os.path.join(run, "plot")
    os.makedirs(d, exist_ok=True)

    def order(path):
        n = os.path.basename(path)[:-4]
        m = re.match(r"([a-z]*)(\d+)$", n)
        return (m.group(1) != "n", m.group(1), int(m.group(2))) if m else (True, n, 0)

    series = []
    for path in sorted(logs, key=order):
        node = os.path.basename(path)[:-4]
        ids = per_second(path, start)
        twin = not node.startswith("n")
        lo = min(ids) if twin and ids else 0
        hi = max(ids) if twin and ids else secs - 1
        if twin and not ids:
            continue
        dat = os.path.join(d, node + ".dat")
        with open(dat, "w") as f:
            for s in range(max(0, lo), min(hi, secs - 1) + 1):
                f.write("%d %d\n" % (s, max(1, ids.get(s, 0))))
        series.append((node, dat, twin))

    kinds = []
    for f in faults:
        if f[2] not in kinds:
            kinds.append(f[2])
    colour = {k: COLOURS[i % len(COLOURS)] for i, k in enumerate(kinds)}
    gp = ['set terminal pngcairo size 1600,700 font "DejaVu Sans,10" noenhanced',
          'set output "%s"' % png.replace('"', '\\"'),
          'set title "%s"' % ("nemesis: store %s, seed %s, %s" % (
              re.search(r"store=(\S+)", info.get("fleet", "")).group(1)
              if re.search(r"store=(\S+)", info.get("fleet", "")) else "?",
              info.get("seed", "?"), info.get("fleet", "").split(" store=")[0])).replace('"', "'"),
          'set xlabel "seconds since the clients started"',
          'set ylabel "IDs per second (issued, per node; 1 = none)"',
          'set logscale y', 'set yrange [0.8:*]', 'set xrange [0:%d]' % secs,
          'set grid ytics', 'set key outside right top vertical Left reverse',
          'set style fill transparent solid 0.25 noborder']
    label_each = secs <= 240
    for i, f in enumerate(faults):
        a = (f[0] - start) / 1e6
        b = ((f[1] if f[1] else end) - start) / 1e6
        if b - a < 0.3:
            b = a + 0.3
        gp.append('set object %d rect from %.2f, graph 0 to %.2f, graph 1 fc rgb "%s" '
                  'fs transparent solid 0.25 noborder behind' % (i + 1, a, b, colour[f[2]]))
        if label_each:
            gp.append('set label %d "%s %s" at %.2f, graph 0.99 rotate by 90 right '
                      'font ",8" tc rgb "%s"' % (i + 1, f[2], f[3], a + 0.1, colour[f[2]]))
    plots = []
    for i, (node, dat, twin) in enumerate(series):
        c = NODE_COLOURS[i % len(NODE_COLOURS)]
        plots.append('"%s" using 1:2 with lines lw %s dt %d lc rgb "%s" title "%s"' % (
            dat, "1.5" if twin else "1.2", 2 if twin else 1, c, node))
    for k in kinds:  # the legend of the shaded bands
        plots.append('NaN with boxes fs transparent solid 0.35 noborder lc rgb "%s" '
                     'title "fault: %s"' % (colour[k], k))
    gp.append("plot " + ", \\\n     ".join(plots))
    script = os.path.join(d, "ids.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    p = subprocess.run(["gnuplot", script], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or not os.path.exists(png):
        print("nemesis_plot: gnuplot failed: %s" % p.stderr.strip()[:300], file=sys.stderr)
        return 1
    print("nemesis_plot: %s" % png)
    return 0


if __name__ == "__main__":
    sys.exit(main())

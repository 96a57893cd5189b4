# SPDX-License-Identifier: BSD-3-Clause
"""The table, the picture's data and the check of scripts/drill.sh (issue 49).

usage: report.py OUT WARM_S BOUND_MS [check] LANG=LABEL...

Reads OUT/start (the drill's start, Unix seconds), OUT/events (one line per
event: DIR NAME TARGET START END) and OUT/DIR/LANG.out (one line per call:
WALL_S MODE LATENCY_US ok|err [MESSAGE]). Prints one Markdown table on
stdout: a row per event, client and mode with calls, errors, p50, p99,
p99.9 and max latency in ms (latency over the calls after the first second
of each caller's run, its warm-up; calls and errors over all of them).
Writes OUT/LANG.dat and OUT/plot.gp (gnuplot: OUT/drill.png, each client's
latency over the drill's time, events shaded). With "check": exits 1 when a
call failed or any call (warm-up included) took longer than BOUND_MS,
naming each, on stderr."""
import math
import os
import sys


def pct(sorted_v, p):
    """The p-th percentile (nearest rank) of a sorted list."""
    if not sorted_v:
        return float("nan")
    k = max(0, math.ceil(p / 100 * len(sorted_v)) - 1)
    return sorted_v[k]


def ms(v):
    return "-" if v != v else ("%.2f" % v if v < 10 else "%.1f" % v if v < 100 else "%.0f" % v)


def main():
    out, warm, bound = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    rest = sys.argv[4:]
    check = bool(rest) and rest[0] == "check"
    if check:
        rest = rest[1:]
    langs = [a.split("=", 1) for a in rest]
    start = float(open(os.path.join(out, "start")).read().split()[0])
    events = [line.split() for line in open(os.path.join(out, "events")) if line.strip()]

    print("| event | client | mode | calls | errors | p50 ms | p99 ms | p99.9 ms | max ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    problems = []
    dat = {lang: [] for lang, _ in langs}
    first_err = {}
    for d, name, target, _t0, _t1 in events:
        for lang, label in langs:
            path = os.path.join(out, d, lang + ".out")
            rows = []
            if os.path.exists(path):
                for line in open(path, errors="replace"):
                    f = line.split(None, 4)
                    if len(f) >= 4:
                        rows.append((float(f[0]), f[1], float(f[2]) / 1000, f[3] == "ok",
                                     f[4].strip() if len(f) > 4 else ""))
            if not rows:
                problems.append(f"{name} ({target}): {label} made no calls (see {out}/{d}/{lang}.err)")
                continue
            t_first = min(r[0] for r in rows)
            for mode in ("next", "get"):
                mine = [r for r in rows if r[1] == mode]
                lat = sorted(r[2] for r in mine if r[0] >= t_first + 1.0)
                errs = [r for r in mine if not r[3]]
                print(f"| {name} ({target}) | {label} | {mode} | {len(mine)} | {len(errs)} | "
                      f"{ms(pct(lat, 50))} | {ms(pct(lat, 99))} | {ms(pct(lat, 99.9))} | "
                      f"{ms(lat[-1] if lat else float('nan'))} |")
                if errs:
                    first_err.setdefault((f"{name} ({target})", label, mode), errs[0][4])
                    problems.append(f"{name} ({target}): {label} {mode}: {len(errs)} failed calls "
                                    f"(first: {errs[0][4]})")
                slow = [r for r in mine if r[2] > bound]
                if slow:
                    worst = max(r[2] for r in slow)
                    problems.append(f"{name} ({target}): {label} {mode}: {len(slow)} calls over {bound:.0f} ms "
                                    f"(worst {worst:.0f} ms)")
            dat[lang] += rows
    if first_err:
        print()
        print("First error of each failing row:")
        print()
        for (name, label, mode), msg in first_err.items():
            print(f"- {name}, {label} {mode}: {msg}")

    # The picture: a panel per client, latency (log) over the drill's time.
    for lang, _ in langs:
        with open(os.path.join(out, lang + ".dat"), "w") as f:
            for w, mode, lat, ok, _msg in sorted(dat[lang]):
                col = {"next": 0, "get": 1}[mode] if ok else 2
                f.write(f"{w - start:.4f} {max(lat, 0.001):.4f} {col}\n")
    n = len(langs)
    gp = [f"set terminal pngcairo size 1400,{220 * n + 60} font ',9'",
          "set output 'drill.png'",
          f"set multiplot layout {n},1 title 'flakewire drill: latency per call (ms, log), "
          "next() blue, get() green, failed red; events shaded'",
          "set logscale y", "set yrange [0.001:10000]", "set grid ytics",
          "set ylabel 'ms'", "set key off", "set style fill transparent solid 0.2 noborder"]
    for i, (_d, name, target, t0, t1) in enumerate(events):
        a, b = float(t0) - start, max(float(t1), float(t0) + 0.3) - start
        gp.append(f"set object {i + 1} rect from {a:.2f},graph 0 to {b:.2f},graph 1 "
                  "fc rgb 'orange' fs transparent solid 0.3 noborder behind")
        gp.append(f"set label {i + 1} '{name} ({target})' at {a:.2f},graph 0.06 front")
    for k, (lang, label) in enumerate(langs):
        gp.append("set xlabel 's since the drill started'" if k == n - 1 else "unset xlabel")
        gp.append(f"set title '{label}'")
        gp.append(f"plot '{lang}.dat' using 1:($3==0?$2:1/0) with points pt 7 ps 0.3 lc rgb '#1f77b4', "
                  f"'' using 1:($3==1?$2:1/0) with points pt 7 ps 0.3 lc rgb '#2ca02c', "
                  f"'' using 1:($3==2?$2:1/0) with points pt 2 ps 1 lw 2 lc rgb 'red'")
    gp.append("unset multiplot")
    with open(os.path.join(out, "plot.gp"), "w") as f:
        f.write("\n".join(gp) + "\n")

    if check and problems:
        for p in problems:
            print("drill: FAIL:", p, file=sys.stderr)
        return 1
    if problems:
        for p in problems:
            print("drill:", p, file=sys.stderr)
    return 0


sys.exit(main())

#!/usr/bin/env python3
"""The table of scripts/bench/performance.sh: reads the runs it left in --rundir (flakeload
and converted flakectl JSON, bench-core and callgrind text, meta.tsv with the
commands) and writes table.txt, bench.json, latency.dat and latency.gp into
--out. Prints the table.

Absolute rows: medians over the runs of each row. Ratio rows (3c, 3d, 4b,
4f-4h, C, Crx, Crxtx): the two sides ran back to back in pairs (round N of
one beside round N of the other, who goes first alternating), the ratio is
taken per pair, and the row gives the median of the per-pair ratios with
its interquartile range (IQR) and min/max. A row whose IQR is wider than
--noisy-iqr (a share of its median) is marked `noisy` instead of yes/no.

  performance_table.py --compare A/bench.json B/bench.json
says, ratio row by ratio row, whether two runs' IQRs overlap."""
import argparse
import glob
import json
import os
import re
import statistics
import sys

NOISY_IQR = 0.10  # default --noisy-iqr: IQR wider than 10 % of the median
CPU_FULL = 0.9    # a run is undisturbed when both its processes had 90 % of their cores


def quantile(v, q):
    """The q quantile of the numbers v, linear between the two nearest ranks
    (statistics.quantiles(method="inclusive"); flakeload-pktbench's too)."""
    v = sorted(v)
    if not v:
        return None
    pos = q * (len(v) - 1)
    lo = int(pos)
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[lo]


def pair_stats(ratios, bound=NOISY_IQR):
    """Median, quartiles, min and max of per-pair ratios; noisy when the IQR
    is wider than bound times the median (or fewer than 3 pairs: no IQR)."""
    r = [x for x in ratios if x is not None]
    if not r:
        return None
    med = quantile(r, 0.5)
    q1, q3 = quantile(r, 0.25), quantile(r, 0.75)
    rel = (q3 - q1) / med if med else float("inf")
    return {"median": med, "q1": q1, "q3": q3, "min": min(r), "max": max(r), "n": len(r),
            "iqr_rel": rel, "noisy": len(r) < 3 or rel > bound, "each": r}


def pair_ratios(num, den, fnum, fden=None):
    """Per-pair ratios fnum(num[k]) / fden(den[k]) over the rounds k both
    dicts hold (round number -> run); a round one side lacks pairs nothing."""
    fden = fden or fnum
    out = []
    for k in sorted(set(num) & set(den)):
        d = fden(den[k])
        if d:
            out.append(fnum(num[k]) / d)
    return out


def pair_verdict(st, test):
    """'noisy' when the spread is too wide to judge, else yes/no by test(median);
    test None: a row with no target ('-' or 'noisy')."""
    if st["noisy"]:
        return "noisy"
    if test is None:
        return "-"
    return "yes" if test(st["median"]) else "no"


def fmt_pair(st, digits=3):
    f = f"{{:.{digits}f}}"
    return (f"{f.format(st['median'])} (IQR {f.format(st['q1'])}-{f.format(st['q3'])} = "
            f"{st['iqr_rel']:.1%} of it, min {f.format(st['min'])}, max {f.format(st['max'])}; "
            f"{st['n']} pairs)")


def overlap(a, b):
    """True when the IQRs of two pair_stats overlap."""
    return a["q1"] <= b["q3"] and b["q1"] <= a["q3"]


def compare(pa, pb):
    """Prints, per ratio row of two bench.json files, both medians and IQRs and
    whether the IQRs overlap; returns the number of rows whose IQRs do not."""
    ja, jb = json.load(open(pa)), json.load(open(pb))
    A, B = ja.get("pairs", {}), jb.get("pairs", {})
    apart = 0
    print(f"A: {pa} ({ja.get('date')})\nB: {pb} ({jb.get('date')})")
    print(f"{'row':<6} {'A median (IQR)':<28} {'B median (IQR)':<28} IQRs")
    g = lambda x: f"{x:.3g}" if abs(x) >= 100 else f"{x:.3f}"
    for row in [r for r in A if r in B]:
        a, b = A[row], B[row]
        ok = overlap(a, b)
        apart += not ok
        fa = f"{g(a['median'])} ({g(a['q1'])}-{g(a['q3'])})"
        fb = f"{g(b['median'])} ({g(b['q1'])}-{g(b['q3'])})"
        print(f"{row:<6} {fa:<28} {fb:<28} {'overlap' if ok else 'APART'}"
              f"{' (noisy)' if a['noisy'] or b['noisy'] else ''}")
    return apart


def parse_args(argv):
    ap = argparse.ArgumentParser()
    if argv[:1] == ["--compare"]:
        ap.add_argument("--compare", nargs=2, required=True, metavar="BENCH_JSON")
        return ap.parse_args(argv)
    for k in ("rundir", "out", "date", "machine", "load", "runs", "duration", "cores", "quick",
              "invocation", "elapsed"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--pairs", default="0")
    ap.add_argument("--pair-duration", default="0")
    ap.add_argument("--noisy-iqr", type=float, default=NOISY_IQR)
    return ap.parse_args(argv)


def main(a):
    R = a.rundir


    def by_round(row):
        """round number -> run, from ROW-N.json (N: the round)"""
        out = {}
        for p in glob.glob(f"{R}/{row}-*.json"):
            m = re.match(r".*-(\d+)\.json$", p)
            try:
                out[int(m.group(1))] = json.load(open(p))
            except (OSError, ValueError, AttributeError):
                continue
            try:  # the share of a core each process had (scripts/lib/bench.sh run_pair)
                out[int(m.group(1))]["cpu"] = json.load(open(p[:-5] + ".cpu"))
            except (OSError, ValueError):
                pass
        return dict(sorted(out.items()))

    def share(j):
        return j.get("cpu", {}).get("sut_cpu_share")

    def shares(js):
        """the system under test's share of its core over the runs, for the row"""
        v = [share(j) for j in js if share(j) is not None]
        if not v:
            return ""
        return (f", CPU share of its core {statistics.median(v):.2f} (median; {min(v):.2f}-{max(v):.2f}), "
                f"of the load's {statistics.median([j['cpu']['load_cpu_share'] for j in js if share(j) is not None]):.2f}")

    def undisturbed(js):
        """the runs in which both processes had at least CPU_FULL of their cores"""
        return {k: j for k, j in js.items() if share(j) is not None and
                min(j["cpu"]["sut_cpu_share"], j["cpu"]["load_cpu_share"]) >= CPU_FULL}

    def runs(row):
        return list(by_round(row).values())

    pairs = {}  # ratio row -> pair_stats

    def paired(rid, ratios):
        st = pair_stats(ratios, a.noisy_iqr)
        if st:
            pairs[rid] = st
        return st

    def med(js, f):
        v = [f(j) for j in js]
        return statistics.median(v) if v else None


    meta = {}
    if os.path.exists(f"{R}/meta.tsv"):
        for line in open(f"{R}/meta.tsv"):
            row, key, val = line.rstrip("\n").split("\t", 2)
            meta.setdefault(row, {}).setdefault(key, [])
            if val not in meta[row][key]:
                meta[row][key].append(val)

    rows = []      # (id, benchmark, result, target, verdict)
    commands = []  # (id, text)
    notes = []
    data = {"date": a.date, "machine": a.machine, "load": a.load, "runs": int(a.runs),
            "duration_s": float(a.duration), "cores_sut_load": a.cores, "quick": a.quick == "1"}


    def cmd_of(row, ids, keys=("sut", "load", "cmd", "perf")):
        for k in keys:
            for c in meta.get(row, {}).get(k, [])[-1:]:
                c = re.sub(r"fwb-(\w+)-\d+-\d+", r"fwb-\1-PID-N", c)
                c = re.sub(r"/tmp/fw-bench\.\w+", "$TMP", c)
                c = re.sub(r"/r\d+\.sock", "/rN.sock", c)
                c = re.sub(r"mark-\d+", "mark-N", c)
                c = re.sub(r"/runs/[\w.]+-\d+\.json", "/runs/ROW-N.json", c)
                commands.append((ids, f"{k}: {c}"))
        for w in meta.get(row, {}).get("warning", []):
            notes.append(f"{ids}: WARNING {w}")


    def M(x):
        return f"{x / 1e6:.3f} M/s"


    def each(js):
        return ", ".join("%.3f" % (j["replies_per_s"] / 1e6) for j in js)


    def us(ns):
        return f"{ns / 1000:.1f}"


    # ---- 1 core ----
    if os.path.exists(f"{R}/core.txt"):
        core = {}
        for line in open(f"{R}/core.txt"):
            m = re.match(r"\|\s*(fw_gen_\w+(?: \d+)?)\s*\|\s*([\d.]+) /\s*([\d.]+)\s*\|\s*([\d.]+|-)", line)
            if m:
                core[m.group(1)] = (float(m.group(2)), float(m.group(3)))
        data["core_ns_per_call"] = {k: v[0] for k, v in core.items()}
        if "fw_gen_next" in core:
            rows.append(("1a", "ID core: one ID (fw_gen_next)", f"{core['fw_gen_next'][0]:.2f} ns", "a few ns",
                         "yes" if core["fw_gen_next"][0] < 10 else "no"))
        if "fw_gen_list 100" in core:
            v = core["fw_gen_list 100"][0]
            rows.append(("1b", "ID core: LIST of 100 (fw_gen_list)", f"{v:.1f} ns ({v / 100:.2f} ns/ID)", "-", "-"))
        for k, rid in (("fw_gen_range 100", "1c"), ("fw_gen_range 4096", "1d")):
            if k in core:
                one = core.get("fw_gen_range 1", core.get("fw_gen_next"))[0]
                rows.append((rid, f"ID core: RANGE of {k.split()[-1]} (fw_gen_range)", f"{core[k][0]:.2f} ns",
                             "cost of one ID", f"yes ({one:.2f} ns for 1)" if core[k][0] < 3 * one + 5 else "no"))
        cmd_of("core", "1a-1d")
        # UUIDv7 (issue 12): the same bench-core run, beside the Snowflake ID.
        uu = {}
        for line in open(f"{R}/core.txt"):
            m = re.match(r"\|\s*(uuid7 [^|]*?)\s*\|\s*([\d.]+) /\s*([\d.]+)\s*\|", line)
            if m:
                uu[m.group(1)] = float(m.group(2))
        data["core_ns_per_call"].update(uu)
        if "uuid7 (next + rng)" in uu and "uuid7 list 90" in uu:
            v1, v90 = uu["uuid7 (next + rng)"], uu["uuid7 list 90"]
            one = core.get("fw_gen_next", (0,))[0]
            rows.append(("1e", "ID core: one UUIDv7 / a UUID7 reply of 90 (ChaCha20 random bits)",
                         f"{v1:.1f} ns / {v90 / 90:.1f} ns per UUID ({v1 / one:.0f}x one ID)" if one else
                         f"{v1:.1f} ns / {v90 / 90:.1f} ns per UUID", "near one ID", "-"))

    # ---- 2 ID space ----
    for row, rid, bits in (("idspace12", "2a", 12), ("idspace8", "2b", 8)):
        js = runs(row)
        if not js:
            continue
        per_ms = 1 << bits
        cap = per_ms * 1000.0
        offered = med(js, lambda j: j["sent_per_s"])
        ids = med(js, lambda j: j["ids_per_s"])
        used_el = med(js, lambda j: j["id_space"]["used_of_elapsed"])
        used_span = med(js, lambda j: j["id_space"]["used_of_span"])
        full = med(js, lambda j: j["id_space"]["ms_full"] / max(1, j["id_space"]["ms_started"]))
        retry = med(js, lambda j: j["status"].get("retry-after", j["status"].get("retry_after", 0)))
        retry_share = med(js, lambda j: j["status"].get("retry-after", j["status"].get("retry_after", 0)) / max(1, j["replies"]))
        tmo = med(js, lambda j: j["timeouts"])
        gap = med(js, lambda j: j.get("max_reply_gap_us", 0))
        issued_frac = med(js, lambda j: j["ids"] / max(1, j["sent"]))
        viol = sum(j["violations"] for j in js)
        label = f"ID space, 1 worker, {bits} sequence bits ({per_ms}/ms = {cap / 1e6:.3f} M/s)"
        res = (f"offered {M(offered)}, issued {M(ids)} = {used_el:.4f} of {per_ms}/ms over the elapsed ms "
               f"({used_span:.4f} over the ms the IDs span; {full:.3f} of the ms used up); "
               f"{issued_frac:.3f} of offered issued; RETRY_AFTER {retry:,.0f} ({retry_share:.1%} of replies), "
               f"timeouts {tmo:,.0f}, longest pause {gap / 1000:.1f} ms, violations {viol}")
        if offered > cap * 1.01:
            verdict = "yes" if used_el >= 0.99 else "no"
        else:
            verdict = f"n/a: offered < {cap / 1e6:.3f} M/s"
        rows.append((rid, label, res, ">= 0.99 when offered > capacity", verdict))
        data[row] = {"offered_per_s": offered, "ids_per_s": ids, "used_of_elapsed": used_el, "used_of_span": used_span,
                     "ms_full_share": full, "issued_of_offered": issued_frac, "retry_after": retry,
                     "retry_after_share": retry_share, "timeouts": tmo, "max_reply_gap_us": gap,
                     "violations": viol, "runs": len(js)}
        cmd_of(row, rid)

    # ---- 3 path: rounds T F F6 / F6 F T, so 3c and 3d are pairs of neighbours ----
    tpr, fwr, fw6r = by_round("testpmd"), by_round("flakewire"), by_round("flakewire6")
    tp, fw, fw6 = list(tpr.values()), list(fwr.values()), list(fw6r.values())
    rps = lambda j: j["replies_per_s"]
    fw_rps = None
    if tp:
        v = med(tp, rps)
        rows.append(("3a", "testpmd macswap, 1 lcore, memif (reference)",
                     f"{M(v)} echoes, median (runs: {each(tp)}){shares(tp)}", "-", "-"))
        data["testpmd"] = {"replies_per_s": v, "each": [j["replies_per_s"] for j in tp],
                           "load_idle_pct": med(tp, lambda j: j["generator_idle_pct"])}
        cmd_of("testpmd", "3a")
    if fw:
        fw_rps = med(fw, rps)
        rows.append(("3b", "flakewire, 1 lcore, memif, layout 41/0/0/22",
                     f"{M(fw_rps)} replies, median (runs: {each(fw)}){shares(fw)}, "
                     f"p50 {us(med(fw, lambda j: j['latency_ns']['p50']))} us, violations {sum(j['violations'] for j in fw)}",
                     "-", "-"))
        data["flakewire"] = {"replies_per_s": fw_rps, "each": [j["replies_per_s"] for j in fw],
                             "load_idle_pct": med(fw, lambda j: j["generator_idle_pct"])}
        cmd_of("flakewire", "3b")
    st = paired("3c", pair_ratios(fwr, tpr, rps))
    if st:
        rows.append(("3c", "ratio flakewire / testpmd (per lcore), per pair of neighbouring runs",
                     fmt_pair(st), ">= 0.8", pair_verdict(st, lambda r: r >= 0.8)))
        data["path_ratio"] = st["median"]
        if any(share(j) is not None for j in tp + fw):
            sc = pair_stats(pair_ratios(undisturbed(fwr), undisturbed(tpr), rps), a.noisy_iqr)
            notes.append(f"3c: pairs in which both processes of both runs had at least {CPU_FULL:.0%} of their cores "
                         f"(from /proc; other processes on a core take its share away): "
                         + (fmt_pair(sc) + (" (noisy)" if sc["noisy"] else "") if sc else "none")
                         + f", of {st['n']} pairs.")
            data["path_ratio_undisturbed"] = sc
        idle = (data["testpmd"]["load_idle_pct"], data["flakewire"]["load_idle_pct"])
        notes.append(f"3: flakeload idle {idle[0]:.0f} % (testpmd) / {idle[1]:.0f} % (flakewire) of the send phase: "
                     "near 0 % means the load generator set the pace, high means it waited for the peer.")
    if fw6:
        fw6_rps = med(fw6, rps)
        st = paired("3d", pair_ratios(fw6r, fwr, rps))
        rows.append(("3d", "flakewire over IPv6, 1 lcore, memif, layout 41/0/0/22; ratio to IPv4 (3b) per pair",
                     (f"ratio {fmt_pair(st)}; " if st else "")
                     + f"{M(fw6_rps)} replies, median (runs: {each(fw6)}){shares(fw6)}, "
                     f"p50 {us(med(fw6, lambda j: j['latency_ns']['p50']))} us, violations {sum(j['violations'] for j in fw6)}",
                     "-", pair_verdict(st, None) if st else "-"))
        data["flakewire6"] = {"replies_per_s": fw6_rps, "each": [j["replies_per_s"] for j in fw6]}
        cmd_of("flakewire6", "3d")

    # ---- 4 kernel: rounds FW KS INCR INCRBY KS100, reversed every other round ----
    ksr, ks100r, kfwr = by_round("kernel"), by_round("kernel100"), by_round("kfw")
    ks, ks100 = list(ksr.values()), list(ks100r.values())
    if ks:
        kv = med(ks, rps)
        rows.append(("4a", "flakesock, 1 thread (1 core), loopback in a namespace, flakectl bench x32",
                     f"{M(kv)} replies, p50 {us(med(ks, lambda j: j['latency_ns']['p50']))} us, "
                     f"violations {sum(j['violations'] for j in ks)}", "-", "-"))
        data["flakesock"] = {"replies_per_s": kv, "each": [j["replies_per_s"] for j in ks]}
        cmd_of("kernel", "4a")
    st = paired("4b", pair_ratios(kfwr, ksr, rps))
    if st:
        rows.append(("4b", "ratio flakewire (memif, as 3b) / flakesock (4a), per core, per pair",
                     fmt_pair(st, 1), ">= 10", pair_verdict(st, lambda r: r >= 10)))
        data["kernel_ratio"] = st["median"]
        cmd_of("kfw", "4b")
        notes.append("4b: flakewire per core is flakeload over memif (as row 3b, one run beside each flakesock "
                     "run), not flakectl bench: a kernel-socket client on the one load core cannot offer "
                     "flakewire more than the kernel path itself does, so it would measure the client. "
                     "flakesock is loaded by flakectl bench (32 threads, kernel UDP on loopback), the only "
                     "load it can take; its one thread holds one core.")

    redisr = {}
    for pth in glob.glob(f"{R}/redis-*.csv"):
        m = re.match(r".*-(\d+)\.csv$", pth)
        row = {}
        for line in open(pth):
            f = [x.strip('"') for x in line.strip().split(",")]
            if len(f) >= 2 and f[0] != "test":
                try:
                    row[f[0].split()[0].upper()] = float(f[1])
                except ValueError:
                    pass
        if row and m:
            redisr[int(m.group(1))] = row
    redis = [redisr[k] for k in sorted(redisr)]
    incr_r = {k: v for k, v in redisr.items() if v.get("INCR")}
    incrby_r = {k: v for k, v in redisr.items() if v.get("INCRBY")}
    if ks100:
        v = med(ks100, rps)
        ids = med(ks100, lambda j: j["ids_per_s"])
        rows.append(("4c", "flakesock, 1 thread, LIST of 100, flakectl bench x32",
                     f"{M(v)} requests = {ids / 1e6:.3f} M IDs/s, p50 {us(med(ks100, lambda j: j['latency_ns']['p50']))} us, "
                     f"violations {sum(j['violations'] for j in ks100)}", "-", "-"))
        data["flakesock_list100"] = {"replies_per_s": v, "ids_per_s": ids}
        cmd_of("kernel100", "4c")
    if redis:
        incr = statistics.median([r_["INCR"] for r_ in redis if "INCR" in r_] or [0])
        incrby = statistics.median([r_["INCRBY"] for r_ in redis if "INCRBY" in r_] or [0])
        rows.append(("4d", "Redis INCR, redis-server (1 thread) on the same loopback, redis-benchmark -c 32",
                     f"{M(incr)} INCR", "-", "-"))
        rows.append(("4e", "Redis INCRBY 100 (a batch of 100), same",
                     f"{M(incrby)} INCRBY = {incrby * 100 / 1e6:.3f} M IDs/s", "-", "-"))
        data["redis"] = {"incr_per_s": incr, "incrby100_per_s": incrby}
        cmd_of("redis", "4d-4e")
        st = paired("4f", pair_ratios(ksr, incr_r, rps, lambda r_: r_["INCR"]))
        if st:
            rows.append(("4f", "ratio flakesock (4a) / Redis INCR (4d), single IDs, per pair", fmt_pair(st, 2),
                         "-", pair_verdict(st, None)))
        st = paired("4g", pair_ratios(kfwr, incr_r, rps, lambda r_: r_["INCR"]))
        if st:
            rows.append(("4g", "ratio flakewire per core (as 4b) / Redis INCR (4d), per pair", fmt_pair(st, 1),
                         "-", pair_verdict(st, None)))
        st = paired("4h", pair_ratios(ks100r, incrby_r, lambda j: j["ids_per_s"], lambda r_: r_["INCRBY"] * 100))
        if st:
            rows.append(("4h", "ratio flakesock LIST 100 (4c) / Redis INCRBY 100 (4e), IDs/s, per pair",
                         fmt_pair(st, 2), "-", pair_verdict(st, None)))
        notes.append("4d-4h: Redis is the usual alternative to an ID service (a central counter). Both servers run one "
                     "thread on the SUT core of a private namespace; both clients keep 32 requests in flight, one per "
                     "connection or thread. INCR returns a counter, not a time-ordered 64-bit ID, and Redis persists "
                     "nothing here (--save '' --appendonly no) while flakesock reserves its mark on disk.")

    # ---- 5 latency: flakewire and testpmd at the same rates, side by side ----
    lat = []
    maxr = None
    if os.path.exists(f"{R}/latency-max.txt"):
        maxr = float(open(f"{R}/latency-max.txt").read().strip() or 0)
    pcts = sorted({int(re.match(r".*/lat(\d+)-\d+\.json", p).group(1)) for p in glob.glob(f"{R}/lat*-*.json")})
    for pc in pcts:
        js = runs(f"lat{pc}")
        tj = runs(f"tplat{pc}")
        rate = med(js, lambda j: j["rate"])
        got = med(js, lambda j: j["replies_per_s"])
        p50 = med(js, lambda j: j["latency_ns"]["p50"])
        p99 = med(js, lambda j: j["latency_ns"]["p99"])
        p999 = med(js, lambda j: j["latency_ns"]["p99_9"])
        tmo = med(js, lambda j: j["timeouts"])
        ttmo = med(tj, lambda j: j["timeouts"]) if tj else None
        lat.append((pc, rate, got, p50, p99, p999))
        rows.append((f"5-{pc}", f"latency at {pc} % of {maxr / 1e6:.3f} M/s (flakewire, --rate {rate:,.0f})",
                     f"p50 {us(p50)} / p99 {us(p99)} / p99.9 {us(p999)} us at {M(got)}, timeouts {tmo:,.0f}"
                     + (f" (testpmd at this rate: {ttmo:,.0f})" if tj else ""),
                     "reported", "-"))
        cmd_of(f"lat{pc}", f"5-{pc}")
        if tj:
            tp50 = med(tj, lambda j: j["latency_ns"]["p50"])
            tp99 = med(tj, lambda j: j["latency_ns"]["p99"])
            tp999 = med(tj, lambda j: j["latency_ns"]["p99_9"])
            rows.append((f"5t-{pc}", "  same rate, testpmd macswap (the machine's own tails)",
                         f"p50 {us(tp50)} / p99 {us(tp99)} / p99.9 {us(tp999)} us at "
                         f"{M(med(tj, lambda j: j['replies_per_s']))}, timeouts {ttmo:,.0f}",
                         "reported", "-"))
            data.setdefault("latency_testpmd", []).append({"pct": pc, "p50_ns": tp50, "p99_ns": tp99,
                                                           "p99_9_ns": tp999, "timeouts": ttmo})
            cmd_of(f"tplat{pc}", f"5t-{pc}")
    data["latency"] = [{"pct": pc, "rate": r, "replies_per_s": g, "p50_ns": a_, "p99_ns": b_, "p99_9_ns": c_}
                       for pc, r, g, a_, b_, c_ in lat]
    if lat:
        with open(f"{a.out}/latency.dat", "w") as f:
            f.write("# pct offered replies_per_s p50_us p99_us p99_9_us\n")
            for pc, r, g, a_, b_, c_ in lat:
                f.write(f"{pc} {r:.0f} {g / 1e6:.6f} {a_ / 1000:.2f} {b_ / 1000:.2f} {c_ / 1000:.2f}\n")
        with open(f"{a.out}/latency.gp", "w") as f:
            f.write("\n".join([
                "set terminal png size 900,560",
                f"set output '{a.out}/latency.png'",
                f'set title "flakewire latency vs throughput (1 lcore, memif, flakeload --rate)\\n{a.date}, {a.machine[:70]}"',
                'set xlabel "replies/s (M)"',
                'set ylabel "round trip (us)"',
                "set logscale y",
                "set grid",
                "set key top left",
                f"plot '{a.out}/latency.dat' using 3:4 with linespoints title 'p50', \\",
                "     '' using 3:5 with linespoints title 'p99', \\",
                "     '' using 3:6 with linespoints title 'p99.9'", ""]))

    # The checksum modes of flakeload-pktbench --offload: rows C/P, Crx/Prx, Crxtx/Prxtx.
    CKSUM_MODES = (("none", "", "checksums in software"),
                   ("rx", "rx", "RX checksums verified by the device"),
                   ("rxtx", "rxtx", "RX verified and TX written by the device (a 10 GbE NIC)"))

    # ---- cycles: one row per checksum mode; the slice pairs of every process pooled ----
    for off, suffix, what in CKSUM_MODES:
        row = "C" + suffix
        sl, ghz = [], None
        for pth in sorted(glob.glob(f"{R}/cycles-{off}-*.txt")):
            txt = open(pth).read()
            m = re.search(r"TSC at ([\d.]+) GHz", txt)
            ms = re.search(r"cycles: slices \([^)]*\):((?: [\d.]+/[\d.]+)+)", txt)
            if m and ms:
                ghz = float(m.group(1))
                sl += [tuple(map(float, x.split("/"))) for x in ms.group(1).split()]
        if not sl:
            continue
        cs = statistics.median([c[0] for c in sl])
        cm = statistics.median([c[1] for c in sl])
        st = paired(row, [c[0] / c[1] for c in sl if c[1] > 0])
        if not st:
            continue
        rows.append((row, f"cycles per request, serve path (fwire_lcore_clock + fwire_pkt_burst) / macswap, "
                     f"same mbufs, per slice pair; {what}",
                     f"{fmt_pair(st, 2)}; serve {cs:.1f}, macswap {cm:.1f} cycles (medians, TSC {ghz:.2f} GHz): "
                     f"{ghz * 1e3 / cs:.1f} M requests/s per core before the PMD's RX/TX",
                     "<= 2x macswap", pair_verdict(st, lambda r: r <= 2)))
        data.setdefault("cycles", {})[off] = {"serve_per_request": cs, "macswap_per_packet": cm,
                                              "ratio": st["median"], "tsc_ghz": ghz}
        cmd_of(f"cycles-{off}", row, keys=("cmd",))

    # ---- profile: op id in the three checksum modes of row C ----
    for off, suffix, what in CKSUM_MODES:
        row, op = "P" + suffix, "id"
        p = f"{R}/profile-{op}-{off}.txt"
        if not os.path.exists(p):
            continue
        txt = open(p).read()
        m = re.search(r"Collected : ([\d,]+)", txt) or re.search(r"I\s+refs:\s+([\d,]+)", txt)
        fr = re.search(r"frames (\d+)", txt)
        if m and fr:
            ir = int(m.group(1).replace(",", "")) / int(fr.group(1))
            top = []
            tp_ = f"{a.out}/callgrind.{op}-{off}.top.txt"
            if os.path.exists(tp_):
                for line in open(tp_):
                    mm = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+(\S+)", line)
                    if mm and "PROGRAM TOTALS" not in line:
                        where, _, fn = mm.group(3).rpartition(":")
                        name = f"{os.path.basename(where)}:{fn}" if where else fn  # inlined: by file
                        top.append(f"{name} {int(mm.group(1).replace(',', '')) / int(fr.group(1)):.0f}")
            rows.append((row, f"instructions per request (callgrind, flakewire's serve_burst per frame, no NIC); {what}",
                         f"{ir:.0f} instr; self: {', '.join(top[:6])}", "<= 300" if off == "none" else "-",
                         ("yes" if ir <= 300 else "no") if off == "none" else "-"))
            if off == "none":
                data["profile_instr_per_request"] = ir
                data["profile_top_self"] = top[:12]
            data.setdefault("profile_instr_per_request_by_mode", {})[off] = ir
            cmd_of(f"profile-{off}", row, keys=("cmd", "check", "perf"))
    if os.path.exists(f"{R}/check.txt"):
        notes.append("P: reply checksums re-verified with DPDK's own functions (flakeload-pktbench --check): "
                     + ("; ".join(open(f"{R}/check.txt").read().split("\n")).strip("; ") or "no result"))
    pf = f"{R}/perf.txt"
    if os.path.exists(pf):
        m = re.search(r"^([\d]+),,instructions", open(pf).read(), re.M)
        if m:
            notes.append(f"P: perf stat: {int(m.group(1)) / 1e6:.1f} M instructions for the whole pktbench process "
                         "(1,000,000 frames, EAL start and the harness's refill included).")
        else:
            notes.append("P: perf stat -e instructions: not supported on this VM (no PMU counters).")

    # ---- print ----
    lines = []
    lines.append(f"flakewire benchmarks  {a.date}  ({'quick' if a.quick == '1' else 'full'}, {a.elapsed} s)")
    lines.append(f"machine: {a.machine}")
    lines.append(f"cores: system under test on {a.cores.split('/')[0]}, load on {a.cores.split('/')[1]}; "
                 f"load average {a.load}")
    lines.append(f"absolute rows: median of {a.runs} run(s) of {a.duration} s unless stated; ratio rows: "
                 f"the median of per-pair ratios, {a.pairs} pairs of runs of {a.pair_duration} s back to back "
                 "(who goes first alternating; rows C: slice pairs in one process), with the IQR and min/max")
    noisy = [r for r, st in pairs.items() if st["noisy"]]
    lines.append(f"summary: {len(pairs)} ratio rows, {len(noisy)} noisy"
                 + (f" ({', '.join(noisy)}: IQR wider than {a.noisy_iqr:.0%} of the median; "
                    "too noisy to judge, do not quote their figures)" if noisy else
                    f" (every IQR within {a.noisy_iqr:.0%} of its median)"))
    lines.append("")
    w1 = max(len(r[1]) for r in rows) if rows else 10
    hdr = f"{'#':<5} {'benchmark':<{w1}}  {'target':<32} {'met':<8} result"
    lines.append(hdr)
    lines.append("-" * min(len(hdr) + 80, 200))
    for rid, name, res, tgt, ok in rows:
        lines.append(f"{rid:<5} {name:<{w1}}  {tgt:<32} {ok:<8} {res}")
    lines.append("")
    if notes:
        lines.append("notes:")
        lines += [f"  {n}" for n in notes]
        lines.append("")
    lines.append("commands:")
    for rid, c in commands:
        lines.append(f"  [{rid}] {c}")
    lines.append(f"  [table] {a.invocation}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    open(f"{a.out}/table.txt", "w").write(text)
    data["pairs"] = pairs
    data["noisy_iqr"] = a.noisy_iqr
    data["noisy"] = noisy
    data["rows"] = [dict(zip(("id", "benchmark", "result", "target", "met"), r)) for r in rows]
    data["notes"] = notes
    data["commands"] = [{"row": r, "command": c} for r, c in commands]
    json.dump(data, open(f"{a.out}/bench.json", "w"), indent=1)
    print(f"table: {a.out}/table.txt\njson:  {a.out}/bench.json")


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    if getattr(args, "compare", None):
        sys.exit(1 if compare(*args.compare) else 0)
    main(args)

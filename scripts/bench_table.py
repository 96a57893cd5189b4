#!/usr/bin/env python3
"""The table of scripts/bench.sh: reads the runs it left in --rundir (flakeload
and converted flakectl JSON, bench-core and callgrind text, meta.tsv with the
commands) and writes table.txt, bench.json, latency.dat and latency.gp into
--out. Prints the table. Medians over the runs of each row."""
import argparse
import glob
import json
import os
import re
import statistics

ap = argparse.ArgumentParser()
for k in ("rundir", "out", "date", "machine", "load", "runs", "duration", "cores", "quick",
          "invocation", "elapsed"):
    ap.add_argument("--" + k, required=True)
a = ap.parse_args()

R = a.rundir


def runs(row):
    out = []
    for p in sorted(glob.glob(f"{R}/{row}-*.json")):
        try:
            out.append(json.load(open(p)))
        except (OSError, ValueError):
            pass
    return out


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

# ---- 3 path ----
tp, fw = runs("testpmd"), runs("flakewire")
fw_rps = None
if tp:
    v = med(tp, lambda j: j["replies_per_s"])
    rows.append(("3a", "testpmd macswap, 1 lcore, memif (reference)",
                 f"{M(v)} echoes (runs: {each(tp)})", "-", "-"))
    data["testpmd"] = {"replies_per_s": v, "each": [j["replies_per_s"] for j in tp],
                       "load_idle_pct": med(tp, lambda j: j["generator_idle_pct"])}
    cmd_of("testpmd", "3a")
if fw:
    fw_rps = med(fw, lambda j: j["replies_per_s"])
    rows.append(("3b", "flakewire, 1 lcore, memif, layout 41/0/0/22",
                 f"{M(fw_rps)} replies (runs: {each(fw)}), "
                 f"p50 {us(med(fw, lambda j: j['latency_ns']['p50']))} us, violations {sum(j['violations'] for j in fw)}",
                 "-", "-"))
    data["flakewire"] = {"replies_per_s": fw_rps, "each": [j["replies_per_s"] for j in fw],
                         "load_idle_pct": med(fw, lambda j: j["generator_idle_pct"])}
    cmd_of("flakewire", "3b")
fw6 = runs("flakewire6")
if fw6:
    fw6_rps = med(fw6, lambda j: j["replies_per_s"])
    extra = f", {fw6_rps / fw_rps:.3f} x IPv4 (3b)" if fw else ""
    rows.append(("3d", "flakewire over IPv6, 1 lcore, memif, layout 41/0/0/22",
                 f"{M(fw6_rps)} replies (runs: {each(fw6)}){extra}, "
                 f"p50 {us(med(fw6, lambda j: j['latency_ns']['p50']))} us, violations {sum(j['violations'] for j in fw6)}",
                 "-", "-"))
    data["flakewire6"] = {"replies_per_s": fw6_rps, "each": [j["replies_per_s"] for j in fw6]}
    cmd_of("flakewire6", "3d")
if tp and fw:
    r = fw_rps / data["testpmd"]["replies_per_s"]
    pairs = [f["replies_per_s"] / t["replies_per_s"] for t, f in zip(tp, fw)]
    rows.append(("3c", "ratio flakewire / testpmd (per lcore)",
                 f"{r:.3f} (medians); per round {', '.join(f'{x:.2f}' for x in pairs)}", ">= 0.8",
                 "yes" if r >= 0.8 else "no"))
    data["path_ratio"] = r
    idle = (data["testpmd"]["load_idle_pct"], data["flakewire"]["load_idle_pct"])
    notes.append(f"3: flakeload idle {idle[0]:.0f} % (testpmd) / {idle[1]:.0f} % (flakewire) of the send phase: "
                 "near 0 % means the load generator set the pace, high means it waited for the peer.")

# ---- 4 kernel ----
ks = runs("kernel")
if ks:
    kv = med(ks, lambda j: j["replies_per_s"])
    rows.append(("4a", "flakesock, 1 thread (1 core), loopback in a namespace, flakectl bench x32",
                 f"{M(kv)} replies, p50 {us(med(ks, lambda j: j['latency_ns']['p50']))} us, "
                 f"violations {sum(j['violations'] for j in ks)}", "-", "-"))
    data["flakesock"] = {"replies_per_s": kv, "each": [j["replies_per_s"] for j in ks]}
    cmd_of("kernel", "4a")
    if fw_rps:
        r = fw_rps / kv
        rows.append(("4b", "ratio flakewire (3b) / flakesock (4a), per core", f"{r:.1f}", ">= 10",
                     "yes" if r >= 10 else "no"))
        data["kernel_ratio"] = r
        notes.append("4: flakewire per core is row 3b (flakeload over memif), not flakectl bench: a kernel-socket "
                     "client on the one load core cannot offer flakewire more than the kernel path itself does, "
                     "so it would measure the client. flakesock is loaded by flakectl bench (32 threads, kernel "
                     "UDP on loopback), the only load it can take; its one thread holds one core.")

ks100 = runs("kernel100")
redis = []
for pth in sorted(glob.glob(f"{R}/redis-*.csv")):
    row = {}
    for line in open(pth):
        f = [x.strip('"') for x in line.strip().split(",")]
        if len(f) >= 2 and f[0] != "test":
            try:
                row[f[0].split()[0].upper()] = float(f[1])
            except ValueError:
                pass
    if row:
        redis.append(row)
if ks100:
    v = med(ks100, lambda j: j["replies_per_s"])
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
    if ks and incr:
        kv = med(ks, lambda j: j["replies_per_s"])
        rows.append(("4f", "ratio flakesock (4a) / Redis INCR (4d), single IDs", f"{kv / incr:.2f}", "-", "-"))
        if fw_rps:
            rows.append(("4g", "ratio flakewire per core (3b) / Redis INCR (4d)", f"{fw_rps / incr:.1f}", "-", "-"))
    if ks100 and incrby:
        ids = med(ks100, lambda j: j["ids_per_s"])
        rows.append(("4h", "ratio flakesock LIST 100 (4c) / Redis INCRBY 100 (4e), IDs/s",
                     f"{ids / (incrby * 100):.2f}", "-", "-"))
    notes.append("4d-4h: Redis is the usual alternative to an ID service (a central counter). Both servers run one "
                 "thread on the SUT core of a private namespace; both clients keep 32 requests in flight, one per "
                 "connection or thread. INCR returns a counter, not a time-ordered 64-bit ID, and Redis persists "
                 "nothing here (--save '' --appendonly no) while flakesock reserves its mark on disk.")

# ---- 5 latency ----
lat = []
maxr = None
if os.path.exists(f"{R}/latency-max.txt"):
    maxr = float(open(f"{R}/latency-max.txt").read().strip() or 0)
pcts = sorted({int(re.match(r".*/lat(\d+)-\d+\.json", p).group(1)) for p in glob.glob(f"{R}/lat*-*.json")})
for pc in pcts:
    js = runs(f"lat{pc}")
    rate = med(js, lambda j: j["rate"])
    got = med(js, lambda j: j["replies_per_s"])
    p50 = med(js, lambda j: j["latency_ns"]["p50"])
    p99 = med(js, lambda j: j["latency_ns"]["p99"])
    p999 = med(js, lambda j: j["latency_ns"]["p99_9"])
    tmo = med(js, lambda j: j["timeouts"])
    lat.append((pc, rate, got, p50, p99, p999))
    rows.append((f"5-{pc}", f"latency at {pc} % of {maxr / 1e6:.3f} M/s (flakewire, --rate {rate:,.0f})",
                 f"p50 {us(p50)} / p99 {us(p99)} / p99.9 {us(p999)} us at {M(got)}, timeouts {tmo:,.0f}",
                 "reported", "-"))
    cmd_of(f"lat{pc}", f"5-{pc}")
    tj = runs(f"tplat{pc}")
    if tj:
        tp50 = med(tj, lambda j: j["latency_ns"]["p50"])
        tp99 = med(tj, lambda j: j["latency_ns"]["p99"])
        tp999 = med(tj, lambda j: j["latency_ns"]["p99_9"])
        rows.append((f"5t-{pc}", f"  same rate, testpmd macswap (the machine's own tails)",
                     f"p50 {us(tp50)} / p99 {us(tp99)} / p99.9 {us(tp999)} us at {M(med(tj, lambda j: j['replies_per_s']))}",
                     "reported", "-"))
        data.setdefault("latency_testpmd", []).append({"pct": pc, "p50_ns": tp50, "p99_ns": tp99, "p99_9_ns": tp999})
        cmd_of(f"tplat{pc}", f"5t-{pc}")
data["latency"] = [{"pct": pc, "rate": r, "replies_per_s": g, "p50_ns": a_, "p99_ns": b_, "p99_9_ns": c_}
                   for pc, r, g, a_, b_, c_ in lat]
if lat:
    with open(f"{a.out}/latency.dat", "w") as f:
        f.write("# pct offered replies_per_s p50_us p99_us p99_9_us\n")
        for pc, r, g, a_, b_, c_ in lat:
            f.write(f"{pc} {r:.0f} {g / 1e6:.6f} {a_ / 1000:.2f} {b_ / 1000:.2f} {c_ / 1000:.2f}\n")
    with open(f"{a.out}/latency.gp", "w") as f:
        f.write(f"""set terminal png size 900,560
set output '{a.out}/latency.png'
set title "flakewire latency vs throughput (1 lcore, memif, flakeload --rate)\\n{a.date}, {a.machine[:70]}"
set xlabel "replies/s (M)"
set ylabel "round trip (us)"
set logscale y
set grid
set key top left
plot '{a.out}/latency.dat' using 3:4 with linespoints title 'p50', \\
     '' using 3:5 with linespoints title 'p99', \\
     '' using 3:6 with linespoints title 'p99.9'
""")

# The checksum modes of flakeload-pktbench --offload: rows C/P, Crx/Prx, Crxtx/Prxtx.
CKSUM_MODES = (("none", "", "checksums in software"),
               ("rx", "rx", "RX checksums verified by the device"),
               ("rxtx", "rxtx", "RX verified and TX written by the device (a 10 GbE NIC)"))

# ---- cycles: one row per checksum mode, rounds interleaved ----
for off, suffix, what in CKSUM_MODES:
    row = "C" + suffix
    cyc = []
    for pth in sorted(glob.glob(f"{R}/cycles-{off}-*.txt")):
        m = re.search(r"serve ([\d.]+) cycles/request, macswap ([\d.]+) cycles/packet.*TSC at ([\d.]+) GHz",
                      open(pth).read())
        if m:
            cyc.append((float(m.group(1)), float(m.group(2)), float(m.group(3))))
    if not cyc:
        continue
    cs = statistics.median([c[0] for c in cyc])
    cm = statistics.median([c[1] for c in cyc])
    ghz = cyc[0][2]
    ratios = [c[0] / c[1] for c in cyc if c[1] > 0]
    r = statistics.median(ratios) if ratios else 0
    rows.append((row, f"cycles per request, serve path (fw_lcore_clock + fw_pkt_burst) vs macswap, "
                 f"same mbufs; {what}",
                 f"{cs:.1f} vs {cm:.1f} cycles (TSC {ghz:.2f} GHz): ratio {r:.2f} "
                 f"(runs {', '.join(f'{x:.2f}' for x in ratios)}); {ghz * 1e3 / cs:.1f} M requests/s per core "
                 "before the PMD's RX/TX", "<= 2x macswap", "yes" if r <= 2 else "no"))
    data.setdefault("cycles", {})[off] = {"serve_per_request": cs, "macswap_per_packet": cm,
                                          "ratio": r, "tsc_ghz": ghz}
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
lines.append(f"each row: median of {a.runs} run(s) of {a.duration} s unless stated")
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
data["rows"] = [dict(zip(("id", "benchmark", "result", "target", "met"), r)) for r in rows]
data["notes"] = notes
data["commands"] = [{"row": r, "command": c} for r, c in commands]
json.dump(data, open(f"{a.out}/bench.json", "w"), indent=1)
print(f"table: {a.out}/table.txt\njson:  {a.out}/bench.json")

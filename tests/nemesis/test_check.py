#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The nemesis checker can fail (meson test nemesis-check): it is fed a run
it must pass, then the same run with one duplicated ID (a UUIDv7 of a twin
equal to a Snowflake ID of the node it twins), one decreasing (node,
worker) stream, one interleaved holder (a worker's old holder issuing above
its new holder after a takeover), one CLOCK_UNSAFE reply, a same-state twin
that started and served instead of refusing on the state lock, a forced
fault kind that never healed, and a release fault whose unforced release
of a live holder's worker ID went through and after whose forced release
the next holder issued one of the old holder's IDs again (under the
floor), and must name each of them, with the IDs, nodes and workers
concerned, and nothing else; and the clean run with the old holder issuing
above that floor, which 'release' alone must name. Both runs hold a partition
twin (ptwin1) that issued for 2 s on a worker of its own: not a node, so it
is no failure of 'live'. The plan (scripts/nemesis/plan.py) must put
--force kinds first and refuse one that cannot fit, and the picture
(scripts/nemesis/plot.py) must come out as a PNG with every fault shaded.
It also checks the client's UUIDv7 decoding (lib/wire/PROTOCOL.md's worked
example), on which the UUIDv7 half of the uniqueness check rests.

  test_check.py SCRIPTS_DIR
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

SCRIPTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../scripts")
CHECK = os.path.join(SCRIPTS, "nemesis", "check.py")
EPOCH = 1767225600000
S = 1000000  # us
fails = 0


def ok(name, cond, detail=""):
    global fails
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, "" if cond or not detail else
                       "\n" + detail))
    fails += 0 if cond else 1


def sid(ms, worker, seq):
    return (ms << 22) | (worker << 12) | seq


class Log:
    def __init__(self):
        self.lines = ["L %d 0 10 12" % EPOCH]

    def ok(self, t, worker, first, n=1, op="L"):
        self.lines.append("R %d %d %s 0 %d 0 %d+%d" % (t, t + 200, op, worker, first, n))

    def status(self, t, st, worker):
        self.lines.append("R %d %d I %d %d 4 -" % (t, t + 200, st, worker))

    def timeout(self, t):
        self.lines.append("T %d %d I" % (t, t + 100000))


def write_run(d, bad):
    os.makedirs(os.path.join(d, "clients"))
    t0 = 1000 * S
    ev = ["%d phase start" % t0]
    for n in ("n1", "n2", "n3", "n4"):
        ev.append("%d ident %s %s" % (t0 - 10, n, n))
    ev.append("%d fault kill n1 0" % (t0 + 2 * S))
    ev.append("%d ident n1 n1" % (t0 + 3 * S))
    ev.append("%d heal kill n1" % (t0 + 3 * S + 1000))
    ev.append("%d ident twin1 n1/twin1" % (t0 + 4 * S))
    ev.append("%d fault store-error n2 -1500" % (t0 + 4 * S))
    ev.append("%d heal store-error n2" % (t0 + 5 * S))
    ev.append("%d fault partition-twin n3 0" % (t0 + 5 * S))
    ev.append("%d ident ptwin1 n3/ptwin1" % (t0 + 5 * S + 500000))
    if not bad:  # the broken run's partition-twin never heals
        ev.append("%d heal partition-twin n3" % (t0 + 8 * S))
    ev.append("%d fault release n2 7" % (t0 + 5 * S))
    ev.append("%d heal release n2" % (t0 + 8 * S))
    ev.append("%d phase end" % (t0 + 10 * S))
    # the release: worker 6, n2's, released at 5 s (refused unforced, then forced)
    # with n2's lease (the floor) at ms 7000; n1 claims it at 7 s and issues above
    rd = os.path.join(d, "release", "rel1")
    os.makedirs(rd)
    with open(os.path.join(rd, "outcome"), "w") as f:
        f.write("worker 6 holder n2 unforced %d forced 0 t %d\n" % (0 if bad else 1, t0 + 5 * S))
    with open(os.path.join(rd, "unforced"), "w") as f:
        f.write("worker 6 released in /nemesis\n" if bad else
                "flakectl fleet: worker 6 is held by n2, alive, its lease until "
                "2026-01-01T00:00:07.000Z: it keeps issuing until then whatever the record "
                "says; stop it first (its IDs come back at its next start or lease end), "
                "or --force\n")
    with open(os.path.join(rd, "forced"), "w") as f:
        f.write("worker 6 released in /nemesis\n")
    with open(os.path.join(rd, "ls.after"), "w") as f:
        f.write("WORKER OWNER LEASE_UNTIL LEFT_S FLOOR RENEWED SESSION STATE\n"
                "6      -  2026-01-01T00:00:07.000Z 0.0 2026-01-01T00:00:07.000Z - - free\n")
    logs = {n: Log() for n in ("n1", "n2", "n3", "n4", "twin1", "ptwin1")}
    for k in range(20):  # the partition twin: 2 s on worker 9, no one else's
        logs["ptwin1"].ok(t0 + 6 * S + k * S // 10, 9, sid(7000 + k * 100, 9, 0), 3)
    os.makedirs(os.path.join(d, "twin", "sstwin2"))
    with open(os.path.join(d, "twin", "sstwin2", "outcome"), "w") as f:
        f.write("holder 4242 exit %s\n" % ("running" if bad else "1"))
    with open(os.path.join(d, "twin", "sstwin2", "resp.log"), "w") as f:
        f.write("flakesock: listening on 10.77.0.2 port 4242\n" if bad else
                "flakesock: state /run/n1/mark is locked by PID 4242 (/run/n1/mark.lock): "
                "another responder serves from this state\n")
    with open(os.path.join(d, "run.info"), "w") as f:
        f.write("seed 1\nforced store-error,partition-twin\n")
    for k in range(100):  # 10 s, one request each 100 ms per node
        t = t0 + k * S // 10
        ms = 1000 + k * 100
        if 20 <= k < 30:
            logs["n1"].timeout(t)
        else:
            logs["n1"].ok(t, 1, sid(ms, 1, 0), 3)
        logs["n2"].ok(t, 2, sid(ms, 2, 0), 2, "R")
        logs["n3"].ok(t, 3, sid(ms, 3, 0), 1, "I")
        if k < 40:  # n3 holds worker 5 until 4 s ...
            logs["n3"].ok(t + 50000, 5, sid(ms, 5, 0), 4, "U")
        logs["n4"].ok(t, 4, sid(ms, 4, 0), 5)
        if k >= 60:  # ... n4 takes it over from 6 s, above n3's lease
            logs["n4"].ok(t + 50000, 5, sid(ms + 2000, 5, 0), 2)
        if k < 60:  # n2 holds worker 6 up to its lease (ms 7000) after its release ...
            logs["n2"].ok(t + 30000, 6, sid(ms, 6, 0), 2)
        if k >= 70:  # ... n1 claims it at 7 s, above the floor
            logs["n1"].ok(t + 30000, 6, sid(ms + 1000, 6, 0), 2, "I")
        if k == 69 and bad:  # ... or issues n2's last ID again
            logs["n1"].ok(t + 30000, 6, sid(1000 + 59 * 100, 6, 1), 1, "U")
    if bad:
        # a twin of n1 issues one of n1's IDs again (as a UUIDv7)
        logs["twin1"].ok(t0 + 45 * S // 10, 1, sid(1000 + 50 * 100, 1, 1), 1, "U")
        # n2's worker 2 steps back once (to an ID no one else issued)
        logs["n2"].lines.insert(50, "R %d %d I 0 2 0 %d+1" % (
            t0 + 49 * S // 10 + 500, t0 + 49 * S // 10 + 900, sid(1000 + 10 * 100, 2, 7)))
        # n3, worker 5's old holder, issues above its new holder n4 at 8 s
        logs["n3"].ok(t0 + 8 * S + 70000, 5, sid(1000 + 95 * 100 + 5000, 5, 0), 1, "I")
        # n4 answers CLOCK_UNSAFE once
        logs["n4"].status(t0 + 7 * S + 30000, 5, 4)
    for n, lg in logs.items():
        with open(os.path.join(d, "clients", n + ".log"), "w") as f:
            f.write("\n".join(lg.lines) + "\n")
    with open(os.path.join(d, "events.log"), "w") as f:
        f.write("\n".join(ev) + "\n")
    reg = []
    for k in range(20):  # a snapshot each 0.5 s: worker 5 owned by n3, then n4 from 5 s
        reg.append("# %d" % (t0 + k * S // 2))
        reg.append("WORKER OWNER LEASE_UNTIL LEFT_S FLOOR RENEWED SESSION STATE")
        for w, o in ((1, "n1"), (2, "n2"), (3, "n3"), (4, "n4"), (5, "n3" if k < 10 else "n4"),
                     (6, "n2" if k < 10 else "-" if k < 14 else "n1")):
            reg.append("%-6d %-24s 2026-01-01T00:00:10.000Z 1.5 2026-01-01T00:00:00.000Z "
                       "2026-01-01T00:00:09.000Z %s" % (w, o, "- free" if o == "-" else "alive owned"))
    with open(os.path.join(d, "registry.log"), "w") as f:
        f.write("\n".join(reg) + "\n")


def run(d):
    p = subprocess.run([sys.executable, CHECK, d], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def failed_checks(out):
    return {line.split()[1] for line in out.splitlines() if line.startswith("FAIL ")}


with tempfile.TemporaryDirectory() as tmp:
    good, bad = os.path.join(tmp, "good"), os.path.join(tmp, "bad")
    write_run(good, False)
    write_run(bad, True)
    rc, out = run(good)
    ok("a clean run passes (exit 0, nothing failed)", rc == 0 and not failed_checks(out), out)
    ok("the clean run's figures: takeover of worker 5 seen in the registry, n1's outage "
       "after the kill", "1 owner changes seen in the registry" in out and
       "kill" in out and "availability" in out, out)
    ok("the clean run: the same-state twin refused on the lock, the forced kinds ran, the "
       "partition twin's IDs counted", "1 same-state twin(s), each refused" in out and
       "forced kinds ran: store-error, partition-twin" in out and
       "ptwin1 60 IDs on worker(s) 9" in out, out)
    ok("the clean run: the release refused unforced, forced, n2 issuing up to the floor "
       "after it and n1 above it", "ok   release       1 release(s) refused unforced, forced, "
       "the floor kept: rel1 worker 6 of n2: 10 replies of n2 after, 30 of n1 above the floor"
       in out, out)
    rc, out = run(bad)
    print("\n".join("    " + line for line in out.splitlines()[:12]))
    ok("the broken run fails (exit 1)", rc == 1, out)
    ok("exactly duplicates, streams, holders, clock_unsafe, state_lock, release and faults "
       "fail", failed_checks(out) == {"duplicates", "streams", "holders", "clock_unsafe",
                                      "state_lock", "release", "faults"}, out)
    dup = sid(1000 + 50 * 100, 1, 1)
    ok("the duplicated ID is named, with both nodes",
       "duplicate ID %d (ms %d, worker 1, seq 1): n1 (n1)" % (dup, EPOCH + 6000) in out and
       "twin1 (n1/twin1)" in out, out)
    ok("the decreasing stream is named: n2, worker 2, the lower ID",
       "n2 worker 2 decreases: %d " % sid(2000, 2, 7) in out, out)
    ok("the interleaved holder is named: worker 5, n3 < n4 < n3",
       "worker 5: holders interleave: by value n3 [" in out and "< n4 [" in out and
       out.count("n3 [") >= 2, out)
    ok("the CLOCK_UNSAFE reply is named: n4", "n4: 1 CLOCK_UNSAFE replies" in out, out)
    ok("the same-state twin that served is named, with the holder's PID",
       "sstwin2: a second process on the state file of PID 4242 started and served" in out, out)
    dup6 = sid(1000 + 59 * 100, 6, 1)
    ok("the ID issued again after the forced release is named, with the old and the new "
       "holder", "duplicate ID %d (ms %d, worker 6, seq 1): n2 (n2)" % (dup6, EPOCH + 6900)
       in out and "and n1 (n1) at" in out, out)
    ok("the release accepted without --force is named: worker 6, its live holder n2",
       "rel1: the release of worker 6 without --force, its holder n2 alive, was not refused: "
       "exit 0" in out, out)
    ok("the new holder's ID under the floor is named", "rel1: n1 (n1) issued %s on worker 6 "
       "at or under the floor %d" % ("%d (ms %d, worker 6, seq 1)" % (dup6, EPOCH + 6900),
                                     EPOCH + 7000) in out, out)
    ok("the forced kind that never healed is named: partition-twin",
       "forced fault kind partition-twin never ran to its heal" in out and
       "forced fault kind store-error" not in out, out)

# The old holder issuing above the floor its forced release wrote, received
# while the registry still showed the worker free: 'release' alone names it.
with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "above")
    write_run(d, False)
    path = os.path.join(d, "clients", "n2.log")
    lines = open(path).read().splitlines()
    lines.append("R %d %d I 0 6 0 %d+1" % (1006 * S + 200000, 1006 * S + 200400,
                                          sid(7050, 6, 0)))
    lines[1:] = sorted(lines[1:], key=lambda x: int(x.split()[1]))  # in the order received
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    rc, out = run(d)
    ok("the old holder's ID above the floor after its release is named (and nothing else)",
       rc == 1 and failed_checks(out) == {"release"} and
       "rel1: n2 (n2), worker 6's holder when it was released, issued %d (ms %d, worker 6, "
       "seq 0) above the floor %d written then, without claiming it again" % (
           sid(7050, 6, 0), EPOCH + 7050, EPOCH + 7000) in out, out)

# A snapshot-restore fault: copied, restored, fenced, and seen gone back by a
# node ('restore' passes); one whose fence failed and that no node saw fails
# 'restore' alone, naming the fence's output.
def add_restore(d, fence_rc, seen, fresh=None):
    t = 1000 * S + 6 * S
    with open(os.path.join(d, "events.log"), "a") as f:
        f.write("%d fault snapshot-restore store 0\n" % t)
        f.write("%d note store snapshot saved\n" % (t + 100000))
        f.write("%d note store restored from the snapshot of 4000 ms before: exit 0\n" % (t + S))
        if fresh == "refused":
            f.write("%d note fresh1 twin exited by itself: exit 1: fleet: /nemesis: stopped by "
                    "/nemesis/stopped: n1 saw at X: the store went back\n" % (t + S + 1000))
        elif fresh == "ran":
            f.write("%d note fresh1 twin still running at the end: SIGTERM; exit 0\n" %
                    (t + S + 1000))
        f.write("%d note store fleet fence: exit %d: %s\n" % (
            t + 2 * S, fence_rc, "fenced /nemesis: no claim issues below X" if fence_rc == 0
            else "flakectl fleet fence: the registry did not answer"))
        f.write("%d heal snapshot-restore store\n" % (t + 3 * S))
    os.makedirs(os.path.join(d, "n1"))
    with open(os.path.join(d, "n1", "resp.log"), "w") as f:
        f.write("fleet: n1: /nemesis: the store's writes went back to before some this node "
                "saw\n" if seen else "flakesock: listening\n")


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "restored")
    write_run(d, False)
    add_restore(d, 0, True)
    rc, out = run(d)
    ok("a snapshot-restore copied, restored, fenced and seen by n1 passes 'restore'",
       rc == 0 and "ok   restore       1 snapshot-restore(s) copied, restored, fenced; seen "
       "gone back by n1" in out, out)
    d = os.path.join(tmp, "fresh-refused")
    write_run(d, False)
    add_restore(d, 0, True, "refused")
    rc, out = run(d)
    ok("a snapshot-restore whose fresh process the stop record refused passes 'restore'",
       rc == 0 and "ok   restore" in out, out)
    d = os.path.join(tmp, "fresh-ran")
    write_run(d, False)
    add_restore(d, 0, True, "ran")
    rc, out = run(d)
    ok("a snapshot-restore whose fresh process ran before the fence fails 'restore' alone",
       rc == 1 and failed_checks(out) == {"restore"} and
       "the fresh process started before the fence was not refused" in out, out)
    d = os.path.join(tmp, "unfenced")
    write_run(d, False)
    add_restore(d, 1, False)
    rc, out = run(d)
    ok("a snapshot-restore whose fence failed, seen by no node, fails 'restore' alone",
       rc == 1 and failed_checks(out) == {"restore"} and
       "snapshot-restore 1: the fence failed: fleet fence: exit 1: flakectl fleet fence: the "
       "registry did not answer" in out and "and no node's log says the registry went back" in out,
       out)

# The plan: --force puts the forced kinds first and fails when one cannot fit.
PLAN = os.path.join(SCRIPTS, "nemesis", "plan.py")
base = [sys.executable, PLAN, "--seed", "4", "--nodes", "n1,n2,n3,n4", "--lease-ms", "2000",
        "--renew-ms", "500", "--sock-nodes", "n1,n2,n3", "--long-node", "n3"]
forced = ["partition-twin", "same-state-twin", "store-error", "release"]
p = subprocess.run(base + ["--seconds", "79", "--force", ",".join(forced)],
                   capture_output=True, text=True, timeout=30)
lines = [x.split() for x in p.stdout.splitlines()]
ok("plan --force: the forced kinds first, partition-twin on the long-lease node n3, the "
   "same-state twin on a flakesock node, replace, release and graceful elsewhere",
   p.returncode == 0 and sorted(x[0] for x in lines[:4]) == sorted(forced) and
   all(x[1] == "n3" for x in lines if x[0] == "partition-twin") and
   all(x[1] in ("n1", "n2", "n3") for x in lines if x[0] == "same-state-twin") and
   all(x[1] != "n3" for x in lines if x[0] in ("replace", "release", "graceful")),
   p.stdout + p.stderr)
p3 = subprocess.run(base + ["--seconds", "79", "--kinds", "kill,stop,twin,zk-cut-long"],
                    capture_output=True, text=True, timeout=30)
ok("plan: an explicit --kinds list without release draws as before it was added (seed 4)",
   p3.returncode == 0 and p3.stdout.split("\n")[:3] == [
       "twin n4 2478 0 1135", "kill n1 982 0 2376", "zk-cut-long n1 3665 0 1805"],
   p3.stdout + p3.stderr)
p2 = subprocess.run(base + ["--seconds", "79", "--force", ",".join(forced)],
                    capture_output=True, text=True, timeout=30)
ok("plan: the same seed, the same plan", p.stdout == p2.stdout)
p = subprocess.run(base + ["--seconds", "12", "--force", ",".join(forced)],
                   capture_output=True, text=True, timeout=30)
ok("plan --force: a forced kind that does not fit fails the plan (exit 2)",
   p.returncode == 2 and "does not fit" in p.stderr, p.stdout + p.stderr)

# The picture: a PNG from the clean run (gnuplot-nox; under CI=true it must be there).
with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "good")
    write_run(good, False)
    png = os.path.join(tmp, "ids.png")
    if subprocess.run(["sh", "-c", "command -v gnuplot"], capture_output=True).returncode != 0 \
            and os.environ.get("CI") != "true":
        print("skip the picture: gnuplot missing (gnuplot-nox)")
    else:
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "nemesis", "plot.py"), good, png],
                           capture_output=True, text=True, timeout=60)
        head = open(png, "rb").read(8) if os.path.exists(png) else b""
        gp = open(os.path.join(good, "plot", "ids.gp")).read() if p.returncode == 0 else ""
        ok("nemesis/plot.py draws a PNG: one line per node and twin, each fault shaded",
           p.returncode == 0 and head == b"\x89PNG\r\n\x1a\n" and gp.count(" rect from ") == 4 and
           all('title "%s"' % n in gp for n in ("n1", "n2", "n3", "n4", "ptwin1")),
           p.stdout + p.stderr)

# The UUIDv7 half of the key space: PROTOCOL.md section 2's worked example.
spec = importlib.util.spec_from_file_location("nemesis_client",
                                              os.path.join(SCRIPTS, "nemesis", "client.py"))
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)
lay = client.Layout(EPOCH, 0, 10, 12)
u = bytes.fromhex("019b76daabe87005807f7abcdef01234")
ok("UUIDv7 019b76da-abe8-7005-807f-7abcdef01234 is the Snowflake ID of (ms 1000, worker 7, "
   "seq 5)", lay.key_of_uuid(u, 7) == sid(1000, 7, 5), str(lay.key_of_uuid(u, 7)))
ok("a UUIDv7 whose worker field differs from the reply's worker is refused",
   isinstance(lay.key_of_uuid(u, 8), str))
ok("a UUIDv7 without the 0xF7 tag is refused",
   isinstance(lay.key_of_uuid(bytes.fromhex("019b76daabe87005807f8abcdef01234"), 7), str))
ok("runs: consecutive IDs fold into one run", client.runs_of([5, 6, 7, 9]) == [[5, 3], [9, 1]])
print("%d check(s) failed" % fails if fails else "all checks passed")
sys.exit(1 if fails else 0)

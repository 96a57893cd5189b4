#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The nemesis run's checker (scripts/nemesis.sh; doc/nemesis.md): reads a
run's directory and decides.

  scripts/nemesis/check.py RUN_DIR

RUN_DIR holds events.log (what the nemesis did, unix us: "T ident NODE
IDENTITY", "T fault KIND TARGET PARAM", "T heal KIND TARGET", "T phase
start|settle|end", "T note ..."), clients/NODE.log (every reply a node's
client got, scripts/nemesis/client.py), registry.log (flakectl fleet ls
every 0.5 s, each after a "# T" line) and the responders' logs
(NODE/resp.log, twin/*/resp.log), all optional but the client logs.

Checks (each names what broke, with the IDs, nodes and workers):
  duplicates    no ID twice across the fleet: Snowflake IDs and UUIDv7 alike
                (a UUIDv7 counts as the Snowflake ID of its ms, counter and
                worker, which the generator never issues twice either)
  streams       every (node, worker) stream strictly increasing, in the order
                the node's client received it (it has one request in flight)
  holders       successive holders of a worker never interleave: ordered by
                value, a worker's IDs fall into runs by holder, and the runs
                follow the order in which the registry saw those owners
                (a holder's IDs below and above another's is interleaving)
  clock_unsafe  no reply with status CLOCK_UNSAFE
  protocol      no reply that breaks lib/wire/PROTOCOL.md
  live          every node issued IDs in the last 3 s of the run
  state_lock    every same-state twin (a second process on a node's own
                state file, twin/sstwinK/) refused to start: it exited
                non-zero, its log names the lock ("locked") and the PID of
                the node holding it (twin/sstwinK/outcome: "holder PID exit RC")
  release       every release fault (release/relK/) went as an operator's
                mistake must: the release without --force was refused (exit 1,
                naming the live holder: "is held by H, alive"), the forced one
                went through (exit 0); and the floor it wrote (release/relK/
                ls.after: the holder's lease then) split worker W's IDs: the
                old holder issued none above it (unless it claimed W again,
                and then none received while a registry snapshot after the
                release still showed W free under that floor), and nobody
                else issued one at or under it after the release. (The IDs on W before and after the release, from
                every holder, are in the duplicates check like all others.)
  restore       every snapshot-restore fault went as an operator's restore
                must: the copy made ("snapshot saved"), the registry restored
                from it ("restored ... exit 0"), `flakectl fleet fence` exit 0,
                and some node saying it saw the registry go back ("went back",
                or the root "of another generation" once fenced); the fresh
                process started after the restore, before the fence (freshK:
                its own identity and state), refused by itself (exit not 0,
                naming the stop record: "stopped"), when the run started one.
                The IDs around it, the fresh process's included, are in the
                duplicates check like all others.
  faults        every kind run.info calls forced ("forced K1,K2") ran and
                was healed
Figures: IDs (by op), replies by status, availability per node (250 ms
windows with an ID), takeovers, per fault kind the time from the fault to
the node's first refused reply and from the heal to its first ID again,
events by kind. Exit 0 when every check holds, 1 otherwise, 2 on bad input.
"""
import bisect
import collections
import datetime
import glob
import os
import re
import statistics
import sys

STATUS = {0: "OK", 1: "BAD_REQUEST", 2: "BAD_VERSION", 3: "RETRY_AFTER", 4: "REFUSED",
          5: "CLOCK_UNSAFE", 6: "NO_LEASE"}
OPS = {"I": "ID", "L": "LIST", "R": "RANGE", "U": "UUID7"}
BUCKET_US = 250000
EXAMPLES = 5


class Run:
    def __init__(self, d):
        self.dir = d
        self.events = []  # (t, word, args)
        self.idents = collections.defaultdict(list)  # node -> [(t, identity)]
        self.faults = []  # [t, kind, target, param, t_heal]
        self.phase = {}
        self.layout = None
        self.recs = {}  # node -> list of records
        self.snaps = []  # (t, {worker: (owner, state, floor)})
        self.resp_logs = {}
        self.info = {}  # run.info: first word -> the rest
        self.outcomes = {}  # same-state twin -> (holder PID, exit status or "running")
        self.releases = {}  # relK -> dict (release/relK/: outcome, outputs, floor)

    def load(self):
        ev = os.path.join(self.dir, "events.log")
        if os.path.exists(ev):
            open_f = {}
            for line in open(ev):
                p = line.split()
                if len(p) < 2:
                    continue
                t, w, a = int(p[0]), p[1], p[2:]
                self.events.append((t, w, a))
                if w == "ident" and len(a) >= 2:
                    self.idents[a[0]].append((t, a[1]))
                elif w == "phase" and a:
                    self.phase.setdefault(a[0], t)
                elif w == "fault" and len(a) >= 2:
                    f = [t, a[0], a[1], a[2] if len(a) > 2 else "0", None]
                    self.faults.append(f)
                    open_f[(a[0], a[1])] = f
                elif w == "heal" and len(a) >= 2 and (a[0], a[1]) in open_f:
                    open_f.pop((a[0], a[1]))[4] = t
        for path in sorted(glob.glob(os.path.join(self.dir, "clients", "*.log"))):
            node = os.path.basename(path)[:-4]
            if node.endswith(".resp"):
                continue
            self.recs[node] = self.load_client(path)
        reg = os.path.join(self.dir, "registry.log")
        if os.path.exists(reg):
            self.load_registry(reg)
        for path in glob.glob(os.path.join(self.dir, "n*", "resp.log")) + \
                glob.glob(os.path.join(self.dir, "twin", "*", "resp.log")):
            self.resp_logs[path] = open(path, errors="replace").read()
        info = os.path.join(self.dir, "run.info")
        if os.path.exists(info):
            for line in open(info):
                p = line.split(None, 1)
                if p:
                    self.info[p[0]] = p[1].strip() if len(p) > 1 else ""
        for path in glob.glob(os.path.join(self.dir, "twin", "*", "outcome")):
            p = open(path).read().split()
            if len(p) >= 4 and p[0] == "holder" and p[2] == "exit":
                self.outcomes[os.path.basename(os.path.dirname(path))] = (p[1], p[3])

        for path in glob.glob(os.path.join(self.dir, "release", "rel*", "outcome")):
            d = os.path.dirname(path)
            p = open(path).read().split()
            if len(p) < 10 or p[0] != "worker":
                raise ValueError("%s: not \"worker W holder H unforced RC forced RC t US\"" % path)
            r = {"worker": p[1], "holder": p[3], "unforced": p[5], "forced": p[7],
                 "t": int(p[9]), "floor": None, "after": {}}
            for f in ("unforced", "forced"):
                fp = os.path.join(d, f)
                r[f + "_text"] = open(fp, errors="replace").read().strip() \
                    if os.path.exists(fp) else ""
            for f in ("after",):
                fp = os.path.join(d, "ls." + f)
                if os.path.exists(fp):
                    for line in open(fp):
                        q = line.split()
                        if len(q) == 8 and q[0] == r["worker"]:
                            r[f] = {"owner": q[1] if q[1] != "-" else "", "floor": q[4],
                                    "state": q[7]}
            if r["after"]:
                r["floor"] = iso_ms(r["after"]["floor"])
            self.releases[os.path.basename(d)] = r

    def load_client(self, path):
        recs = []
        for line in open(path):
            p = line.split()
            if not p or p[0].startswith("#"):
                continue
            if p[0] == "L":
                lay = tuple(int(x) for x in p[1:5])
                if self.layout is None:
                    self.layout = lay
                elif self.layout != lay:
                    raise ValueError("%s: layout %s, another client saw %s" % (path, lay, self.layout))
            elif p[0] == "R":
                runs = []
                if p[7] != "-":
                    for r in p[7].split(","):
                        f, n = r.split("+")
                        runs.append((int(f), int(n)))
                recs.append(("R", int(p[1]), int(p[2]), p[3], int(p[4]), int(p[5]), int(p[6]), runs))
            elif p[0] == "T":
                recs.append(("T", int(p[1]), int(p[2]), p[3], -1, -1, 0, []))
            elif p[0] == "X":
                recs.append(("X", int(p[1]), int(p[2]), p[3], -2, -1, 0, [], " ".join(p[4:])))
        return recs

    def load_registry(self, path):
        t, cur = None, None
        for line in open(path):
            if line.startswith("# "):
                if cur:
                    self.snaps.append((t, cur))
                try:
                    t, cur = int(line.split()[1]), {}
                except (IndexError, ValueError):
                    t, cur = None, None
                continue
            p = line.split()
            if cur is None or len(p) != 8 or not p[0].isdigit() or \
                    p[7] not in ("owned", "expired", "free"):
                continue
            cur[int(p[0])] = (p[1] if p[1] != "-" else "", p[-1], p[4])
        if cur:
            self.snaps.append((t, cur))

    def holder(self, node, t):
        """The identity (a twin: IDENTITY/twinK) node ran under at time t."""
        v = self.idents.get(node)
        if not v:
            return node
        i = bisect.bisect_right(v, (t, "\uffff")) - 1
        return v[max(i, 0)][1]


def iso_ms(text):
    """Unix ms of flakectl's 2026-12-01T01:08:56.982Z; None if it is not one."""
    try:
        t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    return (t.replace(tzinfo=datetime.timezone.utc) -
            datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // \
        datetime.timedelta(milliseconds=1)


def is_twin(name):
    """A twin's client or log name: twinK, ptwinK (partition), sstwinK (same state),
    freshK (a fresh process on a restored registry)."""
    return re.match(r"((p|ss)?twin|fresh)\d+$", name) is not None


def identity_of(label):
    return label.split("/", 1)[0]


def fmt_ms(us):
    return "%.0f ms" % (us / 1000.0)


def describe_id(lay, i):
    epoch, dc, w, s = lay
    return "%d (ms %d, worker %d, seq %d)" % (i, (i >> (dc + w + s)) + epoch,
                                            (i >> s) & ((1 << w) - 1), i & ((1 << s) - 1))


def check_releases(run, per_worker, lay):
    """(problems, ok text) of the release faults: refused, then forced, and the
    floor the forced release wrote keeps the old and the next holders apart."""
    bad, summary = [], []
    epoch, _dcb, wb, sb = lay
    shift = wb + sb + _dcb

    def ms(i):
        return (i >> shift) + epoch

    for rel, r in sorted(run.releases.items(), key=lambda kv: int(kv[0][3:] or 0)):
        h, w = r["holder"], r["worker"]
        if w == "-":
            bad.append("%s: %s held no worker ID with a live session: nothing released" % (rel, h))
            continue
        if r["unforced"] != "1":
            bad.append("%s: the release of worker %s without --force, its holder %s alive, "
                       "was not refused: exit %s: %s" % (rel, w, h, r["unforced"],
                                                          r["unforced_text"][:120] or "no output"))
        elif not re.search(r"is held by %s, alive" % re.escape(h), r["unforced_text"]):
            bad.append("%s: the release of worker %s without --force was refused without naming "
                       "its live holder %s: %s" % (rel, w, h, r["unforced_text"][:120] or "no output"))
        if r["forced"] != "0" or "released" not in r["forced_text"]:
            bad.append("%s: the forced release of worker %s (holder %s) did not go through: exit "
                       "%s: %s" % (rel, w, h, r["forced"], r["forced_text"][:120] or "no output"))
            continue
        floor = r["floor"]
        if floor is None:
            bad.append("%s: worker %s: no floor read after the forced release (release/%s/"
                       "ls.after)" % (rel, w, rel))
            continue
        wi = int(w)
        # the old holder claimed W again after the release: its IDs above the
        # floor are that claim's, once the registry shows it; before that, a
        # snapshot still showing W free under this floor bounds them (t_free)
        later = [(t, snap[wi]) for t, snap in run.snaps if t > r["t"] and wi in snap]
        again = any(x[0] == h for _t, x in later) or r["after"].get("owner") == h
        t_free = r["t"]
        for t, x in later:
            if x[0] or x[2] != r["after"]["floor"]:
                break
            t_free = t
        old_n = old_above = new_n = 0
        others = set()
        for lo, hi, hh, node, t in per_worker.get(wi, []):
            if identity_of(hh) == h:
                if t > r["t"]:
                    old_n += 1
                if ms(hi) > floor and (not again or t <= t_free):
                    old_above += 1
                    if old_above <= 2:
                        bad.append("%s: %s (%s), worker %s's holder when it was released, issued "
                                   "%s above the floor %d written then, %s" % (
                                       rel, node, hh, w, describe_id(lay, hi), floor,
                                       "without claiming it again" if not again else
                                       "while the registry still showed it free (at %d)" % t_free))
            elif t > r["t"]:
                new_n += 1
                others.add(identity_of(hh))
                if ms(lo) <= floor:
                    bad.append("%s: %s (%s) issued %s on worker %s at or under the floor %d "
                               "(%s's lease when it was released) after the release" % (
                                   rel, node, hh, describe_id(lay, lo), w, floor, h))
        summary.append("%s worker %s of %s: %d replies of %s after, %s" % (
            rel, w, h, old_n, h, "%d of %s above the floor" % (new_n, ",".join(sorted(others)))
            if others else "no other holder" + (", %s claimed it again" % h if again else "")))
    text = ("%d release(s) refused unforced, forced, the floor kept: " % len(run.releases) +
            "; ".join(summary)) if run.releases else "no release in this run"
    return bad, text


def check_restores(run):
    """(problems, ok text) of the snapshot-restore faults: each copied, restored
    and fenced (its notes in events.log), and the nodes saw the registry go back."""
    bad = []
    refused = 0
    faults = [f for f in run.faults if f[1] == "snapshot-restore"]
    if not faults:
        return bad, "no snapshot-restore in this run"
    for k, f in enumerate(faults, 1):
        end = f[4] if f[4] is not None else float("inf")
        notes = [" ".join(a[1:]) for t, w, a in run.events
                 if w == "note" and a and a[0] == "store" and f[0] <= t <= end]
        if "snapshot saved" not in notes:
            bad.append("snapshot-restore %d: no copy made: %s" % (
                k, next((x for x in notes if x.startswith("snapshot")), "no note")))
        r = next((x for x in notes if x.startswith("restored from")), "")
        if not r.endswith("exit 0"):
            bad.append("snapshot-restore %d: the registry was not restored: %s" % (k, r or "no note"))
        fe = next((x for x in notes if x.startswith("fleet fence:")), "")
        if not fe.startswith("fleet fence: exit 0"):
            bad.append("snapshot-restore %d: the fence failed: %s" % (k, fe[:140] or "no note"))
        fresh = [" ".join(a[1:]) for t, w, a in run.events
                 if w == "note" and a and a[0] == "fresh%d" % k and f[0] <= t <= end]
        if fresh and not (re.search(r"exited by itself: exit [1-9]", fresh[0]) and
                          "stopped" in fresh[0]):
            bad.append("snapshot-restore %d: the fresh process started before the fence was "
                       "not refused by the stop record: %s" % (k, fresh[0][:160]))
        refused += bool(fresh)
    seen = sorted(os.path.basename(os.path.dirname(p)) for p, text in run.resp_logs.items()
                  if "/twin/" not in p and re.search(r"went back|of another generation", text))
    if not seen:
        bad.append("%d snapshot-restore(s), and no node's log says the registry went back" %
                   len(faults))
    return bad, "%d snapshot-restore(s) copied, restored, fenced; seen gone back by %s; %d fresh " \
        "process(es) refused before the fence" % (len(faults), ", ".join(seen), refused)


def check(run):
    out = []  # report lines
    fails = []
    lay = run.layout or (1767225600000, 0, 10, 12)
    epoch, dcb, wb, sb = lay

    def worker_of(i):
        return (i >> sb) & ((1 << wb) - 1)

    # ---- gather ----
    firsts, ends, owner_idx = [], [], []
    owners = []  # (node, holder, t_recv)
    ids_by_op = collections.Counter()
    status = collections.defaultdict(collections.Counter)
    unsafe = collections.Counter()
    protocol = []
    stream_bad = []
    per_worker = collections.defaultdict(list)  # worker -> [(min, max, holder, node, t)]
    pairs = set()
    for node, recs in sorted(run.recs.items()):
        last = {}
        for r in recs:
            kind, t0, t1, op = r[0], r[1], r[2], r[3]
            if kind == "T":
                status[node]["timeout"] += 1
                continue
            if kind == "X":
                status[node]["protocol error"] += 1
                protocol.append("%s %s reply at %d: %s" % (node, OPS.get(op, op), t1, r[8]))
                continue
            st, worker, runs = r[4], r[5], r[7]
            status[node][STATUS.get(st, str(st))] += 1
            if st == 5:
                unsafe[node] += 1
            if st != 0 or not runs:
                continue
            h = run.holder(node, t1)
            oi = len(owners)
            owners.append((node, h, t1, worker))
            pairs.add((identity_of(h), worker))
            prev_end = None
            for f, n in runs:
                if prev_end is not None and f < prev_end:
                    protocol.append("%s %s reply at %d: IDs not increasing within the reply" % (
                        node, OPS[op], t1))
                prev_end = f + n
                firsts.append(f)
                ends.append(f + n)
                owner_idx.append(oi)
                ids_by_op[op] += n
                if worker_of(f) != worker or worker_of(f + n - 1) != worker:
                    protocol.append("%s: ID %d outside the reply's worker %d" % (node, f, worker))
            lo, hi = runs[0][0], runs[-1][0] + runs[-1][1] - 1
            key = (node, worker)
            if key in last and lo <= last[key][0]:
                stream_bad.append((node, worker, last[key], (lo, t1)))
            if key not in last or hi > last[key][0]:
                last[key] = (hi, t1)
            per_worker[worker].append((lo, hi, h, node, t1))

    # ---- duplicates ----
    dups = []
    order = sorted(range(len(firsts)), key=firsts.__getitem__)
    max_end, max_i = -1, -1
    n_dup = 0
    for j in order:
        if firsts[j] < max_end:
            n_dup += min(ends[j], max_end) - firsts[j]
            if len(dups) < EXAMPLES:
                a, b = owners[owner_idx[max_i]], owners[owner_idx[j]]
                dups.append("duplicate ID %s: %s (%s) at %d and %s (%s) at %d" % (
                    describe_id(lay, firsts[j]), a[0], a[1], a[2], b[0], b[1], b[2]))
        if ends[j] > max_end:
            max_end, max_i = ends[j], j

    # ---- holders ----
    periods = collections.defaultdict(list)  # worker -> [owner] collapsed, owners only
    raw = collections.defaultdict(list)  # worker -> [(t, owner or "")] collapsed
    for t, snap in run.snaps:
        for w, (own, _state, _floor) in snap.items():
            if not raw[w] or raw[w][-1][1] != own:
                raw[w].append((t, own))
            if own and (not periods[w] or periods[w][-1] != own):
                periods[w].append(own)
    interleave = []
    for w, v in sorted(per_worker.items()):
        v.sort()
        runs = []  # [holder, lo, hi]
        for lo, hi, h, _node, _t in v:
            if runs and runs[-1][0] == h:
                runs[-1][2] = max(runs[-1][2], hi)
            else:
                runs.append([h, lo, hi])
        per = periods.get(w, [])
        p = 0
        seen_unknown = set()
        for k, (h, lo, hi) in enumerate(runs):
            ident = identity_of(h)
            q = next((k for k in range(p, len(per)) if per[k] == ident), None)
            if q is not None:
                p = q
                continue
            if ident not in per and ident not in seen_unknown:
                seen_unknown.add(ident)
                continue
            interleave.append("worker %d: holders interleave: by value %s (registry order: %s)" % (
                w, " < ".join("%s [%d..%d]" % (x[0], x[1], x[2]) for x in runs[max(0, k - 3):k + 1]),
                ", ".join(per) or "none seen"))
            break

    # ---- takeovers ----
    takeovers_reg = 0
    handovers = 0
    for w, v in raw.items():
        for (_t0, a), (_t1, b) in zip(v, v[1:]):
            if a and b and a != b:
                takeovers_reg += 1
        owners_seq = [o for _t, o in v]
        for k in range(1, len(owners_seq) - 1):
            if owners_seq[k] == "" and owners_seq[k - 1] and owners_seq[k + 1] and \
                    owners_seq[k - 1] != owners_seq[k + 1]:
                handovers += 1
    takeovers_log = sum(len(re.findall(r"fleet: worker \d+ taken over for slot", s))
                        for s in run.resp_logs.values())
    unregistered = sorted(pr for pr in pairs if run.snaps and
                          pr[0] not in periods.get(pr[1], []))

    # ---- availability, fault timings, liveness ----
    t_start = run.phase.get("start")
    t_end = run.phase.get("end")
    nodes = sorted((n for n in run.recs if not is_twin(n)),
                   key=lambda x: (len(x), x))
    if t_start is None:
        t_start = min((r[1] for n in nodes for r in run.recs[n]), default=0)
    if t_end is None:
        t_end = max((r[2] for n in nodes for r in run.recs[n]), default=t_start)
    avail = {}
    dead = []
    for n in nodes:
        buckets = set()
        last_ok = None
        for r in run.recs[n]:
            if r[0] == "R" and r[4] == 0 and r[7] and t_start <= r[2] <= t_end:
                buckets.add((r[2] - t_start) // BUCKET_US)
                last_ok = r[2]
        total = max(1, (t_end - t_start + BUCKET_US - 1) // BUCKET_US)
        avail[n] = 100.0 * len(buckets) / total
        if last_ok is None or last_ok < t_end - 3000000:
            dead.append("%s issued no ID in the last 3 s of the run (last ID %s)" % (
                n, "never" if last_ok is None else fmt_ms(t_end - last_ok) + " before the end"))

    kinds = collections.OrderedDict()
    sends = {n: [r[1] for r in run.recs[n]] for n in nodes}
    for f in run.faults:
        t, kind, target, _param, heal = f
        k = kinds.setdefault(kind, {"n": 0, "refused": 0, "to_refusal": [], "to_id": [],
                                    "node_faults": 0, "down": 0})
        k["n"] += 1
        targets = nodes if target in ("store", "-") else [target]
        nxt = min([g[0] for g in run.faults if g[0] > t] or [t_end])
        for n in targets:
            if n not in run.recs:
                continue
            k["node_faults"] += 1
            recs = run.recs[n]
            i = bisect.bisect_left(sends[n], t)
            if i > 0 and not (recs[i - 1][0] == "R" and recs[i - 1][4] == 0):
                k["down"] += 1  # still refusing since an earlier fault: not this one's
                continue
            refused_at = None
            for r in recs[i:]:
                if r[1] >= nxt:
                    break
                if r[0] == "T" or (r[0] == "R" and r[4] != 0):
                    refused_at = r[2]
                    break
            if refused_at is None:
                continue
            k["refused"] += 1
            k["to_refusal"].append(refused_at - t)
            h = heal if heal is not None else t
            for r in recs[i:]:
                if r[2] >= max(h, refused_at) and r[0] == "R" and r[4] == 0 and r[7]:
                    k["to_id"].append(r[2] - h)
                    break

    # ---- report ----
    def result(name, problems, ok_text):
        if problems:
            fails.append(name)
            out.append("FAIL %-13s %s" % (name, problems[0]))
            for p in problems[1:EXAMPLES]:
                out.append("     %-13s %s" % ("", p))
            if len(problems) > EXAMPLES:
                out.append("     %-13s ... %d in all" % ("", len(problems)))
        else:
            out.append("ok   %-13s %s" % (name, ok_text))

    n_ids = sum(ids_by_op.values())
    result("duplicates", (["%d ID(s) issued more than once; the first:" % n_dup] + dups[:EXAMPLES - 1])
           if dups else [],
           "no ID twice among %d (Snowflake and UUIDv7)" % n_ids)
    result("streams", ["%s worker %d decreases: %s at %d after %s at %d" % (
        n, w, describe_id(lay, b[0]), b[1], describe_id(lay, a[0]), a[1])
        for n, w, a, b in stream_bad],
        "%d (node, worker) streams strictly increasing" % len(
            {(o[0], o[3]) for o in owners}))
    result("holders", interleave, "%d workers, their holders never interleave" % len(per_worker))
    result("clock_unsafe", ["%s: %d CLOCK_UNSAFE replies" % (n, c) for n, c in sorted(unsafe.items())],
           "no CLOCK_UNSAFE reply")
    result("protocol", protocol, "every reply well formed")
    result("live", dead, "every node issued IDs in the last 3 s")
    lock_bad = []
    for tw, (holder, rc) in sorted(run.outcomes.items()):
        text = run.resp_logs.get(os.path.join(run.dir, "twin", tw, "resp.log"), "")
        line = next((x for x in text.splitlines() if "locked" in x), "")
        if rc == "running":
            lock_bad.append("%s: a second process on the state file of PID %s %s (SIGTERM at "
                            "the end); its last line: %s" % (
                                tw, holder, "started and served" if re.search(
                                    r"listening on|running on", text) else "had not exited",
                                (text.strip().splitlines() or ["empty"])[-1][:120]))
        elif rc == "0" or not line or not re.search(r"\b%s\b" % re.escape(holder), line):
            lock_bad.append("%s: exit %s without naming the lock held by PID %s: %s" % (
                tw, rc, holder, (line or (text.strip().splitlines() or ["empty log"])[0])[:140]))
    result("state_lock", lock_bad, "%d same-state twin(s), each refused: locked by the "
           "node's PID" % len(run.outcomes) if run.outcomes else "no same-state twin in this run")
    rel_bad, rel_text = check_releases(run, per_worker, lay)
    result("release", rel_bad, rel_text)
    res_bad, res_text = check_restores(run)
    result("restore", res_bad, res_text)
    forced = [k for k in run.info.get("forced", "-").split(",") if k and k != "-"]
    healed = {f[1] for f in run.faults if f[4] is not None}
    result("faults", ["forced fault kind %s never ran to its heal" % k for k in forced
                      if k not in healed],
           "forced kinds ran: %s" % ", ".join(forced) if forced else "no kind forced")

    out.append("")
    out.append("IDs: %d (%s)" % (n_ids, ", ".join("%s %d" % (OPS[o], ids_by_op[o])
                                                  for o in "ILRU" if ids_by_op[o])))
    out.append("replies by node and status:")
    for n in sorted(status, key=lambda x: (is_twin(x), len(x), x)):
        c = status[n]
        tot = sum(c.values())
        out.append("  %-8s %8d requests: %s" % (n, tot, ", ".join(
            "%s %d" % (s, v) for s, v in sorted(c.items(), key=lambda x: -x[1]))))
    out.append("availability (250 ms windows with an ID, whole run): " + ", ".join(
        "%s %.1f %%" % (n, avail[n]) for n in nodes))
    out.append("takeovers: %d (responders' logs: \"taken over\"), %d owner changes seen in the "
               "registry without a release, %d handovers through a release" % (
                   takeovers_log, takeovers_reg, handovers))
    twins = sorted(n for n in run.recs if re.match(r"twin\d+$", n))
    if twins:
        refused = sum(1 for path, text in run.resp_logs.items()
                      if "/twin/" in path and re.search(r"identity \S+ is in use", text))
        twin_ids = sum(n for t in twins for r in run.recs[t] if r[0] == "R" and r[4] == 0
                       for _f, n in r[7])
        out.append("twins: %d started with a live node's identity, %d refused by the registry "
                   "(\"identity ... is in use\"), %d IDs issued by twins" % (
                       len(twins), refused, twin_ids))
    ptwins = sorted(n for n in run.recs if n.startswith("ptwin"))
    if ptwins:
        per = []
        for t in ptwins:
            ids = sum(n for r in run.recs[t] if r[0] == "R" and r[4] == 0 for _f, n in r[7])
            ws = sorted({r[5] for r in run.recs[t] if r[0] == "R" and r[4] == 0 and r[7]})
            st = collections.Counter(STATUS.get(r[4], "timeout" if r[0] == "T" else str(r[4]))
                                     for r in run.recs[t])
            per.append("%s %d IDs on worker(s) %s (%s)" % (
                t, ids, ",".join(map(str, ws)) or "-",
                ", ".join("%s %d" % kv for kv in st.most_common(3))))
        out.append("partition twins (the partitioned node's identity, an empty state dir): " +
                   "; ".join(per))
    if unregistered:
        out.append("(identity, worker) pairs that issued but were never seen owning in the "
                   "0.5 s registry snapshots: %s" % ", ".join("%s/%d" % p for p in unregistered[:10]))
    out.append("faults (refused: the node's first non-OK reply or timeout after the fault; "
               "ID again: its first ID after the heal):")
    out.append("  %-17s %3s %8s  %-22s %-22s %s" % (
        "kind", "n", "refused", "fault->refused med/max", "heal->ID med/max",
        "(node not issuing when it began)"))
    for kind, k in kinds.items():
        def mm(v):
            return "-" if not v else "%s / %s" % (fmt_ms(statistics.median(v)), fmt_ms(max(v)))
        out.append("  %-17s %3d %4d/%-3d  %-22s %-22s %s" % (
            kind, k["n"], k["refused"], k["node_faults"] - k["down"], mm(k["to_refusal"]),
            mm(k["to_id"]), k["down"] or ""))
    ev_count = collections.Counter(w for _t, w, _a in run.events if w in ("fault",))
    notes = collections.Counter()
    for _t, w, a in run.events:
        if w == "note" and len(a) >= 2:
            notes[re.sub(r"\d+", "N", " ".join(a[1:]))[:90]] += 1
    out.append("events: %d faults (%s)" % (ev_count["fault"], ", ".join(
        "%s %d" % (k, v["n"]) for k, v in kinds.items())))
    for k, v in notes.most_common(12):
        out.append("  note x%d: %s" % (v, k))
    out.insert(0, "nemesis check: %s (%s)" % ("FAIL" if fails else "PASS", run.dir))
    return out, fails


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: scripts/nemesis/check.py RUN_DIR", file=sys.stderr)
        return 2
    run = Run(sys.argv[1])
    try:
        run.load()
    except (ValueError, IndexError) as e:
        print("nemesis_check: %s" % e, file=sys.stderr)
        return 2
    if not run.recs:
        print("nemesis_check: no client log in %s/clients" % sys.argv[1], file=sys.stderr)
        return 2
    out, fails = check(run)
    print("\n".join(out))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

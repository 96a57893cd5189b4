#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The nemesis run's fault schedule (scripts/nemesis.sh), drawn from a seed
alone, so that --seed replays the same faults in the same order with the
same targets, sizes and durations.

  scripts/nemesis/plan.py --seed S --seconds T --nodes n1,n2,... --kinds k1,k2,...
                  --lease-ms L --renew-ms R [--force k1,k2] [--sock-nodes n1,..]
                  [--long-node NODE --long-lease-ms LL] [--session-ms S]

Prints one fault a line:  KIND TARGET DURATION_MS PARAM GAP_MS
TARGET: a node name, or "store" for the registry's servers. PARAM: the
clock step in ms (clock-*, store-error), which of the node's worker IDs
(release: an index, taken modulo how many it holds), else 0. The kinds are taken in rounds, each
round every kind once in a seeded order, until the faults' nominal time
(duration + gap + OVERHEAD_MS + the kind's own waits, each) fills T.
--force puts those kinds first in the first round (in a seeded order), and
fails (exit 2) when one of them does not fit in T. Twins run flakesock: the
twin kinds target --sock-nodes only; partition-twin targets --long-node (the
node whose lease outlasts its session, its link cut and the twin's run),
which replace and release leave alone (its new identity would wait out that
lease; its released ID would stay its own for that lease, beyond the fault).
"""
import argparse
import random
import sys

KINDS = ["zk-cut-short", "zk-cut-long", "kill", "stop", "clock-back-small",
         "clock-back-large", "clock-fwd", "leader-kill", "store-restart", "disk-full",
         "twin", "replace", "partition-twin", "same-state-twin", "store-error",
         "release", "root-wipe", "snapshot-restore", "graceful"]
OVERHEAD_MS = 1500  # a restart, the waits around a fault


def extra_ms(kind, a):
    """The time a fault of @kind takes beyond its duration: waits of its own."""
    if kind == "partition-twin":  # the session's expiry, the twin's start
        return a.session_ms + 2500
    if kind == "store-error":  # filling the store, the clean-up
        return 3000
    if kind == "release":  # the registry read, the two flakectl runs
        return 1000
    if kind == "graceful":  # the stop (final mark, releases), the start
        return 1500
    if kind == "root-wipe":  # the keys deleted (ZooKeeper: a JVM's start), the fence, and
        # the wait for its floor (the longest lease) before the nodes issue again
        return 4000 + max(a.long_lease_ms, a.lease_ms)
    if kind == "snapshot-restore":  # the copy and the restore (ZooKeeper: the ensemble
        # stopped and started twice), a node seeing it (its reconnection), a fresh process
        # refused, the fence, and a lease for the nodes to issue again (they keep their
        # own records)
        return 11000 + 2 * a.lease_ms
    return 0


def draw(rng, kind, nodes, lease, renew, a):
    """(target, duration ms, param) of one fault of @kind."""
    node = rng.choice(nodes)
    u = rng.uniform
    sock = a.sock_nodes.split(",") if a.sock_nodes else nodes
    if kind == "partition-twin":  # the twin serves this long
        return a.long_node, int(u(2500, 3500)), 0
    if kind == "same-state-twin":  # it must have refused within this
        return rng.choice(sock), 2000, 0
    if kind == "store-error":  # store refusing writes this long; a backward step
        return node, int(u(3000, 4500)), -int(u(1200, 3000))
    if kind in ("replace", "release", "graceful") and a.long_node and len(nodes) > 1:
        node = rng.choice([n for n in nodes if n != a.long_node])
    if kind == "zk-cut-short":  # within the lease: renewals resume before it ends
        return node, int(u(0.2, 0.45) * (lease - renew)), 0
    if kind == "zk-cut-long":  # beyond the lease: the node must stop issuing
        return node, int(u(1.5, 3.0) * lease), 0
    if kind == "kill":  # SIGKILL, down this long, restarted
        return node, int(u(300, 2000)), 0
    if kind == "graceful":  # SIGTERM (its IDs released), down this long, restarted
        return node, int(u(300, 2000)), 0
    if kind == "stop":  # SIGSTOP beyond the lease, then SIGCONT
        return node, int(u(1.25, 2.0) * lease), 0
    if kind == "clock-back-small":
        return node, 2000, -int(u(5, 400))
    if kind == "clock-back-large":  # beyond max_backstep_ms (1 s)
        return node, 3000, -int(u(1200, 3000))
    if kind == "clock-fwd":  # below lease - 2 renew: the lease still covers it
        return node, 2000, int(u(100, max(200, lease - 2 * renew)))
    if kind == "leader-kill":  # the ZooKeeper leader SIGKILLed, restarted after this
        return "store", int(u(1000, 3000)), 0
    if kind == "store-restart":  # every server stopped this long (sometimes > lease)
        return "store", int(u(1000, 3.0 * lease)), 0
    if kind == "disk-full":  # the node's state directory full this long
        return node, int(u(2000, 4000)), 0
    if kind == "twin":  # a second process with the node's identity, this long
        return node, int(u(2000, 3000)), 0
    if kind == "replace":  # SIGKILL, restarted under a new identity after this
        return node, int(u(300, 1000)), 0
    if kind == "root-wipe":  # the fleet's root wiped this long, then fenced
        return "store", int(u(1000, 3000)), 0
    if kind == "snapshot-restore":  # the copy taken this long before the restore
        return "store", int(u(3000, 6000)), 0
    if kind == "release":  # one of its worker IDs released (--force), the fault this
        # long (and a lease + a renewal after the release): the owner loses it,
        # another slot may claim it
        return node, int(u(1.25, 2.0) * lease), rng.randrange(1 << 16)
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--lease-ms", type=int, required=True)
    ap.add_argument("--renew-ms", type=int, required=True)
    ap.add_argument("--force", default="")
    ap.add_argument("--sock-nodes", default="")
    ap.add_argument("--long-node", default="")
    ap.add_argument("--long-lease-ms", type=int, default=0)
    ap.add_argument("--session-ms", type=int, default=2000)
    a = ap.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]
    force = [k for k in a.force.split(",") if k]
    bad = [k for k in kinds + force if k not in KINDS]
    if bad:
        print("nemesis_plan: unknown fault kind(s) %s; known: %s" % (
            ",".join(bad), ",".join(KINDS)), file=sys.stderr)
        return 2
    # partition-twin needs the long-lease node, same-state-twin a flakesock node
    # (a plain twin is a flakesock with any node's identity: always possible)
    cannot = {"partition-twin"} if not a.long_node else set()
    if not a.sock_nodes:
        cannot.add("same-state-twin")
    if cannot & set(force):
        print("nemesis_plan: --force %s: %s needs a flakesock node (nemesis.sh gives the "
              "long lease only when partition-twin may run)" % (
                  a.force, ",".join(sorted(cannot & set(force)))), file=sys.stderr)
        return 2
    kinds = [k for k in kinds if k not in cannot]
    for k in force:
        if k not in kinds:
            kinds.append(k)
    nodes = a.nodes.split(",")
    rng = random.Random(a.seed)
    budget = a.seconds * 1000
    used = 0
    first = True
    while True:
        order = [k for k in kinds if k in force]
        rng.shuffle(order)
        rest = [k for k in kinds if k not in force or not first]
        rng.shuffle(rest)
        order = order + rest if first else rest
        for k in order:
            target, dur, param = draw(rng, k, nodes, a.lease_ms, a.renew_ms, a)
            gap = int(rng.uniform(1000, 2500))
            cost = dur + gap + OVERHEAD_MS + extra_ms(k, a)
            if used + cost > budget:
                if first and k in force:
                    print("nemesis_plan: forced kind %s does not fit in %d s" % (
                        k, a.seconds), file=sys.stderr)
                    return 2
                return 0
            used += cost
            print("%s %s %d %d %d" % (k, target, dur, param, gap))
        first = False


sys.exit(main())

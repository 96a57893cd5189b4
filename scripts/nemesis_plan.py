#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The nemesis run's fault schedule (scripts/nemesis.sh), drawn from a seed
alone, so that --seed replays the same faults in the same order with the
same targets, sizes and durations.

  nemesis_plan.py --seed S --seconds T --nodes n1,n2,... --kinds k1,k2,...
                  --lease-ms L --renew-ms R

Prints one fault a line:  KIND TARGET DURATION_MS PARAM GAP_MS
TARGET: a node name, or "store" for the registry's servers. PARAM: the
clock step in ms (clock-*), else 0. The kinds are taken in rounds, each
round every kind once in a seeded order, until the faults' nominal time
(duration + gap + OVERHEAD_MS each) fills T.
"""
import argparse
import random
import sys

KINDS = ["zk-cut-short", "zk-cut-long", "kill", "stop", "clock-back-small",
         "clock-back-large", "clock-fwd", "leader-kill", "store-restart", "disk-full",
         "twin", "replace"]
OVERHEAD_MS = 1500  # a restart, the waits around a fault


def draw(rng, kind, nodes, lease, renew):
    """(target, duration ms, param) of one fault of @kind."""
    node = rng.choice(nodes)
    u = rng.uniform
    if kind == "zk-cut-short":  # within the lease: renewals resume before it ends
        return node, int(u(0.2, 0.45) * (lease - renew)), 0
    if kind == "zk-cut-long":  # beyond the lease: the node must stop issuing
        return node, int(u(1.5, 3.0) * lease), 0
    if kind == "kill":  # SIGKILL, down this long, restarted
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
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--lease-ms", type=int, required=True)
    ap.add_argument("--renew-ms", type=int, required=True)
    a = ap.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        print("nemesis_plan: unknown fault kind(s) %s; known: %s" % (
            ",".join(bad), ",".join(KINDS)), file=sys.stderr)
        return 2
    nodes = a.nodes.split(",")
    rng = random.Random(a.seed)
    budget = a.seconds * 1000
    used = 0
    while True:
        order = kinds[:]
        rng.shuffle(order)
        for k in order:
            target, dur, param = draw(rng, k, nodes, a.lease_ms, a.renew_ms)
            gap = int(rng.uniform(1000, 2500))
            cost = dur + gap + OVERHEAD_MS
            if used + cost > budget:
                return 0
            used += cost
            print("%s %s %d %d %d" % (k, target, dur, param, gap))


sys.exit(main())

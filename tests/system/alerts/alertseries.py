#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Real scrapes into promtool unit tests, for tests/system/alerts (stdlib only).

  alertseries.py scrape DIR PERIOD MAX_ROUNDS NAME=URL...
      Scrapes every URL once per PERIOD seconds (all at the same moment,
      one thread each), as Prometheus would: round k's body of NAME goes to
      DIR/NAME/k.prom, or DIR/NAME/k.down when the scrape failed (up 0).
      DIR/round holds the number of the last round completed. Stops after
      MAX_ROUNDS rounds or once DIR/stop exists.
  alertseries.py flood HOST PORT SECONDS RATE KIND [--src ADDR] [--sport P]
      Sends RATE datagrams a second for SECONDS (bounded), replies drained
      and not waited for. KIND: id, list50 (a LIST of 50), magic (wrong
      magic: wire_magic), short (10 bytes: wire_short), reply (the reply
      bit: wire_reply).
  alertseries.py martian IFACE MAC DST6 SECONDS RATE
      The same through an AF_PACKET socket on IFACE to the link's other end
      (MAC): single-ID requests to DST6 port 4242 from ::ffff:127.0.0.1, a
      source no peer on the wire can have (tests/system/flakewire/martians.py
      builds the frames).
  alertseries.py frames KIND IFACE MAC SRC4 DST4 SECONDS RATE
      IPv4 single-ID requests to DST4 port 4242 through an AF_PACKET socket
      on IFACE (a TAP's kernel side) to flakewire (MAC). KIND martian4: in
      turn from 127.0.0.1, 0.0.0.0, 224.0.0.1, 255.255.255.255, DST4 itself,
      and SRC4 with a group source MAC (martian_loopback, _unspecified,
      _multicast, _broadcast, _self, _mac); badsum: from SRC4 with a wrong
      UDP checksum, as a sender with TX checksum offload leaves it on a veth
      (bad_cksum).
  alertseries.py sndbuf IFACE BYTES
      Limits the send buffer of the TAP IFACE (TUNSETSNDBUF, what qemu's
      tap sndbuf= sets for flow control; unlimited by default): attaches as
      one more queue with the device's own flags (tun_flags, so nothing else
      changes), sets it for every queue, and detaches.
  alertseries.py relay PORT TO_PORT SECONDS
      A TCP relay on 127.0.0.1:PORT to 127.0.0.1:TO_PORT for at most SECONDS:
      one node's own path to the registry, cut by killing it.
  alertseries.py promtool DIR RULES SCALE SPEC OUT
      Writes OUT, a `promtool test rules` file, and OUT's rules beside it
      (RULES with the annotations left out: their text holds $value, and
      what is tested is when each alert fires). SPEC, one line each:
        group NAME JOB FROM TO NAME=INSTANCE...
                                   input_series: rounds FROM..TO of these
                                   targets' scrapes, labelled job JOB and
                                   instance INSTANCE; round FROM at 0, one
                                   round every SCALE (1m)
        fire ROUND ALERT [k=v,...] ALERT fires at ROUND (a scrape round, not
                                   relative to FROM) for every target of the
                                   group, with these labels beside severity,
                                   instance and job
        silent ROUND ALERT         ALERT does not fire at ROUND
        check ROUND                every alert of RULES without a fire line at
                                   ROUND is silent at ROUND
      Every family the rules read (flakewire_* names in RULES) and `up`
      (1 for a scrape, 0 for a failed one) are fed; a series that vanished,
      or a failed scrape, gets promtool's `stale`, as Prometheus records it.
"""
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.request


def scrape(d, period, max_rounds, targets):
    names = []
    for t in targets:
        name, url = t.split("=", 1)
        names.append((name, url))
        os.makedirs(os.path.join(d, name), exist_ok=True)

    def one(k, name, url):
        base = os.path.join(d, name, "%d" % k)
        try:
            with urllib.request.urlopen(url, timeout=max(0.2, period * 0.8)) as r:
                body = r.read()
            if r.status != 200:
                raise OSError("status %d" % r.status)
            with open(base + ".prom", "wb") as f:
                f.write(body)
        except Exception:  # any failure is up 0, as for Prometheus
            open(base + ".down", "w").close()

    t0 = time.monotonic()
    for k in range(max_rounds):
        if os.path.exists(os.path.join(d, "stop")):
            break
        delay = t0 + k * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        th = [threading.Thread(target=one, args=(k, n, u)) for n, u in names]
        for t in th:
            t.start()
        for t in th:
            t.join()
        with open(os.path.join(d, "round.tmp"), "w") as f:
            f.write("%d\n" % k)
        os.replace(os.path.join(d, "round.tmp"), os.path.join(d, "round"))


HDR = struct.Struct(">HBBBBHQHHI")


def payload(kind, tag):
    if kind == "id":
        return HDR.pack(0x464B, 1, 1, 0, 0, 1, tag, 0, 0, 0) + bytes(8)
    if kind == "list50":
        return HDR.pack(0x464B, 1, 2, 0, 0, 50, tag, 0, 0, 0) + bytes(8 * 50)
    if kind == "magic":
        return HDR.pack(0x4242, 1, 1, 0, 0, 1, tag, 0, 0, 0) + bytes(8)
    if kind == "short":
        return b"FK" + bytes(8)
    if kind == "reply":
        return HDR.pack(0x464B, 1, 0x81, 0, 0, 1, tag, 0, 0, 0) + bytes(8)
    raise SystemExit("flood: unknown kind %s" % kind)


def flood(host, port, seconds, rate, kind, src="", sport=0):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if src or sport:
        s.bind((src or ("::" if fam == socket.AF_INET6 else "0.0.0.0"), sport))
    s.setblocking(False)
    end = time.monotonic() + seconds
    n = 0
    t0 = time.monotonic()
    while time.monotonic() < end:
        try:
            s.sendto(payload(kind, n), (host, port))
        except OSError:
            pass
        n += 1
        while True:  # drain the replies, never wait for them
            try:
                s.recv(2048)
            except OSError:
                break
        delay = t0 + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print("sent=%d" % n, file=sys.stderr)


def relay(port, to, seconds):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(64)

    def pipe(a, b):
        try:
            while True:
                x = a.recv(65536)
                if not x:
                    break
                b.sendall(x)
        except OSError:
            pass
        for c in (a, b):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    ls.settimeout(0.5)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        u = socket.create_connection(("127.0.0.1", to))
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


def martian(iface, mac, dst6, seconds, rate):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "flakewire"))
    import martians  # the frames of the martian tests, one builder
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    eth = bytes.fromhex(mac.replace(":", "")) + s.getsockname()[4] + struct.pack("!H", 0x86DD)
    end = time.monotonic() + seconds
    t0, n = time.monotonic(), 0
    while time.monotonic() < end:
        s.send(eth + martians.udp6("::ffff:127.0.0.1", dst6, n & 0xFFFF))
        n += 1
        delay = t0 + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print("sent=%d" % n, file=sys.stderr)


def frames(kind, iface, mac, src4, dst4, seconds, rate):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "flakewire"))
    import martians  # the frames of the martian tests, one builder
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    dst, own = bytes.fromhex(mac.replace(":", "")), s.getsockname()[4]
    group = bytes.fromhex("01005e000001")
    if kind == "martian4":  # (source MAC, source address), in turn
        kinds = [(own, "127.0.0.1"), (own, "0.0.0.0"), (own, "224.0.0.1"),
                 (own, "255.255.255.255"), (own, dst4), (group, src4)]
    elif kind == "badsum":
        kinds = [(own, src4)]
    else:
        raise SystemExit("frames: unknown kind %s" % kind)
    end = time.monotonic() + seconds
    t0, n = time.monotonic(), 0
    while time.monotonic() < end:
        smac, src = kinds[n % len(kinds)]
        ip = martians.udp4(src, dst4, n & 0xFFFF)
        if kind == "badsum":  # the UDP checksum (bytes 26..27 of the IPv4 packet) flipped
            ip = ip[:26] + bytes([ip[26] ^ 0x5A, ip[27] ^ 0x5A]) + ip[28:]
        f = dst + smac + struct.pack("!H", 0x0800) + ip
        s.send(f + bytes(max(0, 60 - len(f))))
        n += 1
        delay = t0 + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print("sent=%d" % n, file=sys.stderr)


def sndbuf(iface, size):
    import fcntl
    TUNSETIFF, TUNSETSNDBUF, TUNGETSNDBUF = 0x400454CA, 0x400454D4, 0x800454D3
    flags = int(open("/sys/class/net/%s/tun_flags" % iface).read(), 16)
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", iface.encode(), flags))
        fcntl.ioctl(fd, TUNSETSNDBUF, struct.pack("i", size))
        got = struct.unpack("i", fcntl.ioctl(fd, TUNGETSNDBUF, bytes(4)))[0]
    finally:
        os.close(fd)
    if got != size:
        raise SystemExit("sndbuf: %s has %d, not %d" % (iface, got, size))


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)$')


def load_round(path):
    """{series: value} of one scrape, or None for a failed scrape."""
    if os.path.exists(path + ".down") or not os.path.exists(path + ".prom"):
        return None
    out = {}
    for line in open(path + ".prom"):
        m = SAMPLE.match(line.strip())
        if m:
            out[(m.group(1), m.group(2) or "")] = m.group(3)
    return out


def rules_of(path):
    """The alerts of a rules file in order, their severities and the metric names they read."""
    text = open(path).read()
    alerts, sev = [], {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"\s*- alert: (\S+)", line)
        if m:
            cur = m.group(1)
            alerts.append(cur)
        m = re.match(r"\s*severity: (\S+)", line)
        if m and cur:
            sev[cur] = m.group(1)
    names = set(re.findall(r"flakewire_[a-z0-9_]+", text)) - {"flakewire_runbook"}
    return alerts, sev, names


def strip_annotations(src, dst):
    """RULES without the annotations blocks (indentation-based; the rules file's own layout)."""
    out, skip = [], None
    for line in open(src):
        ind = len(line) - len(line.lstrip())
        if skip is not None:
            if line.strip() and ind <= skip:
                skip = None
            else:
                continue
        if line.strip() == "annotations:":
            skip = ind
            continue
        out.append(line)
    open(dst, "w").write("".join(out))


def fmt(v):
    f = float(v)
    if f == int(f) and abs(f) < 1e15:
        return "%d" % int(f)
    return repr(f)


def labels_with(lbl, instance, job):
    inner = lbl[1:-1] if lbl else ""
    extra = 'instance="%s",job="%s"' % (instance, job)
    return "{%s}" % (inner + "," + extra if inner else extra)


def promtool(d, rules, scale, spec, out):
    alerts, sev, names = rules_of(rules)
    rdir = os.path.dirname(os.path.abspath(out))
    stripped = os.path.join(rdir, "rules-noannotations.yml")
    strip_annotations(rules, stripped)
    groups = []
    for line in open(spec):
        w = line.split()
        if not w:
            continue
        if w[0] == "group":
            groups.append(dict(name=w[1], job=w[2], lo=int(w[3]), hi=int(w[4]),
                               targets=w[5:], checks=[]))
        else:
            groups[-1]["checks"].append(w)
    doc = ["# generated by tests/system/alerts/alertseries.py from real scrapes",
           "rule_files:", "  - %s" % json.dumps(os.path.basename(stripped)),
           "evaluation_interval: %s" % scale, "tests:"]
    for g in groups:
        doc.append("  # %s: rounds %d..%d of %s" % (g["name"], g["lo"], g["hi"],
                                                   " ".join(g["targets"])))
        doc.append("  - interval: %s" % scale)
        doc.append("    input_series:")
        for t in g["targets"]:
            tname, inst = t.split("=", 1)
            rounds = [load_round(os.path.join(d, tname, "%d" % k))
                      for k in range(g["lo"], g["hi"] + 1)]
            series = {}
            for r in rounds:
                for key in r or {}:
                    if key[0] in names:
                        series.setdefault(key, None)
            up = ["0" if r is None else "1" for r in rounds]
            doc.append("      - series: %s" % json.dumps('up{instance="%s",job="%s"}'
                                                        % (inst, g["job"])))
            doc.append("        values: %s" % json.dumps(" ".join(up)))
            for key in sorted(series):
                vals, prev = [], False
                for r in rounds:
                    if r is not None and key in r:
                        vals.append(fmt(r[key]))
                        prev = True
                    else:
                        vals.append("stale" if prev else "_")
                        prev = False
                doc.append("      - series: %s" % json.dumps(
                    key[0] + labels_with(key[1], inst, g["job"])))
                doc.append("        values: %s" % json.dumps(" ".join(vals)))
        doc.append("    alert_rule_test:")
        for c in g["checks"]:
            at = int(c[1]) - g["lo"]
            assert 0 <= at <= g["hi"] - g["lo"], "%s: round %s outside the group" % (g["name"], c[1])
            t = "%d%s" % (at * int(scale[:-1]), scale[-1])
            if c[0] == "check":
                fired = {x[2] for x in g["checks"] if x[0] == "fire" and x[1] == c[1]}
                for a in alerts:
                    if a not in fired:
                        doc += ["      - eval_time: %s" % t, "        alertname: %s" % a,
                                "        exp_alerts: []"]
                continue
            doc += ["      - eval_time: %s" % t, "        alertname: %s" % c[2]]
            if c[0] == "silent":
                doc.append("        exp_alerts: []")
                continue
            doc.append("        exp_alerts:")
            for tgt in g["targets"]:
                inst = tgt.split("=", 1)[1]
                lab = {"severity": sev[c[2]], "instance": inst, "job": g["job"]}
                if len(c) > 3:
                    lab.update(kv.split("=", 1) for kv in c[3].split(","))
                doc.append("          - exp_labels: %s" % json.dumps(lab))
    open(out, "w").write("\n".join(doc) + "\n")


def main():
    a = sys.argv[1:]
    if a[:1] == ["scrape"]:
        scrape(a[1], float(a[2]), int(a[3]), a[4:])
    elif a[:1] == ["flood"]:
        src, sport, rest = "", 0, a[6:]
        while rest:
            if rest[0] == "--src":
                src = rest[1]
            elif rest[0] == "--sport":
                sport = int(rest[1])
            else:
                raise SystemExit("flood: unknown option %s" % rest[0])
            rest = rest[2:]
        flood(a[1], int(a[2]), float(a[3]), float(a[4]), a[5], src, sport)
    elif a[:1] == ["martian"]:
        martian(a[1], a[2], a[3], float(a[4]), float(a[5]))
    elif a[:1] == ["frames"]:
        frames(a[1], a[2], a[3], a[4], a[5], float(a[6]), float(a[7]))
    elif a[:1] == ["sndbuf"]:
        sndbuf(a[1], int(a[2]))
    elif a[:1] == ["relay"]:
        relay(int(a[1]), int(a[2]), float(a[3]))
    elif a[:1] == ["promtool"]:
        promtool(a[1], a[2], a[3], a[4], a[5])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()

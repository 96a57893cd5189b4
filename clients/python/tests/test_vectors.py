# SPDX-License-Identifier: BSD-3-Clause
"""Conformance: tests/vectors/wire.vec, the same file every client checks."""

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

import uuid  # noqa: E402

from flakewire import Layout, uuid7_parts, wire  # noqa: E402

VEC = pathlib.Path(os.environ.get(
    "FW_VECTORS", pathlib.Path(__file__).resolve().parents[3] / "tests/vectors/wire.vec"))


def load(kind):
    out = []
    for line in VEC.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        k, *toks = line.split(" ")
        if k == kind:
            out.append(dict(t.split("=", 1) for t in toks))
    return out


def test_vector_file_covers_everything():
    reps = load("rep")
    assert len(load("req")) >= 40 and len(reps) >= 100 and len(load("dec")) >= 5
    assert len(load("uuid")) >= 8
    assert {r["result"] for r in reps} == {"ok", "short", "magic", "version", "bad"}
    assert {int(r["status"]) for r in reps if r["result"] == "ok"} == set(range(7))


@pytest.mark.parametrize("v", load("req"), ids=lambda v: v["name"])
def test_request(v):
    got = wire.encode_request(int(v["op"]), int(v["count"]), int(v["tag"], 16),
                              v["pad"] == "1", int(v["seq"]))
    assert got.hex() == v["bytes"]


@pytest.mark.parametrize("v", load("rep"), ids=lambda v: v["name"])
def test_reply(v):
    buf = bytes.fromhex(v["bytes"])
    if v["result"] != "ok":
        with pytest.raises(wire.WireError) as e:
            wire.parse_reply(buf)
        assert e.value.reason == v["result"]
        if v["result"] == "version":
            assert e.value.tag == int(v["tag"], 16)
        return
    r = wire.parse_reply(buf)
    assert (r.op, r.status, r.flags, r.count, r.tag, r.datacenter, r.worker,
            r.retry_after_us) == (int(v["op"]), int(v["status"]), int(v["flags"]),
                                  int(v["count"]), int(v["tag"], 16), int(v["dc"]),
                                  int(v["worker"]), int(v["retry_us"]))
    if "ids" in v:
        assert r.ids == [int(x) for x in v["ids"].split(",")]
    if "ranges" in v:
        assert r.ranges == [tuple(int(y) for y in x.split(":")) for x in v["ranges"].split(",")]
    if "info" in v:
        i = r.info
        assert ":".join(str(x) for x in (
            i.epoch_ms, i.time_bits, i.dc_bits, i.worker_bits, i.seq_bits, i.version_min,
            i.version_max, i.list_max, i.ranges_max, i.max_borrow_ms, i.features,
            i.clock_offset_ns)) == v["info"]
    if "uuids" in v:
        assert [u.hex for u in r.uuids] == v["uuids"].split(",")


@pytest.mark.parametrize("v", load("dec"), ids=lambda v: v["id"])
def test_decode(v):
    t, d, w, s = (int(x) for x in v["bits"].split(":"))
    lay = Layout(int(v["epoch"]), t, d, w, s)
    lay.validate()
    p = lay.decode(int(v["id"]))
    assert (p.ms, p.unix_ms, p.datacenter, p.worker, p.sequence) == tuple(
        int(v[k]) for k in ("ms", "unix_ms", "dc", "worker", "seq"))


@pytest.mark.parametrize("v", load("uuid"), ids=lambda v: v["text"])
def test_uuid(v):
    t, d, w, s = (int(x) for x in v["bits"].split(":"))
    u = uuid.UUID(v["text"])
    assert str(u) == v["text"]
    p = uuid7_parts(u, Layout(int(v["epoch"]), t, d, w, s))
    assert (p.version, p.variant, int(p.is_v7), p.unix_ms, int(p.flakewire), p.counter,
            p.datacenter, p.worker) == tuple(int(v[k]) for k in (
                "ver", "var", "v7", "unix_ms", "flakewire", "counter", "dc", "worker"))

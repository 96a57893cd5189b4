# SPDX-License-Identifier: BSD-3-Clause
"""Children made with os.fork() that take IDs from a client the parent
opened, for the fork tests (test_client.py, test_live_fork.py): every wait
on a child is bounded, a child that hangs is killed and fails the test."""

import collections
import os
import select
import signal
import struct
import time

import pytest

PER_PROC, KID_WAIT = 300, 10.0


def fork_kid(c, n=PER_PROC):
    """os.fork(): the child takes n IDs with c.next(), writes them to a
    pipe and _exits. Returns (pid, read end)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            ids = [c.next() for _ in range(n)]
            os.write(w, struct.pack(f">{n}Q", *ids))
        except BaseException:  # noqa: BLE001 - the child reports by its status
            code = 2
        os._exit(code)
    os.close(w)
    return pid, r


def collect(pid, r, n=PER_PROC):
    """The child's IDs and its exit, within KID_WAIT s (killed past that)."""
    deadline, buf = time.monotonic() + KID_WAIT, b""
    try:
        while len(buf) < 8 * n and time.monotonic() < deadline:
            if select.select([r], [], [], 0.05)[0]:
                chunk = os.read(r, 8 * n - len(buf))
                if not chunk:
                    break
                buf += chunk
    finally:
        os.close(r)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"child {pid} hung: killed after {KID_WAIT} s")
        time.sleep(0.005)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child {pid}: status {status:#x}"
    assert len(buf) == 8 * n, f"child {pid}: {len(buf) // 8} of its {n} IDs"
    return list(struct.unpack(f">{n}Q", buf))


def collect_all(kids, n=PER_PROC):
    """collect() for each (pid, fd); every child is reaped or killed even
    when one fails."""
    out, first_err = [], None
    for pid, r in kids:
        try:
            out += collect(pid, r, n)
        except BaseException as e:  # noqa: BLE001 - raised after the others are reaped
            first_err = first_err or e
    if first_err:
        raise first_err
    return out


def assert_unique(ids):
    twice = [i for i, k in collections.Counter(ids).items() if k > 1]
    assert not twice, f"{len(twice)} of {len(ids)} IDs handed out by more than one caller"

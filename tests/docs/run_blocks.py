# SPDX-License-Identifier: BSD-3-Clause
"""Runs the shell blocks of manual pages as a reader would (test docs-run).

    run_blocks.py [-v] [--timeout=SECS] SRC BUILD PAGE.md...

(-v: print every page's output; --timeout: per page, default 120 s)

Every ```sh, ```bash, ```shell and ```console block of a PAGE runs, in the
page's order, in ONE bash session per page (variables, functions and
background jobs carry from block to block, as in a reader's terminal). Of a
```console block the lines starting with `$ ` run (with the lines a
trailing backslash continues), and the output shown after each is checked
loosely: every shown line, whitespace collapsed, must be found in order in
the command's output (`...` in a line stands for anything; other lines may
come between). The session:

  - starts in a fresh directory that looks like a built checkout: every
    top-level entry of SRC linked there, `build` linked to BUILD (so the
    pages' `scripts/try-fleet.sh` and `build/app/flakesock/flakesock` work);
  - has the built flakewire, flakesock and flakectl first on PATH, TMPDIR in
    that directory (a page's `mktemp -d` is removed with it); as root, TMPDIR
    is a tmpfs of its own (unmounted at the end), so a page's registry writes
    its data to memory, not to a disk the test command's other lane keeps
    busy: etcd 3.4 fsyncs every write and has no switch to stop, and on a
    machine unpacking packages beside this test its cluster in doc/fleet.md
    elected no leader within 30 s;
  - runs with `set -eE`: the first command that fails ends the page, and the
    test names the page, the line and the command;
  - runs in its own process group: whatever is left running when the page
    ends is killed (SIGTERM, then SIGKILL), and on a page that passed, a
    process still there 3 s after its last block is a failure (a reader
    would have it running too: the page must stop what it starts); network
    namespaces a page adds (`ip netns add NAME`) are deleted; each page has
    --timeout seconds. The pages run at the same time, so each uses its
    own loopback ports, namespace names and directories.

A block that cannot run on one machine says why, on the line right above its
fence (blank lines between are allowed):

    <!-- not run: needs a DPDK-capable NIC bound to vfio-pci -->

The reason is required (a bare `<!-- not run -->` fails the test), and the
skipped blocks are listed with their reasons. Every other shell block runs.
A block of another kind (```ini) that the page tells the reader to save as a
file carries the file's name, and is written there when the session reaches it:

    <!-- file: flakewire.ini -->
Runs as root (a reader's blocks make namespaces and TAP devices); not root:
skipped (exit 77), under CI=true a failure. Needs bash and python3; the
pages need what scripts/install-deps.sh installs (ZooKeeper, etcd, openssl).
"""
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RUN_LANGS = ("sh", "bash", "shell", "console")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*not run\b\s*:?\s*(.*?)\s*-->\s*$")
FILEMARK = re.compile(r"^\s*<!--\s*file:\s*([\w./-]+)\s*-->\s*$")


class Block:
    def __init__(self, page, line, lang, lines, skip, file=None):
        self.page, self.line, self.lang = page, line, lang
        self.lines, self.skip = lines, skip  # lines: [(page line, text)]
        self.file = file  # a block a reader saves as this file


def blocks_of(path, rel):
    """The fenced blocks of PATH as Blocks; errors for bad markers."""
    out, errors = [], []
    with open(path, encoding="utf-8") as f:
        text = f.read().split("\n")
    i = 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start = i + 1  # 1-based line of the fence
        body = []
        i += 1
        while i < len(text) and not text[i].strip().startswith(fence):
            line = text[i]
            if line.startswith(indent):
                line = line[len(indent):]
            body.append((i + 1, line))
            i += 1
        i += 1
        # the marker: the last non-blank line above the fence
        j = start - 2
        while j >= 0 and not text[j].strip():
            j -= 1
        skip = None
        mm = MARKER.match(text[j]) if j >= 0 else None
        if mm:
            skip = mm.group(1)
            if not skip:
                errors.append("%s:%d: `<!-- not run -->` without a reason "
                              "(write `<!-- not run: WHY -->`)" % (rel, j + 1))
                skip = "(no reason)"
            if lang not in RUN_LANGS:
                errors.append("%s:%d: a `not run` marker above a ```%s block, "
                              "which never runs" % (rel, j + 1, lang or "(plain)"))
        fm = FILEMARK.match(text[j]) if j >= 0 else None
        if fm:
            if lang in RUN_LANGS:
                errors.append("%s:%d: a `file:` marker above a shell block" % (rel, j + 1))
            out.append(Block(rel, start, lang, body, None, fm.group(1)))
        elif lang in RUN_LANGS:
            out.append(Block(rel, start, lang, body, skip))
    return out, errors


def script_of(blocks):
    """The bash script of a page's runnable blocks, and the map from its
    lines to the page's."""
    head = [
        "set -eE",
        # the failing command, its line and status, for the runner
        "trap 'printf \"%s %s %s\\n\" \"$LINENO\" \"$?\" \"$BASH_COMMAND\""
        " >\"$FW_DOCS_FAILED\"' ERR",
    ]
    lines, where = list(head), {}
    for b in blocks:
        if b.skip is not None:
            continue
        if b.file:
            lines.append("cat >%s <<'FW_DOCS_EOF'" % b.file)
            lines += [t for _, t in b.lines]
            lines.append("FW_DOCS_EOF")
            continue
        lines.append("echo \"--- %s:%d ($SECONDS s)\" >&2" % (b.page, b.line))
        where[len(lines)] = b.line
        if b.lang != "console":
            for n, text in b.lines:
                lines.append(text)
                where[len(lines)] = n
            continue
        for cmd, shown in console_commands(b.lines):
            # the command's output kept, shown, then matched against the page's
            lines.append("{")
            for n, text in cmd:
                lines.append(text)
                where[len(lines)] = n
            lines.append('} >"$FW_DOCS_OUT" 2>&1 || { rc=$?; cat "$FW_DOCS_OUT"; (exit $rc); }')
            where[len(lines)] = cmd[-1][0]
            lines.append('cat "$FW_DOCS_OUT"')
            if shown:
                lines.append("python3 %s expect \"$FW_DOCS_OUT\" <<'FW_DOCS_EOF'" %
                             os.path.abspath(__file__))
                where[len(lines)] = shown[0][0]
                lines += [t for _, t in shown]
                lines.append("FW_DOCS_EOF")
    return "\n".join(lines) + "\n", where


def console_commands(body):
    """A ```console block's commands ([(line, text)], `$ ` taken off, lines
    ending in a backslash continued) each with the output shown after it."""
    out, cont = [], False
    for n, text in body:
        if text.startswith("$ ") and not cont:
            out.append(([(n, text[2:])], []))
            cont = text.rstrip().endswith("\\")
        elif cont:
            out[-1][0].append((n, text))
            cont = text.rstrip().endswith("\\")
        elif out and text.strip():
            out[-1][1].append((n, text))
    return out


def _norm(s):
    return " ".join(s.split())


def cmd_expect(actual_file):
    """Loose check of a shown output (stdin) against the actual one: every
    shown line, whitespace collapsed, is found in order in a line of the
    actual output; `...` in a shown line stands for anything, a line of only
    `...` is skipped."""
    with open(actual_file, errors="replace") as f:
        actual = [_norm(l) for l in f.read().split("\n")]
    i = 0
    for want in sys.stdin.read().split("\n"):
        want = _norm(want)
        if not want or want == "...":
            continue
        rx = re.compile(".*".join(re.escape(p.strip()) for p in want.split("...")))
        while i < len(actual) and not rx.search(actual[i]):
            i += 1
        if i == len(actual):
            print("docs-run: the page shows `%s`, which the command did not print "
                  "(in that order)" % want)
            return 1
        i += 1
    return 0


def group_pids(pgid):
    """The processes of process group PGID (from /proc)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    except OSError:
        return "?"


def stop_group(pgid):
    """SIGTERM, then SIGKILL after 5 s, every process of PGID; returns the
    command lines of those found."""
    pids = group_pids(pgid)
    found = ["%d %s" % (p, cmdline(p)) for p in pids]
    if not pids:
        return found
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return found
    end = time.monotonic() + 5
    while group_pids(pgid) and time.monotonic() < end:
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return found


def run_page(src, build, rel, blocks, timeout):
    """Runs one page; returns a list of failure lines (empty: passed)."""
    script, where = script_of(blocks)
    texts = {n: t for b in blocks for n, t in b.lines}
    work = tempfile.mkdtemp(prefix="fw-docs-run.")
    fails = []
    try:
        for e in os.listdir(src):
            if e == "build" or e.startswith("build-") or e == ".git":
                continue
            os.symlink(os.path.join(src, e), os.path.join(work, e))
        os.symlink(os.path.abspath(build), os.path.join(work, "build"))
        os.mkdir(os.path.join(work, ".tmp"))
        if os.geteuid() == 0:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "fw-docs-run",
                            os.path.join(work, ".tmp")], check=True)
        failed = os.path.join(work, ".failed")
        env = dict(os.environ)
        env["PATH"] = ":".join([os.path.join(build, "app", p) for p in
                                ("flakectl", "flakesock", "flakewire")] + [env.get("PATH", "/usr/bin:/bin")])
        env["TMPDIR"] = os.path.join(work, ".tmp")
        env["FW_DOCS_FAILED"] = failed
        env["FW_DOCS_OUT"] = os.path.join(work, ".out")
        with open(os.path.join(work, ".script.sh"), "w") as f:
            f.write(script)
        log = open(os.path.join(work, ".log"), "w+")
        t0 = time.monotonic()
        p = subprocess.Popen(["bash", os.path.join(work, ".script.sh")], cwd=work, env=env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        if rc is not None:  # what the last block stopped may take a moment to go
            end = time.monotonic() + 3
            while group_pids(p.pid) and time.monotonic() < end:
                time.sleep(0.1)
        left = stop_group(p.pid)
        if rc is None:
            p.wait()
        for name in sorted(set(re.findall(r"ip netns add (\S+)", script))):
            subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)
        log.seek(0)
        out = log.read()
        log.close()
        if rc is None:
            fails.append("%s: still running after %d s (the blocks must end; last block: %s)"
                         % (rel, timeout, (re.findall(r"^--- (\S+) ", out, re.M) or ["?"])[-1]))
        elif rc != 0:
            what = "%s: the session exited %d" % (rel, rc)
            if os.path.exists(failed):
                with open(failed) as f:
                    ln, st, cmd = (f.read().strip().split(" ", 2) + ["", ""])[:3]
                line = where.get(int(ln)) if ln.isdigit() else None
                if " expect " in cmd and cmd.startswith("python3 "):
                    what = "%s:%s: the output shown from here on is not what the command " \
                           "printed (above)" % (rel, line or "?")
                else:
                    if line in texts:  # what the reader sees on that line
                        cmd = texts[line].strip()
                    what = "%s:%s: `%s` exited %s" % (rel, line or "?", cmd, st)
            fails.append(what)
        elif left:
            fails.append("%s: left %d process(es) running after its last block (a page stops "
                         "what it starts): %s" % (rel, len(left), "; ".join(left)))
        report = "%s %s (%d blocks run, %.1f s)\n" % (
            "FAIL" if fails else "ok  ", rel,
            sum(1 for b in blocks if b.skip is None and not b.file), took)
        if fails or VERBOSE:
            tail = out.rstrip().split("\n")[-30 if fails else 0:]
            report += "    " + "\n    ".join(tail) + "\n"
    finally:
        if os.path.ismount(os.path.join(work, ".tmp")):
            subprocess.run(["umount", "-l", os.path.join(work, ".tmp")])
        shutil.rmtree(work, ignore_errors=True)
    return fails, report


VERBOSE = False


def main(argv):
    global VERBOSE
    if len(argv) == 3 and argv[1] == "expect":
        return cmd_expect(argv[2])
    timeout = 120
    if len(argv) > 1 and argv[1] == "-v":
        VERBOSE = True
        argv = argv[:1] + argv[2:]
    if len(argv) > 1 and argv[1].startswith("--timeout="):
        timeout = int(argv[1].split("=", 1)[1])
        argv = argv[:1] + argv[2:]
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    src, build, pages = os.path.abspath(argv[1]), os.path.abspath(argv[2]), argv[3:]
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            print("FAIL: the pages' blocks run as root (namespaces, TAP); cannot under CI=true")
            return 1
        print("SKIP: the pages' blocks run as root (namespaces, TAP, servers)")
        return 77
    fails, todo = [], []
    for page in pages:
        rel = os.path.relpath(os.path.abspath(page), src)
        blocks, errors = blocks_of(page, rel)
        fails += errors
        for b in blocks:
            if b.skip is not None:
                print("skip %s:%d: not run: %s" % (rel, b.line, b.skip))
        if not any(b.skip is None and not b.file for b in blocks):
            fails.append("%s: no shell block runs (a page of this test shows at least one "
                         "that does)" % rel)
        elif not errors:
            todo.append((rel, blocks))
    # the pages at once (each its own ports, directory and process group)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(todo))) as ex:
        runs = [ex.submit(run_page, src, build, rel, blocks, timeout) for rel, blocks in todo]
        for r in runs:
            f, report = r.result()
            fails += f
            sys.stdout.write(report)
    for f in fails:
        print("FAIL: " + f)
    if not fails:
        print("PASS: every shell block of %d page(s) ran" % len(pages))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

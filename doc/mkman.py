#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Builds a man page: fills a scdoc template from the built programs, then runs scdoc.

  @VERSION@   the project version
  @SETTINGS@  every [section] and key of the configuration table, from
              `PROGRAM --print-config` (lib/conf's table: name, type, range,
              default, help), so the page cannot drift from the table
  @COMMANDS@  every flakectl command with its `flakectl help COMMAND` text

usage: mkman.py TEMPLATE OUTPUT --scdoc SCDOC --version V
                [--settings FLAKEWIRE [--no-ports]] [--commands FLAKECTL]
"""
import argparse
import re
import subprocess
import sys


def esc(s):
    return s.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def settings(prog, no_ports):
    text = subprocess.run([prog, "--print-config"], check=True, capture_output=True,
                          text=True).stdout
    out, comments, section, skip = [], [], None, False
    for line in text.splitlines():
        if line.startswith("#"):
            comments.append(line[1:].strip())
            continue
        if not line.strip():
            comments = []
            continue
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            section = m.group(1)
            skip = no_ports and section.startswith("port")
            if not skip:
                out.append("## [%s]\n" % esc(section))
                help_ = [c for c in comments if c]
                if help_:
                    out.append(esc(" ".join(help_)) + "\n")
            comments = []
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if skip:
            comments = []
            continue
        rng = ""
        if comments and comments[-1].startswith("(") and comments[-1].endswith(")"):
            rng = comments.pop()
        out.append("*%s.%s* = %s %s\n\t%s\n" % (
            esc(section), esc(key),
            # a space after each comma lets a long list default break across lines
            "_%s_" % esc(value).replace(",", ", ") if value else "(empty)",
            esc(rng), esc(" ".join(comments))))
        comments = []
    return "\n".join(out)


def commands(prog):
    top = subprocess.run([prog, "--help"], capture_output=True, text=True)
    names = re.findall(r"^  ([a-z][a-z0-9-]*)\s{2,}", top.stdout + top.stderr, re.M)
    if not names:
        sys.exit("mkman.py: no commands in `%s --help`" % prog)
    out = []
    for n in names:
        r = subprocess.run([prog, "help", n], capture_output=True, text=True)
        body = (r.stdout + r.stderr).rstrip("\n")
        out.append("## %s\n\n```\n%s\n```\n" % (esc(n), body))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template")
    ap.add_argument("output")
    ap.add_argument("--scdoc", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--settings")
    ap.add_argument("--no-ports", action="store_true")
    ap.add_argument("--commands")
    a = ap.parse_args()
    src = open(a.template).read().replace("@VERSION@", a.version)
    if a.settings:
        src = src.replace("@SETTINGS@", settings(a.settings, a.no_ports))
    if a.commands:
        src = src.replace("@COMMANDS@", commands(a.commands))
    if "@" in re.sub(r"[\w.+-]+@[\w.-]+", "", src):
        m = re.search(r"@[A-Z]+@", src)
        if m:
            sys.exit("mkman.py: %s left unfilled in %s" % (m.group(0), a.template))
    r = subprocess.run([a.scdoc], input=src, capture_output=True, text=True)
    if r.returncode:
        sys.exit("mkman.py: scdoc failed on %s: %s" % (a.template, r.stderr.strip()))
    open(a.output, "w").write(r.stdout)


main()

# SPDX-License-Identifier: BSD-3-Clause
"""What `mkdocs build --strict` (mkdocs 1.4, Debian 12) cannot check by itself.

Two uses, one set of rules:

- as the mkdocs hook of mkdocs.yml (`hooks:`): a relative link from a doc/
  page to a file of the tree outside doc/ (a header, lib/wire/PROTOCOL.md, a
  client's README) must name a file or folder that exists, and becomes a link
  to it in the repository (mkdocs would only warn that it is not a page);
  every `#anchor` of every page must be a heading of its target; every page
  of doc/ must be in the nav. Each failure is a WARNING, so --strict fails.
- as a program (tests/docs/test_docs.sh):
    docs_check.py links ROOT FILE.md...        the same link and anchor rules
                                               for pages outside doc/ (README.md)
    docs_check.py runbook ROOT RULES.yml       every alert's runbook_url resolves
    docs_check.py dated ROOT FILE.md...        no run's date, commit hash or
                                               numbered pass in the prose
    docs_check.py pointers ROOT                every doc/PAGE.md#anchor the sources
                                               name (headers, units, scripts) resolves
    docs_check.py names ROOT HELP_DIR FILE.md...  every flakectl, flakesock and
        flakewire option and config key the pages name in code exists in the
        programs' --help (HELP_DIR holds their output, see test_docs.sh)
    docs_check.py examples ROOT FLAKECTL FLAKEWIRE FILE.md...  every ```ini
        block passes `flakewire -- --config F --check-config`, every ```c
        block compiles against the headers of lib/ (cc -fsyntax-only), every
        `$ flakectl decode ...` shows what it prints, and every metric name of
        metrics.md and runbook.md is one a responder exports

Anchors are the ids Python-Markdown's toc extension gives headings, which is
what mkdocs serves; a linked anchor must also be the one GitHub gives that
heading, so the link works in both places. Needs /usr/bin/python3 (Debian's
python3-markdown).
"""
import collections
import logging
import os
import re
import sys
from urllib.parse import unquote, urlsplit

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

log = logging.getLogger("mkdocs.hooks.docs_check")

OURS = ("flakectl", "flakesock", "flakewire")


# --- headings and links of one Markdown page --------------------------------

def github_slug(text, seen):
    s = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else "%s-%d" % (s, n)


def _prose(el):
    """The text of EL outside code spans."""
    out = [el.text or ""] if el.tag != "code" else []
    for child in el:
        out.append(_prose(child))
        out.append(child.tail or "")
    return "".join(out)


class _Collect(Treeprocessor):
    """Records headings (id, text), links (href/src), code and prose of the
    rendered tree."""

    def run(self, root):
        self.md.fw_headings, self.md.fw_links, self.md.fw_code = [], [], []
        self.md.fw_prose = _prose(root)
        for el in root.iter():
            if re.fullmatch(r"h[1-6]", el.tag) and el.get("id"):
                self.md.fw_headings.append((el.get("id"), "".join(el.itertext())))
            elif el.tag == "a" and el.get("href") is not None:
                self.md.fw_links.append(el.get("href"))
            elif el.tag == "img" and el.get("src") is not None:
                self.md.fw_links.append(el.get("src"))
            elif el.tag == "code":
                self.md.fw_code.append("".join(el.itertext()))
        return root


class _CollectExt(Extension):
    def extendMarkdown(self, md):
        md.treeprocessors.register(_Collect(md), "fw_collect", -10)


Page = collections.namedtuple("Page", "anchors links code prose")


def render(path):
    """The Page of the Markdown file PATH, as mkdocs renders it: anchors maps
    each heading id to the id GitHub gives the same heading; links are the
    hrefs and image sources; code is a list of (language, text), language
    None for inline code and "" for a fence without one; prose is the text
    outside code."""
    md = markdown.Markdown(extensions=["toc", "tables", "fenced_code", _CollectExt()])
    with open(path, encoding="utf-8") as f:
        md.convert(f.read())
    # fenced code is stashed as raw HTML: read it back from the stash
    code = [(None, c) for c in md.fw_code]
    for raw in md.htmlStash.rawHtmlBlocks:
        m = re.match(r'<pre[^>]*><code(?: class="language-([\w-]+)")?[^>]*>(.*)</code></pre>',
                     str(raw), re.S)
        if m:
            code.append((m.group(1) or "", _unescape(m.group(2))))
    seen = {}
    anchors = {i: github_slug(t, seen) for i, t in md.fw_headings}
    return Page(anchors, md.fw_links, code, md.fw_prose)


def _unescape(s):
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


_anchor_cache = {}


def anchors_of(path):
    path = os.path.realpath(path)
    if path not in _anchor_cache:
        _anchor_cache[path] = render(path).anchors
    return _anchor_cache[path]


def check_link(root, src, href):
    """Problem with the link HREF in file SRC (absolute path), or None.
    External links and mail are not followed."""
    u = urlsplit(href)
    if u.scheme or u.netloc or href.startswith("/"):
        return None
    if u.path:
        target = os.path.normpath(os.path.join(os.path.dirname(src), unquote(u.path)))
        rel = os.path.relpath(target, root)
        if rel.startswith(".."):
            return "link %s leaves the tree" % href
        if not os.path.exists(target):
            return "link %s: %s does not exist" % (href, rel)
    else:
        target = src
    if u.fragment:
        if not target.endswith(".md") or not os.path.isfile(target):
            return "link %s: an anchor into a file that is not Markdown" % href
        a = anchors_of(target)
        if u.fragment not in a:
            near = ", ".join([k for k in a if u.fragment[:6] in k][:3])
            return "link %s: %s has no heading #%s%s" % (
                href, os.path.relpath(target, root), u.fragment,
                " (near: %s)" % near if near else "")
        if a[u.fragment] != u.fragment:
            return "link %s: on GitHub that heading is #%s; reword the heading" % (
                href, a[u.fragment])
    return None


# --- the mkdocs hook ---------------------------------------------------------

class _State:
    root = None       # the tree (the folder of mkdocs.yml)
    docs = None       # docs_dir
    repo = None       # repo_url
    page = None       # absolute source path of the page being rendered
    links = []        # (page, href) of every relative link seen


class _RepoLinks(Treeprocessor):
    """Before mkdocs's own link rewriting: links that leave docs_dir become
    links into the repository, or a warning when their target is missing."""

    def run(self, root):
        for el in root.iter():
            key = {"a": "href", "img": "src"}.get(el.tag)
            if key is None or el.get(key) is None:
                continue
            href = el.get(key)
            u = urlsplit(href)
            if u.scheme or u.netloc or href.startswith("/"):
                continue
            _State.links.append((_State.page, href))
            if not u.path:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(_State.page), unquote(u.path)))
            if os.path.relpath(target, _State.docs).startswith(".."):
                problem = check_link(_State.root, _State.page, href)
                if problem:
                    continue  # reported with the anchors, in on_post_build
                rel = os.path.relpath(target, _State.root)
                kind = "tree" if os.path.isdir(target) else "blob"
                el.set(key, "%s/%s/main/%s%s" % (_State.repo.rstrip("/"), kind, rel,
                                                 "#" + u.fragment if u.fragment else ""))
        return root


class _RepoLinksExt(Extension):
    def extendMarkdown(self, md):
        md.treeprocessors.register(_RepoLinks(md), "fw_repo_links", 1)


def on_config(config):
    _State.root = os.path.dirname(os.path.abspath(config["config_file_path"]))
    _State.docs = os.path.abspath(config["docs_dir"])
    _State.repo = config["repo_url"]
    _State.links = []
    config["markdown_extensions"].append(_RepoLinksExt())
    return config


def on_files(files, config):
    """doc/ also holds the man page sources and their generator: not the site's."""
    for f in list(files):
        if f.src_uri.endswith((".scd", ".py")) or os.path.basename(f.src_uri) == "meson.build":
            files.remove(f)
    return files


def on_nav(nav, config, files):
    in_nav = {p.file.src_uri for p in nav.pages}
    for f in files.documentation_pages():
        if f.src_uri not in in_nav:
            log.warning("doc/%s is not in the nav of mkdocs.yml", f.src_uri)
    return nav


def on_page_markdown(text, page, config, files):
    _State.page = page.file.abs_src_path
    return text


def on_post_build(config):
    for page, href in _State.links:
        problem = check_link(_State.root, page, href)
        if problem:
            log.warning("%s: %s", os.path.relpath(page, _State.root), problem)


# --- the program ---------------------------------------------------------------

def cmd_links(root, files):
    bad = 0
    for f in files:
        path = os.path.abspath(f)
        links = render(path).links
        for href in links:
            problem = check_link(root, path, href)
            if problem:
                print("%s: %s" % (os.path.relpath(path, root), problem))
                bad += 1
        print("%s: %d links checked" % (os.path.relpath(path, root), len(links)))
    return bad


def cmd_runbook(root, rules):
    bad = n = 0
    for line in open(rules, encoding="utf-8"):
        m = re.match(r'\s*runbook_url: ".*\{\{ else \}\}(\S+?)\{\{ end \}\}(#\S+)"$', line)
        if m:
            n += 1
            problem = check_link(root, os.path.join(root, "README.md"), m.group(1) + m.group(2))
            if problem:
                print("%s: runbook_url: %s" % (os.path.relpath(rules, root), problem))
                bad += 1
    print("%d runbook_url anchors checked" % n)
    return bad if n else 1


def read_help(help_dir):
    """{program or 'flakectl CMD': set of options}, settings {section: keys}."""
    opts, settings = {}, {}
    for name in sorted(os.listdir(help_dir)):
        text = open(os.path.join(help_dir, name), encoding="utf-8").read()
        prog = name.replace("_", " ")
        opts[prog] = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", text))
        if prog in ("flakewire", "flakesock"):
            m = re.search(r"\[port0\] \.\. \[port(\d+)\]", text)
            ports = ["port%d" % i for i in range(int(m.group(1)) + 1 if m else 1)]
            for sec, key in re.findall(r"^    ([a-zN_]+[0-9]*)\.([a-z0-9_]+) =", text, re.M):
                for s in (ports if sec == "portN" else [sec]):
                    settings.setdefault(s, set()).add(key)
    opts["flakectl"] |= {"--help"}
    return opts, settings


SECTION_KEY = re.compile(r"(?<![\w\[])\[([a-z][a-z0-9_]*)\](?:[ \t]+([a-z][a-z0-9_]*)\b)?")
DOTTED = re.compile(r"^([a-z][a-z0-9]*)\.([a-z0-9_]+)(?:=.*)?$")
FILE_NAME = re.compile(r"^[\w/.-]+\.(c|h|py|sh|md|json|ini|txt|bpf\.c)$")  # fleet.c is a file, not [fleet] c
OPTION = re.compile(r"(?<![\w\-./=$])(--?[a-z][\w-]*)")


def commands(code):
    """Shell-like command lines of a code text: continuations joined, comments
    cut, split at | ; && || &."""
    code = code.replace("\\\n", " ")
    for line in code.splitlines():
        line = re.sub(r"(^|\s)#.*", "", line)
        for cmd in re.split(r"\|\||&&|[|;&]", line):
            if cmd.strip():
                yield cmd.split()


def cmd_names(root, help_dir, files):
    opts, settings = read_help(help_dir)
    ours_all = set().union(*opts.values())
    subcmds = {p.split(" ", 1)[1] for p in opts if p.startswith("flakectl ")}
    problems, foreign, bare = [], set(), []

    def key_ok(where, sec, key):
        if sec not in settings:
            problems.append("%s: [%s] is not a section of flakewire --help" % (where, sec))
        elif key and key not in settings[sec]:
            problems.append("%s: [%s] %s is not a key of flakewire or flakesock --help"
                            % (where, sec, key))

    for f in files:
        where = os.path.relpath(os.path.abspath(f), root)
        for _, text in render(f).code:
            # config keys: [section] key, section.key as a whole span or after --set
            ini_section = None
            for line in text.splitlines():
                m = re.fullmatch(r"\s*\[([a-z][a-z0-9_]*)\]\s*", line)
                if m and "\n" in text:
                    ini_section = m.group(1)
                    key_ok(where, ini_section, None)
                    continue
                m = re.fullmatch(r"\s*([a-z][a-z0-9_]*)\s*=.*", line)
                if m and ini_section:
                    key_ok(where, ini_section, m.group(1))
                    continue
                ini_section = None
                for sec, key in SECTION_KEY.findall(line):
                    key_ok(where, sec, key)
            m = DOTTED.match(text.strip())
            if m and m.group(1) in settings and not FILE_NAME.search(text.strip()):
                key_ok(where, m.group(1), m.group(2))
            # options
            for words in commands(text):
                progs = [i for i, w in enumerate(words) if os.path.basename(w) in OURS]
                if not progs:
                    if words[0].startswith("-"):
                        bare.append((where, words))
                    else:
                        foreign.update(OPTION.findall(" ".join(words[1:])))
                    continue
                i = progs[0]
                prog, rest = os.path.basename(words[i]), words[i + 1:]
                if prog == "flakewire":
                    if "--" not in rest:
                        foreign.update(o for o in OPTION.findall(" ".join(rest))
                                       if o not in ("--help", "--print-config", "--version"))
                        continue
                    foreign.update(OPTION.findall(" ".join(rest[:rest.index("--")])))
                    rest = rest[rest.index("--") + 1:]
                    known = opts["flakewire"]
                elif prog == "flakectl":
                    sub = next((w for w in rest if not w.startswith("-")), None)
                    if sub is None or not re.fullmatch(r"[a-z][a-z-]*", sub):
                        known = opts["flakectl"]
                    elif sub == "help":
                        continue
                    elif sub not in subcmds:
                        problems.append("%s: flakectl has no command %s: %s"
                                        % (where, sub, " ".join(words)))
                        continue
                    else:
                        known = opts["flakectl " + sub]
                else:
                    known = opts[prog]
                joined = " ".join(rest)
                for o in OPTION.findall(joined):
                    if o not in known:
                        problems.append("%s: %s has no option %s: %s"
                                        % (where, prog if prog != "flakectl" or not rest
                                           else "flakectl " + rest[0], o, " ".join(words)))
                for arg in re.findall(r"(?:--set|-s)[ =](\S+?)=", joined):
                    m = DOTTED.match(arg)
                    if prog != "flakectl" and m:
                        key_ok(where, m.group(1), m.group(2))
    # a span of bare options (`--listen ::`): one of ours, or of a tool a page runs
    for where, words in bare:
        for o in OPTION.findall(" ".join(words)):
            if o not in ours_all and o not in foreign:
                problems.append("%s: option %s (in `%s`) is not an option of flakectl, "
                                "flakesock or flakewire, nor of a command the docs show; "
                                "name its program" % (where, o, " ".join(words)))
    for p in problems:
        print(p)
    print("%d files: options and config keys checked against --help" % len(files))
    return len(problems)


def exported_metrics(root):
    names = set()
    for src in ("app/flakewire/responder.c", "lib/responder/responder_metrics.c",
                "lib/metrics/serve_metrics.c", "lib/fleet/fleet_metrics.c"):
        path = os.path.join(root, src)
        if os.path.exists(path):
            names |= set(re.findall(r'"(flakewire_[a-z0-9_]+)"', open(path, encoding="utf-8").read()))
    return names


def compile_c(root, text):
    """Error of `cc -fsyntax-only` on a C block of a page (wrapped in a
    function with the public headers included when it has no main), or None."""
    import subprocess
    import tempfile
    incs = sorted(os.path.join(root, "lib", d) for d in os.listdir(os.path.join(root, "lib"))
                  if os.path.isdir(os.path.join(root, "lib", d)))
    if not re.search(r"\bmain\s*\(", text):
        heads = sorted({h for d in incs for h in os.listdir(d)
                        if re.fullmatch(r"fw_(client|err|uuid|layout|wire)\.h", h)})
        text = "".join('#include "%s"\n' % h for h in heads) + \
            "#include <stdint.h>\nvoid fw_doc_example(void);\nvoid fw_doc_example(void)\n{\n" + \
            text + "\n}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".c") as t:
        t.write(text)
        t.flush()
        r = subprocess.run(["cc", "-std=c11", "-fsyntax-only", "-Werror=implicit-function-declaration",
                            "-Wno-unused"] + ["-I" + d for d in incs] + [t.name],
                           capture_output=True, text=True)
    return r.stderr.strip().replace(t.name, "block") if r.returncode else None


def cmd_examples(root, flakectl, flakewire, files):
    """```ini blocks pass flakewire --check-config; ```c blocks compile
    against lib/; `$ flakectl decode ...` lines print what the page shows;
    metric names in metrics.md and runbook.md are exported by a responder."""
    import subprocess
    import tempfile
    problems, n = [], 0
    exported = exported_metrics(root)
    for f in files:
        where = os.path.relpath(os.path.abspath(f), root)
        for lang, text in render(f).code:
            if lang == "ini":
                n += 1
                with tempfile.NamedTemporaryFile("w", suffix=".ini") as t:
                    t.write(text)
                    t.flush()
                    r = subprocess.run([flakewire, "--", "--config", t.name, "--check-config"],
                                       capture_output=True, text=True)
                if r.returncode != 0:
                    problems.append("%s: an ini block fails flakewire --check-config: %s"
                                    % (where, (r.stdout + r.stderr).strip()))
            elif lang == "c":
                n += 1
                problem = compile_c(root, text)
                if problem:
                    problems.append("%s: a C block does not compile against lib/: %s"
                                    % (where, problem))
            elif lang is not None and text.startswith("$ "):
                blocks = re.split(r"^\$ ", text, flags=re.M)[1:]
                for b in blocks:
                    cmd, _, shown = b.partition("\n")
                    words = cmd.split()
                    if os.path.basename(words[0]) != "flakectl" or words[1] != "decode":
                        continue
                    n += 1
                    r = subprocess.run([flakectl] + words[1:], capture_output=True, text=True)
                    if r.stdout.split() != shown.split():
                        problems.append("%s: `%s` prints\n%s\nnot what the page shows:\n%s"
                                        % (where, cmd, r.stdout.rstrip(), shown.rstrip()))
            if os.path.basename(f) in ("metrics.md", "runbook.md"):
                for name in re.findall(r"(?<![\w/])(flakewire_[a-z0-9_]+)", text):
                    n += 1
                    if name != "flakewire_runbook" and name not in exported:
                        problems.append("%s: metric %s is exported by no responder" % (where, name))
    for p in problems:
        print(p)
    print("%d examples, config blocks and metric names checked" % n)
    return len(problems)


POINTER = re.compile(r"(?<![\w/.-])(doc/[\w/.-]+?\.md(?:#[\w-]+)?)")


def cmd_pointers(root):
    """Every doc/PAGE.md[#anchor] named in the sources (headers, programs,
    scripts, units, alert rules) resolves."""
    bad = n = 0
    for top in ("lib", "app", "dist", "config", "scripts", "tests", "clients", "doc"):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            if os.path.relpath(d, root) == os.path.join("tests", "docs"):
                dirs[:] = []
                continue  # this checker and its test, whose doc/PAGE.md are placeholders
            dirs[:] = [x for x in dirs if x not in ("node_modules", "target", "__pycache__")]
            for name in names:
                if not name.endswith((".h", ".c", ".sh", ".py", ".in", ".yml", ".build", ".scd",
                                      ".go", ".java", ".ts", ".js")):
                    continue
                path = os.path.join(d, name)
                try:
                    text = open(path, encoding="utf-8").read()
                except UnicodeDecodeError:
                    continue
                for ref in POINTER.findall(text):
                    n += 1
                    problem = check_link(root, os.path.join(root, "README.md"), ref)
                    if problem:
                        print("%s: %s" % (os.path.relpath(path, root), problem))
                        bad += 1
    print("%d pointers from the sources into doc/ checked" % n)
    return bad


DATED = re.compile(r"\b20\d\d-\d\d-\d\d[T ]\d\d:\d\d|\b\d\d:\d\dZ\b|\b\d\d:\d\d UTC\b"
                   r"|\bcommits? `?[0-9a-f]{7,40}\b|\b(?:first|second|third|fourth|fifth) pass\b")


def cmd_dated(root, files):
    """The manual is not a log of runs: no run's date or time, commit hash
    or numbered pass in the prose of a page (code and example output may
    hold timestamps)."""
    bad = 0
    for f in files:
        for m in DATED.finditer(render(f).prose):
            print("%s: '%s' reads as a log of runs: give the command and the machine instead"
                  % (os.path.relpath(os.path.abspath(f), root), m.group(0)))
            bad += 1
    print("%d files: no dated runs, commit hashes or passes" % len(files))
    return bad


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cmd, root = argv[1], os.path.abspath(argv[2])
    if cmd == "links":
        bad = cmd_links(root, argv[3:])
    elif cmd == "runbook":
        bad = cmd_runbook(root, argv[3])
    elif cmd == "dated":
        bad = cmd_dated(root, argv[3:])
    elif cmd == "pointers":
        bad = cmd_pointers(root)
    elif cmd == "examples":
        bad = cmd_examples(root, argv[3], argv[4], argv[5:])
    elif cmd == "names":
        bad = cmd_names(root, argv[3], argv[4:])
    else:
        print(__doc__)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

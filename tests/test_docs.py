"""The docs cannot drift from the code: every snippet runs, every number is checked, every code
link still points at the line it quotes, every public name is indexed in docs/api.md.

1. Snippets. Every ```python block of docs/*.md and docs/zh/*.md runs; the blocks of one page run
   in order in one namespace, from a temporary working directory. When a ```text block follows a
   python block (only blank lines between), the python block's printed output must equal it
   (trailing whitespace ignored; `...` is a wildcard, as doctest's ELLIPSIS). A python block of
   the pages this file owns (OWN_PAGES) that prints must be followed by its text block. Put
   `<!-- skip-test -->` on the line right before a fence to skip that block (rendering with an
   external program, for example).
2. Links. Every relative link must name an existing file. A link to a line,
   `(../models/nets/gpt.py#L60)`, needs a file of at least 60 lines, and when the link is followed
   on its line by a quote in backticks
   (`[models/nets/gpt.py#L60](../models/nets/gpt.py#L60): `att = ...``) the quote must be on
   line 60 itself (no slack: the pages promise the quoted line sits at its link). On the pages
   this file owns every line link must carry a quote.
3. Shell commands. Every ```bash / ```sh / ```console block of docs/, docs/zh/ and README.md,
   and every bare ``` block whose lines start with `$ `, is run by test_shell_blocks in a temporary
   directory with this Python's bin/ first on PATH (so `tinygradx` and `python` are the venv's),
   with a timeout, and must succeed; in a `$ ` block, every output line shown must appear in what
   the commands print (spaces collapsed; `...` in a shown line matches any text). A `$ `
   command with a here-document (`$ cat > m.py <<'EOF'`) takes the lines up to its terminator.
   A block that should not run (it trains for minutes, installs packages, rewrites the test
   suite's files) carries `<!-- not run: the reason -->` on the line right before its fence; one
   that compares with PyTorch carries `<!-- needs torch -->` there, and runs where torch is
   installed (the oracle extra).
4. API index. Every public name of tinygradx, tinygradx.functional.__all__ and every class of
   tinygradx.nn / tinygradx.optim appears in docs/api.md in backticks, and has a docstring.

Refresh the text blocks after an intended change (then read the diff before committing):

    python tests/test_docs.py --update docs/walkthrough.md docs/zh/walkthrough.md
"""
from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import os
import re
import sys
import tempfile
import time
import types

import pytest

# The pages' shell blocks run `tinygradx graph ... --out g.svg` and friends: they meet a renderer.
pytestmark = pytest.mark.system_programs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
PAGES = sorted(
    [os.path.join("docs", f) for f in os.listdir(DOCS) if f.endswith(".md")]
    + ([os.path.join("docs", "zh", f) for f in os.listdir(os.path.join(DOCS, "zh"))
        if f.endswith(".md")] if os.path.isdir(os.path.join(DOCS, "zh")) else []))
OWN_PAGES = {"docs/walkthrough.md", "docs/zh/walkthrough.md", "docs/autograd.md",
             "docs/zh/autograd.md", "docs/index.md", "docs/api.md"}
# pages other people are writing: a link to one of them may arrive before the page itself
PENDING_PAGES = set()  # pages linked before they were written (none now)
SKIP_MARK = re.compile(r"^<!-- skip-test: (\S.*?) -->$")   # before a python block: why not run
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->$")    # before a shell block: why it is not run
NEEDS_TORCH = "<!-- needs torch -->"                     # before a shell block: run with torch
SHELL_LANGS = {"bash", "sh", "console", "shell"}
SHELL_TIMEOUT = 60                                         # seconds per block
LINE_SLACK = 0                     # a quote must sit exactly on the line its link names

FENCE = re.compile(r"^```(\w*)\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
QUOTE_AFTER = re.compile(r"^\)?\s*:?\s*`([^`]+)`")


# ------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------

class Block:
    def __init__(self, lang, start, end, code, skip):
        self.lang, self.start, self.end, self.code, self.skip = lang, start, end, code, skip
        self.expected = None          # the text Block that follows, if any


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read().split("\n")


def blocks(lines):
    """Fenced blocks of a page (line numbers 0-based: start = the opening fence, end = the
    closing one), with each python block's following text block attached."""
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise AssertionError(f"unclosed fence at line {i + 1}")
        skip = i > 0 and bool(SKIP_MARK.match(lines[i - 1].strip()))
        out.append(Block(m.group(1), i, j, "\n".join(lines[i + 1:j]), skip))
        i = j + 1
    for a, b in zip(out[:-1], out[1:], strict=True):
        between = lines[a.end + 1:b.start]
        if a.lang == "python" and b.lang == "text" and all(not s.strip() for s in between):
            a.expected = b
    return out


def normalise(text):
    lines = [s.rstrip() for s in text.strip("\n").split("\n")]
    return "\n".join(lines).strip("\n")


def matches(expected, got):
    """Equal after normalising, with `...` in `expected` matching any text (even newlines)."""
    expected, got = normalise(expected), normalise(got)
    if "..." not in expected:
        return expected == got
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, got, flags=re.DOTALL) is not None


# ------------------------------------------------------------------------------------------
# running a page
# ------------------------------------------------------------------------------------------

def run_page(page, drawn=None):
    """Run the python blocks of `page` in order in one namespace, from a temp dir.
    Yields (block, printed output) for every block that ran. With a dict `drawn`, the pictures
    the blocks wrote under docs/img (relative to the temp dir) are put into it at the end:
    {path relative to docs/img: fingerprint}."""
    import numpy as np

    import tinygradx as tgx
    lines = read(page)
    namespace = {"__name__": "__docs__"}
    cwd = os.getcwd()
    rng_state = tgx.get_rng_state()
    with tempfile.TemporaryDirectory() as tmp, np.printoptions():
        os.chdir(tmp)
        # a snippet may write a committed picture (docs/img/...): here it writes the temp copy,
        # which test_snippets then holds against the committed one
        os.makedirs(os.path.join("docs", "img", "zh"))
        try:
            for b in blocks(lines):
                if b.lang != "python" or b.skip:
                    continue
                buf = io.StringIO()
                code = compile(b.code, f"{page}:{b.start + 2}", "exec")
                with contextlib.redirect_stdout(buf):
                    exec(code, namespace)
                yield b, buf.getvalue()
            if drawn is not None:
                drawn.update(pictures_under(os.path.join(tmp, "docs", "img")))
        finally:
            os.chdir(cwd)
            tgx.set_rng_state(rng_state)         # a page's manual_seed must not leak out


def pictures_under(folder):
    """{path relative to folder: fingerprint} of the PNG and SVG files under folder."""
    if not os.path.isdir(folder):
        return {}
    from tinygradx.models.apps.figures import picture_fingerprint
    return {os.path.relpath(os.path.join(f, n), folder): picture_fingerprint(os.path.join(f, n))
            for f, _, names in os.walk(folder) for n in names if n.endswith((".png", ".svg"))}


def snippet_pages():
    return [p for p in PAGES if any(b.lang == "python" for b in blocks(read(p)))]


@pytest.mark.parametrize("page", snippet_pages())
def test_snippets(page):
    try:
        from tinygradx.graph.viz import RendererNotFound
    except ImportError:                                   # pragma: no cover
        RendererNotFound = ()
    start = time.perf_counter()
    n = 0
    drawn = {}
    try:
        for b, out in run_page(page, drawn):
            n += 1
            where = f"{page}, the python block at line {b.start + 1}"
            if b.expected is not None:
                assert matches(b.expected.code, out), (
                    f"{where} printed\n{out}\nbut the text block at line {b.expected.start + 1} "
                    f"says\n{b.expected.code}\n(refresh with: python tests/test_docs.py --update "
                    f"{page})")
            elif page in OWN_PAGES:
                assert not out.strip(), (f"{where} printed output but no ```text block follows "
                                         f"it:\n{out}")
    except RendererNotFound as err:
        pytest.skip(f"{page} renders a graph and no renderer is installed: {err}")
    assert n > 0
    assert time.perf_counter() - start < 30, f"{page}: snippets took over 30 s; use smaller sizes"
    # a snippet that writes a picture of docs/img draws what is committed there: its structure,
    # names and labels, and for a plot its numbers (models/apps/figures.py, docs/make_pictures.py)
    from tinygradx.models.apps.figures import picture_fingerprint, same_picture
    for rel, fresh in drawn.items():
        committed = os.path.join(DOCS, "img", rel)
        assert os.path.exists(committed), f"{page} draws docs/img/{rel}, which is not committed"
        why = same_picture(picture_fingerprint(committed), fresh, data=rel.endswith(".png"))
        assert not why, (f"{page} draws docs/img/{rel} unlike the committed picture: {why} "
                         f"(redraw: python docs/make_pictures.py)")


def test_own_pages_have_no_orphan_output_and_few_skips():
    """On our pages every ```text block is the output of the python block before it (so it is
    checked), and skipped snippets stay rare."""
    for page in sorted(OWN_PAGES):
        if not os.path.exists(os.path.join(ROOT, page)):
            continue
        bs = blocks(read(page))
        paired = {id(b.expected) for b in bs if b.expected is not None}
        orphans = [b.start + 1 for b in bs if b.lang == "text" and id(b) not in paired]
        assert not orphans, f"{page}: text blocks at lines {orphans} follow no python block"
        skipped = [b.start + 1 for b in bs if b.lang == "python" and b.skip]
        assert len(skipped) <= 2, f"{page}: {len(skipped)} skipped snippets (lines {skipped})"


def test_every_skipped_snippet_says_why_and_design_md_counts_them():
    """A python block is left out of the test only with `<!-- skip-test: why -->` before it (a
    bare or misspelt mark would leave it unrun without a word), and docs/design.md states how
    many there are, so "every snippet runs" is never claimed wholesale."""
    total = 0
    for page in PAGES + ["README.md"]:
        lines = read(page)
        for i, line in enumerate(lines):
            if line.strip().startswith("<!--") and "skip-test" in line:
                assert SKIP_MARK.match(line.strip()), (
                    f"{page}:{i + 1}: write the mark as <!-- skip-test: why --> (got {line!r})")
                assert i + 1 < len(lines) and lines[i + 1].startswith("```python"), (
                    f"{page}:{i + 1}: a skip-test mark must sit right before a python block")
                total += 1
    design = "\n".join(read("docs/design.md"))
    m = re.search(r"except the (\d+) marked `<!-- skip-test: why -->`", design)
    assert m, "docs/design.md must say how many snippets are skipped"
    assert int(m.group(1)) == total, f"docs/design.md says {m.group(1)} skipped snippets, " \
                                     f"the pages have {total}"
    # the index says it to every reader, in both languages
    index = " ".join(read("docs/index.md"))
    m = re.search(r"all\s+but\s+(\d+)\s+of them", index)
    assert m and int(m.group(1)) == total, f"docs/index.md must say the snippets run all but " \
                                           f"{total} of them"
    zh = " ".join(read("docs/zh/index.md"))
    m = re.search(r"除\s*(\d+)\s*段之外", zh)
    assert m and int(m.group(1)) == total, f"docs/zh/index.md must say 除 {total} 段之外"


# ------------------------------------------------------------------------------------------
# links
# ------------------------------------------------------------------------------------------

def links(page):
    """(line number, target, quote or None) for every relative link of a page, fenced code
    excluded."""
    lines = read(page)
    fenced = set()
    for b in blocks(lines):
        fenced.update(range(b.start, b.end + 1))
    out = []
    for i, line in enumerate(lines):
        if i in fenced:
            continue
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue                                   # http:, mailto:, in-page anchors
            q = QUOTE_AFTER.match(line[m.end():])
            out.append((i + 1, target, q.group(1) if q else None))
    return out


def resolve(page, target):
    path, _, anchor = target.partition("#")
    full = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path))
    return full, anchor


@pytest.mark.parametrize("page", PAGES)
def test_links(page):
    problems = []
    for lineno, target, quote in links(page):
        full, anchor = resolve(page, target)
        rel = os.path.relpath(full, ROOT).replace(os.sep, "/")
        where = f"{page}:{lineno}: ({target})"
        if not os.path.exists(full):
            if rel not in PENDING_PAGES:
                problems.append(f"{where}: {rel} does not exist")
            continue
        m = re.fullmatch(r"L(\d+)(?:-L(\d+))?", anchor)
        if not m:
            if page in OWN_PAGES and quote is not None:
                problems.append(f"{where}: a quote without a line anchor")
            continue
        with open(full, encoding="utf-8") as f:
            src = f.read().split("\n")
        if src and src[-1] == "":
            src = src[:-1]
        n = int(m.group(1))
        if n > len(src):
            problems.append(f"{where}: {rel} has only {len(src)} lines")
            continue
        if quote is None:
            if page in OWN_PAGES:
                problems.append(f"{where}: a line link must quote the line in backticks")
            continue
        lo, hi = max(1, n - LINE_SLACK), min(len(src), n + LINE_SLACK)
        found = [k for k in range(lo, hi + 1) if quote.strip() in src[k - 1]]
        if not found:
            exact = [k + 1 for k, s in enumerate(src) if quote.strip() in s]
            hint = f" (it is at line {exact[0]} now)" if exact else " (it is gone)"
            problems.append(f"{where}: `{quote}` is not on L{n}{hint} "
                            f"(re-anchor with: python tests/test_docs.py --fix-links {page})")
    assert not problems, "\n".join(problems)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    import unicodedata
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LMN"
                   or unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


@pytest.mark.parametrize("page", sorted(OWN_PAGES))
def test_in_page_anchors(page):
    if not os.path.exists(os.path.join(ROOT, page)):
        pytest.skip(f"{page} not written yet")
    lines = read(page)
    fenced = set()
    for b in blocks(lines):
        fenced.update(range(b.start, b.end + 1))
    anchors = {slug(s.lstrip("#")) for i, s in enumerate(lines)
               if i not in fenced and re.match(r"^#{1,6} ", s)}
    bad = [m.group(1) for i, s in enumerate(lines) if i not in fenced
           for m in re.finditer(r"\]\(#([^)]+)\)", s) if m.group(1) not in anchors]
    assert not bad, f"{page}: anchors with no heading: {bad}"


def test_links_are_checked_somewhere():
    total = sum(1 for p in OWN_PAGES if os.path.exists(os.path.join(ROOT, p))
                for _, t, q in links(p) if "#L" in t and q)
    assert total >= 40, f"only {total} quoted line links on the docs pages"


# ------------------------------------------------------------------------------------------
# the Chinese edition
# ------------------------------------------------------------------------------------------

# English pages that have no docs/zh/ translation yet; take a page off when its translation lands
NOT_YET_IN_ZH: set[str] = set()       # English pages still without a docs/zh/ page


def english_pages():
    return [p for p in PAGES if not p.startswith("docs/zh/")]


def test_every_page_has_a_zh_counterpart():
    def zh(p):
        return os.path.join(ROOT, "docs", "zh", os.path.basename(p))
    missing = [p for p in english_pages() if p not in NOT_YET_IN_ZH and not os.path.exists(zh(p))]
    assert not missing, f"no docs/zh/ translation of {missing} (translate it, or list it in " \
                        f"NOT_YET_IN_ZH)"
    done = sorted(p for p in NOT_YET_IN_ZH if os.path.exists(zh(p)))
    assert not done, f"{done} have a docs/zh/ translation now: take them off NOT_YET_IN_ZH"
    orphans = [p for p in PAGES if p.startswith("docs/zh/")
               and os.path.join("docs", os.path.basename(p)) not in english_pages()]
    assert not orphans, f"{orphans} translate no English page"


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("docs/zh/")])
def test_zh_page_has_the_english_pages_python_blocks(page):
    """A translation keeps every snippet: as many ```python blocks as the English page."""
    def count(p):
        return sum(b.lang == "python" for b in blocks(read(p)))
    english = os.path.join("docs", os.path.basename(page))
    assert count(page) == count(english), (
        f"{page} has {count(page)} python blocks, {english} has {count(english)}")


ZH_CONTENTS = "目录"          # the one section a Chinese page may add: its table of contents


def sections(page):
    """The sections of a page in order: (heading level, title, what it holds: its python,
    shell, text and bare code blocks, its tables, the pictures it shows)."""
    lines = read(page)
    fenced = {}
    for b in blocks(lines):
        for i in range(b.start, b.end + 1):
            fenced[i] = b
    out = [[0, "", {"python": 0, "shell": 0, "text": 0, "bare": 0, "tables": 0, "pictures": []}]]
    for i, line in enumerate(lines):
        holds = out[-1][2]
        if i in fenced:
            b = fenced[i]
            if i == b.start:
                kind = "shell" if b.lang in SHELL_LANGS else b.lang or "bare"
                holds[kind if kind in holds else "bare"] += 1
            continue
        m = re.match(r"^(#{1,6}) (.*)", line)
        if m:
            out.append([len(m.group(1)), m.group(2).strip(), {k: 0 for k in holds}])
            out[-1][2]["pictures"] = []
            continue
        if re.match(r"^\|[\s:|-]+\|\s*$", line) and "-" in line:
            holds["tables"] += 1
        holds["pictures"] += [os.path.basename(t) for t in re.findall(r"!\[[^\]]*\]\(([^)]+)\)",
                                                                     line)]
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("docs/zh/")])
def test_zh_page_has_every_section_of_the_english_page(page):
    """Section by section: the Chinese page has the English page's headings at the same levels,
    in the same order, and each section holds what the English one holds (its snippets, shell
    blocks, outputs, tables and pictures). Only a table of contents (目录) may be added."""
    english = os.path.join("docs", os.path.basename(page))
    en = sections(english)
    zh = [s for s in sections(page) if s[1] != ZH_CONTENTS]
    assert [s[0] for s in zh] == [s[0] for s in en], (
        f"{page} has the headings {[(s[0], s[1]) for s in zh]}, {english} has "
        f"{[(s[0], s[1]) for s in en]}: a section is missing or out of place")
    for (_, title, holds), (_, zh_title, zh_holds) in zip(en, zh, strict=True):
        assert holds == zh_holds, (f"{english}, section {title!r} holds {holds}; its Chinese "
                                   f"section {zh_title!r} holds {zh_holds}")


# ------------------------------------------------------------------------------------------
# shell commands
# ------------------------------------------------------------------------------------------

def shell_blocks(page):
    """(block, commands, shown output lines, reason not run or None, needs torch) for every
    shell block."""
    lines = read(page)
    out = []
    for b in blocks(lines):
        body = b.code.split("\n")
        prompt = any(s.startswith("$ ") for s in body)
        if b.lang not in SHELL_LANGS and not (b.lang == "" and prompt):
            continue
        before = lines[b.start - 1].strip() if b.start > 0 else ""
        m = NOT_RUN.match(before)
        if prompt or b.lang == "console":
            cmds, shown = prompt_commands(body)
        else:
            cmds, shown = [b.code], []
        out.append((b, cmds, shown, m.group(1) if m else None, before == NEEDS_TORCH))
    return out


def prompt_commands(body):
    """(commands, shown output lines) of a block of `$ ` lines; a command with a here-document
    (`<<'EOF'`) takes the lines up to its terminator."""
    cmds, shown, rest = [], [], iter(body)
    for s in rest:
        if not s.startswith("$ "):
            if s.strip():
                shown.append(s)
            continue
        cmd = s[2:]
        here = re.search(r"<<-?\s*(['\"]?)(\w+)\1", cmd)
        if here:
            for t in rest:
                cmd += "\n" + t
                if t.strip() == here.group(2):
                    break
        cmds.append(cmd)
    return cmds, shown


def shown_in(line, printed):
    """Whether a shown output line is among the printed ones (spaces collapsed; `...` matches
    any text)."""
    line = squash(line)
    if "..." not in line:
        return line in printed
    pattern = re.compile(".*".join(re.escape(p) for p in line.split("...")) + r"\Z")
    return any(pattern.match(p) for p in printed)


def shell_pages():
    return [p for p in PAGES + ["README.md"] if shell_blocks(p)]


def squash(text):
    return " ".join(text.split())


@pytest.mark.parametrize("page", shell_pages())
def test_shell_blocks(page):
    import subprocess
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    ran = 0
    for b, cmds, shown, reason, torch in shell_blocks(page):
        where = f"{page}, the shell block at line {b.start + 1}"
        if reason is not None or (torch and importlib.util.find_spec("torch") is None):
            continue
        printed = []
        with tempfile.TemporaryDirectory() as tmp:
            for cmd in cmds:
                try:
                    r = subprocess.run(["bash", "-e", "-c", cmd], cwd=tmp, env=env, text=True,
                                       capture_output=True, timeout=SHELL_TIMEOUT)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"{where}: `{cmd}` ran over {SHELL_TIMEOUT} s; make it faster or "
                                f"mark the block <!-- not run: why -->")
                assert r.returncode == 0, (f"{where}: `{cmd}` failed ({r.returncode}):\n"
                                           f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
                printed += [squash(s) for s in r.stdout.split("\n")]
        missing = [s for s in shown if not shown_in(s, printed)]
        assert not missing, f"{where}: these lines are not in the output:\n" + "\n".join(missing)
        ran += 1
    assert ran or page != "docs/graphs.md", f"{page}: no shell block ran"


# ------------------------------------------------------------------------------------------
# the API index
# ------------------------------------------------------------------------------------------

# Public names whose code had no docstring when this list was written (the code is not ours to
# edit here). A name missing from this list must have a docstring; take names off the list as
# their docstrings arrive (the test prints the ones that already have).
KNOWN_MISSING_DOCSTRINGS = set()  # every public name has a docstring now


def public_api():
    """{qualified name: object} of what docs/api.md must index."""
    import tinygradx as tgx
    import tinygradx.functional as F
    import tinygradx.nn as nn
    import tinygradx.optim as optim
    api = {}
    for name in dir(tgx):
        obj = getattr(tgx, name)
        if name.startswith("_") or isinstance(obj, types.ModuleType):
            continue
        api[f"tinygradx.{name}"] = obj
    for name in getattr(F, "__all__", [n for n in dir(F) if not n.startswith("_")]):
        api[f"tinygradx.functional.{name}"] = getattr(F, name)
    for mod in (nn, optim):
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__ and not name.startswith("_"):
                api[f"{mod.__name__}.{name}"] = obj
    for name in getattr(optim, "__all__", []):
        api[f"tinygradx.optim.{name}"] = getattr(optim, name)
    return api


def test_api_index_lists_every_public_name():
    with open(os.path.join(DOCS, "api.md"), encoding="utf-8") as f:
        text = f.read()
    missing = []
    for qual in public_api():
        short = qual.rsplit(".", 1)[1]
        if not re.search(r"`(?:[\w.]+\.)?" + re.escape(short) + r"\b", text):
            missing.append(qual)
    assert not missing, "docs/api.md does not list: " + ", ".join(missing)


def test_public_names_have_docstrings():
    import numpy as np
    undocumented = set()
    for qual, obj in public_api().items():
        if isinstance(obj, (type(np.float32), np.dtype)) or obj in (np.bool_,):
            continue                                      # dtype aliases (numpy's own)
        if not (obj.__doc__ or "").strip():
            undocumented.add(qual)
    new = sorted(undocumented - KNOWN_MISSING_DOCSTRINGS)
    fixed = sorted(KNOWN_MISSING_DOCSTRINGS - undocumented)
    if fixed:
        print("documented now, can leave KNOWN_MISSING_DOCSTRINGS: " + ", ".join(fixed))
    assert not new, "public names without a docstring: " + ", ".join(new)


# ------------------------------------------------------------------------------------------
# refreshing the text blocks
# ------------------------------------------------------------------------------------------

def update(page):
    """Rewrite the text block after each python block of `page` with what it prints now
    (inserting one when a block prints and has none)."""
    lines = read(page)
    outputs = {b.start: (b, out) for b, out in run_page(page)}
    edits = []                                            # (start, end, new lines), bottom up
    for b, out in outputs.values():
        new = normalise(out).split("\n") if out.strip() else None
        if b.expected is not None:
            if new is None:
                new = [""]
            if "..." in b.expected.code and matches(b.expected.code, out):
                continue                                  # keep hand-written wildcards
            edits.append((b.expected.start + 1, b.expected.end, new))
        elif new is not None:
            edits.append((b.end + 1, b.end + 1, ["", "```text"] + new + ["```"]))
    for s, e, new in sorted(edits, reverse=True):
        lines[s:e] = new
    with open(os.path.join(ROOT, page), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"{page}: {len(outputs)} snippets run, {len(edits)} text blocks written")


def fix_links(page):
    """Move every #Lnn anchor of a page to the line where its quoted code is now."""
    lines = read(page)
    moved = 0
    for lineno, target, quote in links(page):
        m = re.match(r"^(.*)#L(\d+)$", target)
        if not (m and quote):
            continue
        src = read(os.path.relpath(resolve(page, m.group(1))[0], ROOT))
        hits = ([i + 1 for i, line in enumerate(src) if line.strip() == quote.strip()]
                or [i + 1 for i, line in enumerate(src) if quote.strip() in line])
        n = int(m.group(2))
        if not hits or any(abs(h - n) <= LINE_SLACK for h in hits):
            continue
        best = min(hits, key=lambda h: abs(h - n))
        lines[lineno - 1] = lines[lineno - 1].replace(f"{m.group(1)}#L{n})",
                                                      f"{m.group(1)}#L{best})")
        lines[lineno - 1] = lines[lineno - 1].replace(f"#L{n}]", f"#L{best}]")
        moved += 1
    with open(os.path.join(ROOT, page), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"{page}: {moved} line anchors moved")


if __name__ == "__main__":
    modes = {"--update": update, "--fix-links": fix_links}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.exit("usage: python tests/test_docs.py --update|--fix-links docs/PAGE.md [...]")
    sys.path.insert(0, ROOT)
    for p in sys.argv[2:]:
        modes[sys.argv[1]](os.path.relpath(os.path.abspath(p), ROOT).replace(os.sep, "/"))

"""Write docs/cli.md, the reference of the `tinygradx` command, from its parser, so the page
cannot drift from the flags, their help texts, defaults and examples; and docs/zh/cli.md, the same
tables under a Chinese title, introduction and headings (the help texts stay English).

    python docs/make_cli_reference.py            # rewrite docs/cli.md and docs/zh/cli.md
    python docs/make_cli_reference.py --check    # exit 1 when either page is out of date

tests/models/test_cli_help.py fails when a committed page differs from what this writes.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAGES = {"en": os.path.join(HERE, "cli.md"), "zh": os.path.join(HERE, "zh", "cli.md")}
PAGE = PAGES["en"]


def build(lang="en"):
    """The text of docs/cli.md (lang="zh": docs/zh/cli.md), from the parser `tinygradx` runs."""
    from tinygradx.models.apps import cli, cli_help
    return cli_help.reference_markdown(cli.build_parser(), lang)


def main(argv):
    stale = []
    for lang, page in PAGES.items():
        text = build(lang)
        name = os.path.relpath(page, os.path.dirname(HERE))
        if "--check" in argv:
            same = os.path.exists(page) and open(page, encoding="utf-8").read() == text
            print(f"{name} is up to date" if same else
                  f"{name} is out of date: run python docs/make_cli_reference.py")
            if not same:
                stale.append(name)
            continue
        with open(page, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {name}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

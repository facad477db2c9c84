"""Write docs/cli.md, the reference of the `tinygradx` command, from its parser, so the page
cannot drift from the flags, their help texts, defaults and examples.

    python docs/make_cli_reference.py            # rewrite docs/cli.md
    python docs/make_cli_reference.py --check    # exit 1 when docs/cli.md is out of date

tests/test_cli_help.py fails when the committed page differs from what this writes.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, "cli.md")


def build():
    """The text of docs/cli.md, from the parser `tinygradx` runs."""
    from tinygradx.models.apps import cli, cli_help
    return cli_help.reference_markdown(cli.build_parser())


def main(argv):
    text = build()
    if "--check" in argv:
        with open(PAGE, encoding="utf-8") as f:
            same = f.read() == text
        print("docs/cli.md is up to date" if same else
              "docs/cli.md is out of date: run python docs/make_cli_reference.py")
        return 0 if same else 1
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

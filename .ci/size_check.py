"""Size budget: no Python source file under the given folders may be longer than --max lines.

    python .ci/size_check.py [--max 600] [--report-only DIR ...] [DIR ...]

DIR defaults to tinygradx and models. A file over the budget fails the check (exit 1), except
under a --report-only folder, where it is printed but does not fail: for folders being split up
right now. Standard library only.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", default=["tinygradx", "models"])
    ap.add_argument("--max", type=int, default=600, help="largest allowed line count")
    ap.add_argument("--report-only", nargs="*", default=[], metavar="DIR",
                    help="folders whose files over the budget are listed but do not fail")
    args = ap.parse_args(argv)
    pending = [Path(d) for d in args.report_only]
    files = sorted(p.relative_to(ROOT) for d in args.dirs for p in (ROOT / d).rglob("*.py"))
    over = []
    for rel in files:
        with open(ROOT / rel, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > args.max:
            over.append((rel, n, any(rel.is_relative_to(d) for d in pending)))
    for rel, n, report_only in over:
        note = "  (report only: folder being split)" if report_only else ""
        print(f"size: {rel}: {n} lines > {args.max}{note}")
    failing = [o for o in over if not o[2]]
    print(f"size: {len(files)} files under {', '.join(args.dirs)}; {len(over)} over {args.max} "
          f"lines ({len(failing)} failing, {len(over) - len(failing)} report-only)")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())

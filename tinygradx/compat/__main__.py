"""`python -m tinygradx.compat SCRIPT [ARGS...]`: run a script written for PyTorch on tinygradx.

The script runs as `__main__` with sys.argv = [SCRIPT, *ARGS], its directory first on
sys.path, and `import torch` giving tinygradx's look-alike (tinygradx.compat.run_script), as
`python SCRIPT ARGS...` would run it with PyTorch. `--check SCRIPT [ARGS...]` runs the script's
model on PyTorch and on tinygradx from the same weights and inputs and names the first op that
departs (check.py).
"""
import os
import sys

USAGE = """usage: python -m tinygradx.compat SCRIPT [ARGS...]
       python -m tinygradx.compat --check [OPTIONS] SCRIPT [ARGS...]

Run SCRIPT (a Python file written for PyTorch) with `import torch` giving tinygradx's
look-alike: torch.nn is tinygradx.nn, torch.optim is tinygradx.optim, and any PyTorch API
tinygradx lacks raises an error that names it. ARGS are passed on as sys.argv[1:].
--check compares the script's model with PyTorch's (`--check --help` says how).
What runs and what does not: docs/pytorch-code.md in the tinygradx repository."""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "--check":
        from .check import main as check
        return check(argv[1:])
    script, args = argv[0], argv[1:]
    if script.startswith("-"):
        print(f"python -m tinygradx.compat: error: unknown option {script} (the first "
              f"argument is the script to run)\n\n{USAGE}", file=sys.stderr)
        return 2
    if not os.path.isfile(script):
        print(f"python -m tinygradx.compat: error: no such file: {script}", file=sys.stderr)
        return 2
    from . import run_script
    run_script(script, args)                # the script's own exceptions and exits propagate
    return 0


if __name__ == "__main__":
    sys.exit(main())

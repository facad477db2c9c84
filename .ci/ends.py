"""Test both ends of the support range that pyproject.toml promises.

    python3 .ci/ends.py [--results FILE] [--find-only] [--jobs N] [-- PYTEST ARGS]

* lowest: the lowest Python that `requires-python` allows (its newest patch release found here),
  with numpy pinned to exactly the lower bound of the `numpy>=` dependency;
* newest: the newest Python found here, with the newest numpy pip offers for it.

Interpreters are looked for in pyenv's versions folder ($PYENV_ROOT, else ~/.pyenv) and as
python3.X on PATH; each candidate is run once to learn its real version. An end that cannot be
found, installed or tested fails the script, loudly. Each end gets a venv in .ci-venvs/ (kept, so
a second local run is quick) with the test, viz and plot extras but without torch, and runs the
fast subset: every test except those marked slow (which are whole-model builds and runs; every
op and every error path is still tested). The two ends run at once (--jobs), each in its own
log. Standard library only; needs Python 3.10+ to run.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".ci-venvs"
PYTEST_ARGS = ["-m", "not slow", "-p", "no:cacheprovider"]
SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|error|errors|skipped|deselected)\b.*?)\s*=*$")
PROBE = ("import sys, sysconfig, venv, ensurepip; "
         "print(*sys.version_info[:3], sys.executable, "
         "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))))")


def loud(msg):
    bar = "!" * 100
    print(f"\n{bar}\n!! {msg}\n{bar}\n", flush=True)


def bounds():
    """(lowest Python as (3, minor), lowest numpy as a version string) from pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    py = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)"', text, re.M)
    np_ = re.search(r'"numpy\s*>=\s*([0-9][0-9.]*)', text)
    if not py or not np_:
        raise SystemExit("ends: cannot read requires-python >= or numpy >= from pyproject.toml")
    return (int(py.group(1)), int(py.group(2))), np_.group(1)


def candidates():
    """Interpreter paths to probe: pyenv's versions, then python3.X on PATH."""
    paths = []
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        for d in sorted(pyenv.iterdir()):
            if re.fullmatch(r"3\.\d+\.\d+", d.name):       # no -dev, t (free-threaded), envs
                paths.append(d / "bin" / "python3")
    for minor in range(6, 40):
        found = shutil.which(f"python3.{minor}")
        if found:
            paths.append(Path(found))
    return paths


def interpreters():
    """{(major, minor): (micro, path)}: for each minor version the newest patch release that runs
    and has venv and ensurepip (a pyenv shim for a version it does not activate fails here)."""
    best, seen = {}, set()
    for path in candidates():
        if not os.access(path, os.X_OK):
            continue
        try:
            out = subprocess.run([str(path), "-c", PROBE], capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode != 0:
            continue
        major, minor, micro, exe, free_threaded = out.stdout.split()
        if free_threaded == "1" or os.path.realpath(exe) in seen:
            continue
        seen.add(os.path.realpath(exe))
        key, micro = (int(major), int(minor)), int(micro)
        if key not in best or micro > best[key][0]:
            best[key] = (micro, exe)
    return best


def run(cmd, log, **kw):
    """Run cmd with its output appended to the open file `log`; return the exit code."""
    log.write("+ " + " ".join(str(c) for c in cmd) + "\n")
    log.flush()
    done = subprocess.run([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, **kw)
    return done.returncode


def test_end(label, version, exe, numpy_spec, upgrade, pytest_args):
    """Make the venv, install, run pytest, all logged to .ci-venvs/LABEL-VERSION.log.
    Returns (ok, python version, numpy version, summary, log path)."""
    venv = VENVS / f"{label}-{version}"
    VENVS.mkdir(exist_ok=True)
    logpath = VENVS / f"{label}-{version}.log"
    with open(logpath, "w", encoding="utf-8") as log:
        py = venv / "bin" / "python"
        if not py.exists() and run([exe, "-m", "venv", venv], log) != 0:
            return False, "?", "?", f"could not create a venv with {exe}", logpath
        pip = [py, "-m", "pip", "install", "-q"] + (["-U"] if upgrade else [])
        if run(pip + ["-e", ".[test,viz,plot]", numpy_spec], log, cwd=ROOT) != 0:
            return (False, "?", "?", f"pip could not install .[test,viz,plot] and {numpy_spec}",
                    logpath)
        versions = subprocess.run([py, "-c", "import platform, numpy; "
                                   "print(platform.python_version(), numpy.__version__)"],
                                  capture_output=True, text=True)
        pyv, npv = versions.stdout.split() if versions.returncode == 0 else ("?", "?")
        log.write(f"ends: {label}: Python {pyv} ({exe}), numpy {npv}\n")
        rc = run([py, "-m", "pytest"] + pytest_args, log, cwd=ROOT)
    lines = logpath.read_text(encoding="utf-8", errors="replace").splitlines()
    summary = next((m.group(1) for line in reversed(lines) if (m := SUMMARY.match(line))),
                   "no pytest summary line")
    if rc == 5:
        summary += " (pytest ran no test)"
    return rc == 0, pyv, npv, summary, logpath


def main():
    ap = argparse.ArgumentParser(description="test the lowest and the newest supported ends")
    ap.add_argument("--results", help="append one line per end to this file")
    ap.add_argument("--find-only", action="store_true",
                    help="only say which interpreters the ends would use, then exit")
    ap.add_argument("--jobs", type=int, default=2,
                    help="ends tested at once (default 2: each pytest uses one core)")
    ap.add_argument("pytest_args", nargs="*", help="after --: replaces " + " ".join(PYTEST_ARGS))
    args = ap.parse_args()
    pytest_args = args.pytest_args or PYTEST_ARGS
    (lo_major, lo_minor), numpy_min = bounds()
    found = interpreters()
    print("ends: Pythons found: " + ", ".join(f"{k[0]}.{k[1]}.{v[0]} ({v[1]})"
                                                 for k, v in sorted(found.items())), flush=True)
    ends, lines, ok_all = [], [], True
    lowest = found.get((lo_major, lo_minor))
    if lowest is None:
        loud(f"LOWEST END NOT TESTED: no Python {lo_major}.{lo_minor} found (pyproject's "
             f"requires-python lower bound). Install it, e.g. with pyenv, or raise the bound.")
        lines.append(f"lowest: Python {lo_major}.{lo_minor} + numpy=={numpy_min}: NOT FOUND")
        ok_all = False
    else:
        ends.append(("lowest", f"{lo_major}.{lo_minor}.{lowest[0]}", lowest[1],
                     f"numpy=={numpy_min}", False))
    newest_key = max(found) if found else None
    if newest_key is None or newest_key < (lo_major, lo_minor):
        loud("NEWEST END NOT TESTED: no Python inside the supported range found")
        lines.append("newest: NOT FOUND")
        ok_all = False
    elif newest_key == (lo_major, lo_minor):
        loud(f"NEWEST END NOT TESTED SEPARATELY: Python {lo_major}.{lo_minor} is the only "
             f"supported Python here")
        lines.append("newest: NOT FOUND (only the lowest Python is installed)")
        ok_all = False
    else:
        micro, exe = found[newest_key]
        ends.append(("newest", f"{newest_key[0]}.{newest_key[1]}.{micro}", exe, "numpy", True))
    if args.find_only:
        for label, version, exe, numpy_spec, _ in ends:
            print(f"ends: would test {label}: Python {version} ({exe}), {numpy_spec}")
        print("\n".join(lines))
        return 0 if ok_all else 1
    for label, version, exe, numpy_spec, _ in ends:
        print(f"ends: testing {label}: Python {version} ({exe}), {numpy_spec}; "
              f"log: {VENVS.relative_to(ROOT)}/{label}-{version}.log", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(test_end, *end, pytest_args) for end in ends]
    for (label, version, *_), future in zip(ends, futures, strict=True):
        ok, pyv, npv, summary, logpath = future.result()
        print(f"\n==== ends: {label}: Python {version} ({logpath.name}) ====", flush=True)
        print(logpath.read_text(encoding="utf-8", errors="replace"), end="", flush=True)
        ok_all &= ok
        lines.append(f"{label}: Python {pyv} + numpy {npv} ({' '.join(pytest_args)}): {summary}"
                     + ("" if ok else "  <-- FAILED"))
        if not ok:
            loud(f"{label.upper()} END FAILED: {summary}")
    print("\n".join(["", "ends:"] + ["  " + x for x in lines]), flush=True)
    if args.results:
        with open(args.results, "a", encoding="utf-8") as f:
            f.write("".join(x + "\n" for x in lines))
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())

"""Process-wide settings and quiet: every TINYGRADX_ variable is checked at import (a wrong value
or an unknown name is one line naming it, exit status 2), and a learner's first snippet (the
README's Ten lines) prints nothing on stderr, as the committed notebooks hold no notice."""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code, **env):
    full = dict(os.environ, **env)        # the run's own settings kept (CI's kernels off)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


@pytest.mark.parametrize("name,value,says", [
    ("TINYGRADX_THREADS", "2.0", "expected a whole number from 1 to 64"),
    ("TINYGRADX_THREADS", "0", "expected a whole number from 1 to 64"),
    ("TINYGRADX_THREADS", "100000", "expected a whole number from 1 to 64"),
    ("TINYGRADX_KERNELS", "maybe", "expected 0 or 1"),
    ("TINYGRADX_POOL", "2", "expected 0 or 1"),
    ("TINYGRADX_KERNEL", "0", "did you mean TINYGRADX_KERNELS?"),
])
def test_a_wrong_setting_is_one_line_naming_it(name, value, says):
    r = _run("import tinygradx", **{name: value})
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and says in lines[0], r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("value,on", [("false", False), ("no", False), ("0", False),
                                      ("true", True), ("1", True)])
def test_a_flag_reads_its_words(value, on):
    r = _run("from tinygradx.fast import kernels, process\n"
             "print(process.env('TINYGRADX_KERNELS', True), kernels.ENABLED)",
             TINYGRADX_KERNELS=value)
    read, enabled = r.stdout.split()
    assert r.returncode == 0 and read == str(on), r
    assert on or enabled == "False", r          # off means off (on also needs numba)


def _ten_lines():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Ten lines", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readmes_ten_lines_print_nothing_on_stderr():
    """A fresh process (kernels built or not, the pool free to start) runs the Ten lines with
    no notice, warning or allocator line on stderr."""
    r = _run(_ten_lines())
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr


@pytest.mark.parametrize("path", ["docs/walkthrough.ipynb", "docs/zh/walkthrough.ipynb"])
def test_no_committed_notebook_holds_a_notice(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        nb = json.load(f)
    stderr = [(i, "".join(o.get("text", ""))) for i, c in enumerate(nb["cells"])
              for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert not stderr, stderr

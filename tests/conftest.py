"""Hypothesis profiles and markers for the tinygradx suite.

"ci" (chosen when the CI environment variable is set): few examples, no deadline, derandomized,
so a CI run is short and repeatable. "dev" (the default elsewhere): more examples. Override with
HYPOTHESIS_PROFILE=ci|dev.
"""
import os
import re

# The suite multiplies tiny matrices, where a second OpenBLAS thread only adds synchronisation
# (and on a shared machine a spinning second thread makes each GEMM several times slower).
# numpy reads this when it is first imported, which is after this file; subprocesses inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", max_examples=8, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "dev", max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI")
                                                               else "dev"))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a test that takes seconds; deselect with "
                                       "-m 'not slow'")
    config.addinivalue_line(
        "markers", "system_programs: a test in a module that may meet an optional system "
                   "program (a Graphviz renderer, a browser, fonts for a picture); CI runs "
                   "these once with the programs installed and once without them (.ci/run)")


# A test module that draws, renders or drives a browser may meet a program that one machine has
# and another lacks (system Graphviz's `dot`, chromium, the fonts matplotlib finds). Such modules
# are found by what their source does, not by a list kept by hand, so a new one cannot be missed:
# CI runs `-m system_programs` a second time with those programs hidden (.ci/without).
_MEETS_SYSTEM_PROGRAMS = re.compile(
    r"\.svg\b|\.png\b|\.pdf\b|\brender\w*\(|viz\.render|page\.write|build_graph_for_cli|"
    r"find_renderer|shutil\.which|chromium|selenium|savefig|matplotlib|"
    r"[\"'](demo|graph|plot|trace)[\"']")


def pytest_collection_modifyitems(config, items):
    import pytest
    seen = {}
    for item in items:
        path = str(item.fspath)
        if path not in seen:
            try:
                with open(path, encoding="utf-8") as f:
                    seen[path] = bool(_MEETS_SYSTEM_PROGRAMS.search(f.read()))
            except OSError:
                seen[path] = False
        if seen[path]:
            item.add_marker(pytest.mark.system_programs)

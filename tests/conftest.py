"""Hypothesis profiles and markers for the tinygradx suite.

"ci" (chosen when the CI environment variable is set): few examples, no deadline, derandomized,
so a CI run is short and repeatable. "dev" (the default elsewhere): more examples. Override with
HYPOTHESIS_PROFILE=ci|dev.
"""
import os

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

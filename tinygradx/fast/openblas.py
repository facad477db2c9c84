"""numpy's OpenBLAS, for the thread pool (pool.py): the library found among those this process
has loaded, and its functions under the names its build gives them. The pool hands pool.c
the GEMMs and the thread-count switches, gives OpenBLAS its threads callback, and calls a
GEMM into a given output (beta = 1) for a linear layer's bias (pool.linear).
"""
from __future__ import annotations

import ctypes
import os


class OpenBLAS:
    """numpy's OpenBLAS, found among the libraries this process has loaded, and the names its
    build gives its functions: numpy's wheels (scipy-openblas) prefix them `scipy_` and, with
    64-bit integers, suffix them `64_`; a distribution's libopenblas has neither."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            try:
                self.sgemm = getattr(self.lib, f"{prefix}cblas_sgemm{suffix}")
                self.dgemm = getattr(self.lib, f"{prefix}cblas_dgemm{suffix}")
                self.get_threads = getattr(self.lib, f"{prefix}openblas_get_num_threads{suffix}")
                self.set_threads = getattr(self.lib, f"{prefix}openblas_set_num_threads{suffix}")
                config = getattr(self.lib, f"{prefix}openblas_get_config{suffix}")
            except AttributeError:
                continue
            self.set_callback = getattr(
                self.lib, f"{prefix}openblas_set_threads_callback_function{suffix}", None)
            config.restype = ctypes.c_char_p
            self.config = config().decode(errors="replace")
            self.ilp64 = "USE64BITINT" in self.config
            self.gemm_into = (self._typed(self.sgemm, ctypes.c_float),
                              self._typed(self.dgemm, ctypes.c_double))
            return
        raise LookupError(f"no cblas_sgemm / openblas_get_num_threads in {path}")

    def _typed(self, fn, real):
        """cblas_?gemm as a ctypes function with its argument types (for pool.linear's calls
        from Python), apart from the untyped pointer pool.c is handed"""
        typed = ctypes.CFUNCTYPE(None, *[ctypes.c_int] * 3, *[self._int] * 3, real,
                                 ctypes.c_void_p, self._int, ctypes.c_void_p, self._int, real,
                                 ctypes.c_void_p, self._int)
        return typed(ctypes.cast(fn, ctypes.c_void_p).value)

    @property
    def _int(self):
        return ctypes.c_int64 if self.ilp64 else ctypes.c_int


def find():
    """The OpenBLAS numpy loaded, from /proc/self/maps; None when there is none. numpy's
    wheels keep theirs in numpy.libs/; other libraries (scipy, torch) may have loaded one of
    their own, whose threads are not numpy's, so that one comes first."""
    try:
        with open("/proc/self/maps") as f:
            paths = {fields[5].strip() for fields in (line.split(None, 5) for line in f)
                     if len(fields) == 6}
    except OSError:
        return None
    found = [p for p in paths if "openblas" in os.path.basename(p).lower()
             and ".so" in os.path.basename(p)]
    numpys = [p for p in found if os.sep + "numpy.libs" + os.sep in p]
    if numpys or len(found) == 1:
        return OpenBLAS((numpys or found)[0])
    return None                       # none, or several and none of them numpy's own

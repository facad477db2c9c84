"""Build tinygradx.fast.kernels' loops ahead of time: `python -m tinygradx.fast.kernels_build DIR
NAME` (or with no arguments: build them for this machine's cache now, and say what was built;
`make`'s setup runs that, so a first training step never waits for the build).

Run by kernels.py in a child process on first use, so that numba and LLVM (~100 MB of resident
memory) never load into the process that trains. Each loop is compiled with the kernels' flags
for float32 and float64 (C-contiguous arrays) into one extension module NAME for this CPU,
written to a temporary directory and moved into DIR in one rename. On Linux the same build
compiles pool.c (the thread pool of pool.py) into NAME_pool.so beside it.
"""
from __future__ import annotations

import os
import sys
import tempfile

from tinygradx.fast import kernels

_TYPES = {"f4": "float32", "f8": "float64"}


def _signature(kinds, t):
    """'a2 a1 s d w1' -> 'void(f4[:, ::1], f4[::1], f4, f8, f8[::1])' for dtype t."""
    parts = []
    for k in kinds.split():
        if k.startswith("a"):
            parts.append(f"{t}[{', '.join([':'] * (int(k[1]) - 1) + ['::1'])}]")
        else:
            parts.append({"s": t, "d": "f8", "w1": "f8[::1]", "m1": "b1[::1]", "i1": "i8[::1]"}[k])
    return f"void({', '.join(parts)})"


def build(directory, name):
    import numba
    from numba.pycc import CC
    from numba.pycc import compiler

    class ReleaseGil(compiler.Flags):
        """The exported wrappers let go of the GIL while a loop runs (numba's nogil=True for
        ahead-of-time code), so parallel.rows can run two row blocks of a kernel at once.
        The loops touch only the arrays they are given, which the caller keeps alive."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = ReleaseGil

    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        cc = CC(name)
        cc.output_dir = tmp
        cc.target_cpu = "host"
        cc.verbose = False
        for helper in kernels.HELPERS:     # the loops' globals then name compiled helpers
            setattr(kernels, helper.__name__, numba.njit(
                fastmath=kernels.FLAGS, error_model="numpy", inline="always")(helper))
        for fn, kinds in kernels.LOOPS.items():
            loop = numba.njit(fastmath=kernels.FLAGS, error_model="numpy")(fn)
            args = ", ".join(f"a{i}" for i in range(len(kinds.split())))
            for t in _TYPES:
                export = f"{fn.__name__[1:]}_{t}"
                scope = {"loop": loop}
                # an exported wrapper that calls the jitted loop, which keeps its flags
                exec(f"def {export}({args}):\n    loop({args})\n", scope)
                cc.export(export, _signature(kinds, t))(scope[export])
        cc.compile()
        if sys.platform.startswith("linux"):
            _build_pool(tmp, name)
            # the pool first: a module found in the cache means both are there
            os.replace(os.path.join(tmp, name + "_pool.so"),
                       os.path.join(directory, name + "_pool.so"))
        built = [f for f in os.listdir(tmp) if f.startswith(name + ".")]
        os.replace(os.path.join(tmp, built[0]), os.path.join(directory, built[0]))


def _build_pool(tmp, name):
    """pool.c into the shared library NAME_pool.so (loaded with ctypes by pool.py), with the
    compiler numba's build uses."""
    from numba.pycc.platform import Toolchain

    toolchain = Toolchain()
    source = os.path.join(os.path.dirname(os.path.abspath(kernels.__file__)), "pool.c")
    # for this CPU (the cache is per CPU, as the loops above): attention's softmax loops
    # vectorise (`#pragma omp simd`) only so, and the Adam loop's sqrtf only without errno
    # (nothing here reads errno); a compiler without these flags builds it plain
    try:
        objects = toolchain.compile_objects([source], tmp, extra_cflags=[
            "-O3", "-march=native", "-fopenmp-simd", "-fno-math-errno", "-pthread"])
    except Exception:                  # distutils' CompileError, from whichever distutils
        objects = toolchain.compile_objects([source], tmp, extra_cflags=["-O2", "-pthread"])
    toolchain.link_shared(os.path.join(tmp, name + "_pool.so"), objects,
                          libraries=["pthread"], extra_ldflags=["-pthread"])


def prebuild():
    """`python -m tinygradx.fast.kernels_build` with no arguments (make's setup runs it): build
    the kernels for this machine now, as their first use would, and say in one line what was
    built or why not. Exits 0 either way: the kernels are optional."""
    if not kernels.ENABLED:
        print("tinygradx: compiled kernels: off (numba is not installed, or TINYGRADX_KERNELS=0);"
              " the numpy code runs")
        return 0
    fresh = kernels.cached() is None
    ok = kernels.ready()                # (a fresh build says what it builds, with what)
    print("tinygradx: compiled kernels: " + (
        ("built" if fresh else "already built") + f" in {kernels.cache_dir()}" if ok
        else f"off ({kernels.BUILD_ERROR}); the numpy code runs, with the same results"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 1:
        sys.exit(prebuild())
    out, mod = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    build(out, mod)

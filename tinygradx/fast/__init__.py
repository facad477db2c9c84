"""tinygradx.fast: the speed layer: compiled kernels (`kernels`, built by `kernels_build`), the
thread pool (`parallel`), the vectorised erf (`_erf`), the process-wide settings (`process`),
`profile()` (`perf`).
"""

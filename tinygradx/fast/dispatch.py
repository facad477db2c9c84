"""The one module that decides which version of a function runs.

The core and ops/ write each function once, as its reference: an array function marked
`@fastpath.dispatched` (softmax's rows, layer_norm's rows, a stack of products, GELU,
attention, the Adam update), or an op's derivative (`Op.backward`, the formula). A faster
version (a compiled loop, the C thread pool, row blocks on both cores, in-place numpy) is
registered beside the code it speeds up with a declaration of what it takes:

    register("softmax_rows", Version("compiled", fn, backend="kernels", dtypes=FLOATS,
                                     outputs=(1,), inplace=(0,), accepts=last_axis, ulp=4))

The rules (docs/design.md, "The dispatcher"):

1. The reference is the definition. A version gives the reference's numbers within `ulp`
   units in the last place (0: bit for bit); tests/fast/test_differential.py holds every
   registered version to that over hostile inputs, with the compiled kernels on and off.
2. A version runs only for a call it declares; anything else runs the reference. The fields
   are checked here, the same way for every version: the numbers of dims (`ndim`), the array
   arguments' dtypes (`dtypes`, all one dtype), C order (`contiguous`), at least one element
   each, sizes (`min_size`), the version's own `accepts(*args)` for what the fields cannot
   say (row widths, a mask layout); a caller's output (`outputs`) must be writable and must
   not overlap the inputs (only the argument positions in `inplace` may be the very same
   array). A version that accepted runs to the end: none of them declines half-way.
3. The choice depends on the call and the settings alone, never on what ran before in the
   process: whether a backend can run (`backend`: the compiled kernels, the C pool, a second
   thread) is settled once per process from the environment and the switches (settings.py),
   the first time a version of that backend is chosen (the kernels are built, the pool is
   started then, whatever op asked first), and a version's `accepts` reads only its arguments.
   So a run resumed from a checkpoint takes the same paths as the run it continues.
4. Versions are tried in the order they were registered (the fastest first; where two
   never take the same call, the one a frequent call takes first, as attention's one_query).

`explain(name, *args)` says which version a call would run and why the others declined.
"""
from __future__ import annotations

import numpy as np

from . import kernels, parallel, pool
from ..core import fastpath

FLOAT32 = (np.dtype(np.float32),)
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


_TOO_HARD = getattr(np, "exceptions", np).TooHardError


def overlap(a, b):
    """Whether arrays a and b share an element: numpy's bounds test first (~0.25 us), and
    where the bounds meet, the exact test, so that views which interleave without sharing
    pass (a packed [Q K V] gradient's dQ, dK and dV, strided views into one buffer, which
    the bounds test alone took for overlapping: the pool's attention backward declined
    them); past a little work the exact test gives up and they count as overlapping."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except _TOO_HARD:
        return True


class Version:
    """A faster version of one kernel and the calls it takes (see the module docstring).

    name       short label ("pool", "compiled", "blocks", "numpy"), unique per kernel
    fn         the function, with the reference's signature and result
    backend    None (numpy only), "kernels" (the compiled loops), "pool" (the C thread
               pool), "threads" (a second thread for row blocks)
    dtypes     the one dtype every checked array must have, among these (None: any)
    arrays     positions of the arguments checked as arrays (None: every ndarray argument)
    contiguous positions that must be C-ordered (None: every checked array)
    outputs    positions of output arrays the caller gives: writable, C-ordered, apart from
               the other checked arrays (an argument a version does not declare, it never
               reads: scratch only the reference uses)
    inplace    positions an output may be the very same array as (an in-place call)
    ndim       {position: (least, most)} numbers of dims of array arguments (most None: no
               bound), checked first: the cheapest test, and the one that sends a generated
               token's one-row products past a version for stacks
    min_size   least number of elements of the first array (below it the reference is faster)
    in_blocks  whether it may run inside a block of parallel.rows (the pool's may not: the
               other block already has the other core)
    accepts    fn(*args) -> bool, for what the fields cannot say
    ulp        the bound tests hold it to against the reference, in units in the last place
               of the result's dtype (0: the same bits)
    """

    __slots__ = ("name", "fn", "backend", "dtypes", "arrays", "contiguous", "outputs",
                 "inplace", "ndim", "min_size", "in_blocks", "accepts", "ulp", "kernel", "off",
                 "takes")

    def __init__(self, name, fn, *, backend=None, dtypes=FLOATS, arrays=None, contiguous=None,
                 outputs=(), inplace=(), ndim=None, min_size=1, in_blocks=True, accepts=None,
                 ulp=0):
        self.name, self.fn, self.backend = name, fn, backend
        self.dtypes = None if dtypes is None else tuple(np.dtype(d) for d in dtypes)
        self.arrays, self.contiguous = arrays, contiguous
        self.outputs, self.inplace = tuple(outputs), tuple(inplace)
        self.ndim = dict(ndim or {})
        self.min_size, self.in_blocks = min_size, in_blocks
        self.accepts, self.ulp = accepts, ulp
        self.kernel, self.off = None, False      # off: switched off (tests, benchmarks)
        self.takes = None        # the declaration compiled to one check (register: _compile)

    def __repr__(self):
        return f"<version {self.kernel}:{self.name}>"


VERSIONS = {}        # kernel name (or op class for a derivative) -> [Version, ...]


def register(kernel, version):
    """Add `version` to the versions of `kernel` (a name of a @dispatched function, or an op
    class: a faster version of its derivative, called as fn(ctx, g)). Returns version.fn."""
    versions = VERSIONS.setdefault(kernel, [])
    if any(v.name == version.name for v in versions):
        raise ValueError(f"{kernel}: a version named {version.name!r} is registered already")
    version.kernel = getattr(kernel, "__name__", kernel)
    if isinstance(kernel, str):
        version.takes = _Takes(version)
    versions.append(version)
    _PLANS.clear()
    return version.fn


class _Takes:
    """A version's declaration compiled to one check per number of arguments (a call may
    leave a reference's trailing defaults out): takes(args) -> bool."""

    __slots__ = ("v", "by_arity")

    def __init__(self, v):
        self.v, self.by_arity = v, {}

    def __call__(self, args):
        check = self.by_arity.get(len(args))
        if check is None:
            check = self.by_arity[len(args)] = _compile([self.v], len(args), "takes")
        return check(args)


def _compile(versions, nargs, form):
    """The declarations of `versions` for calls of nargs arguments written out as one function:
    form "takes" gives takes(args) -> bool for one version, the same answer as
    `why_not(v, args) is None` (tests/fast/test_differential.py checks that on every call it
    draws); form "choose" gives choose(args) -> the fn of the first version that takes args,
    or None, every version's checks inline. The dispatcher asks on every call, and a token of
    generation makes ~45 calls: a generic loop (why_not's, whose reasons are for `explain`),
    or a call per version, would cost more than some of the versions save."""
    lines, scope = [f"def {form}(args):"], dict(ndarray=np.ndarray,
                                                 overlap=overlap,
                                                 in_block=parallel.in_block)
    for n, v in enumerate(versions):
        body = _checks(v, nargs, n, "return False" if form == "takes" else "break")
        ok = f"ready_{n}()" if v.backend is not None else "True"
        if form == "takes":
            lines += ["    " + line for line in body] + [f"    return {ok}"]
        else:                  # a one-pass loop, so that a failed check can `break` to the next
            lines += ["    for _ in once:"] + ["        " + line for line in body]
            lines += [f"        if {ok}: return v_{n}.fn"]
        scope.update({f"v_{n}": v, f"dtypes_{n}": v.dtypes,
                      f"accepts_{n}": v.accepts,
                      f"ready_{n}": _READY.get(v.backend, lambda b=v.backend: backend_ready(b))})
    if form == "choose":
        lines.append("    return None")
        scope["once"] = (None,)
    exec("\n".join(lines), scope)
    return scope[form]


def _checks(v, nargs, n, fail):
    """The lines that check version v (its objects named *_n in the scope), `fail` on a no,
    the cheap checks first: the dims (`ndim`), the array arguments' type, dtype, size and
    order, the sizes, the thread state, accepts(), then the outputs (each overlap test,
    np.may_share_memory, costs ~0.25 us, more than the rest: a call accepts() declines, a
    generated token's, skips them)."""
    lines = [f"if v_{n}.off: {fail}"]
    for i, (least, most) in v.ndim.items():
        lines.append(f"a = args[{i}]")
        test = f"a.ndim < {least}" + ("" if most is None else f" or a.ndim > {most}")
        lines.append(f"if type(a) is not ndarray or {test}: {fail}")
    if v.min_size > 1 and v.arrays:          # the size first too: a small call (a generated
        lines.append(f"a = args[{v.arrays[0]}]")   # token's) leaves after one test
        lines.append(f"if type(a) is ndarray and a.size < {int(v.min_size)}: {fail}")
    lines.append("d = f = None")
    checked = range(nargs) if v.arrays is None else v.arrays
    for i in checked:
        lines.append(f"a = args[{i}]")
        if v.arrays is None:
            lines.append("if type(a) is ndarray:")
        else:
            lines.append("if a is not None:")
            lines.append(f"    if type(a) is not ndarray: {fail}")
        lines.append("    if d is None: d, f = a.dtype, a")
        lines.append(f"    elif a.dtype != d: {fail}")
        lines.append(f"    if a.size == 0: {fail}")
        if v.contiguous is None or i in v.contiguous:
            lines.append(f"    if not a.flags.c_contiguous: {fail}")
    lines.append(f"if d is None: {fail}")
    if v.dtypes is not None:
        lines.append(f"if d not in dtypes_{n}: {fail}")
    if v.min_size > 1:
        lines.append(f"if f.size < {int(v.min_size)}: {fail}")
    if not v.in_blocks:
        lines.append(f"if in_block(): {fail}")
    if v.accepts is not None:
        lines.append(f"if not accepts_{n}(*args): {fail}")
    for i in v.outputs:
        lines.append(f"o = args[{i}]")
        lines.append("if o is not None:")
        lines.append(f"    if not o.flags.writeable: {fail}")
        if v.contiguous is None or i in v.contiguous:
            lines.append(f"    if not o.flags.c_contiguous: {fail}")
        # two arrays that own their memory (no base) and are not the same array cannot
        # overlap: the test every parameter, gradient and state array of an optimizer step
        # passes in ~0.05 us; views go to overlap()
        for j in checked:
            if j == i:
                continue
            same = "a is o" if j in v.inplace else "False"
            lines.append(f"    a = args[{j}]")
            lines.append(f"    if type(a) is ndarray and not ({same}) and (a is o or a.base is not "
                         f"None or o.base is not None) and overlap(a, o): {fail}")
    return lines


# ------------------------------------------------------------------------------------------
# the backends: available or not, settled once per process from the settings
# ------------------------------------------------------------------------------------------

def _pool_ready():
    return kernels.ENABLED and pool.start()


def _threads_ready():
    return parallel.THREADS > 1


_READY = {"kernels": kernels.ready, "pool": _pool_ready, "threads": _threads_ready}


def settings():
    """The settings a result's last bits may depend on (rule 3 in docs/design.md): whether the
    compiled kernels and the pool are allowed (numba installed, TINYGRADX_KERNELS,
    TINYGRADX_POOL) and the thread count. Two processes with equal settings take the same
    version for the same call; with different settings the versions agree within their ulp
    bounds, which a long training run can carry into its last printed digits."""
    return {"kernels": bool(kernels.ENABLED), "pool": bool(kernels.ENABLED and pool.ENABLED),
            "threads": parallel.THREADS}


def backend_ready(backend):
    """Whether a backend can run now: decided from the settings (and, the first time, by
    building the kernels or starting the pool), never by which op asked first."""
    if backend is None:
        return True
    if backend not in _READY:
        raise ValueError(f"unknown backend {backend!r}")
    return _READY[backend]()


# ------------------------------------------------------------------------------------------
# the decision
# ------------------------------------------------------------------------------------------

def why_not(v, args):
    """None when version v takes this call, else the reason it does not (a short phrase)."""
    if v.off:
        return "switched off"
    for i, (least, most) in v.ndim.items():
        a = args[i]
        if type(a) is not np.ndarray:
            return f"argument {i} is a {type(a).__name__}, not an array"
        if a.ndim < least or (most is not None and a.ndim > most):
            return f"argument {i} has {a.ndim} dims (takes {least} to {most or 'any'})"
    checked = (range(len(args)) if v.arrays is None else v.arrays)
    first = None
    dtype = None
    for i in checked:
        a = args[i]
        if type(a) is not np.ndarray:
            if v.arrays is None:
                continue
            if a is None:
                continue
            return f"argument {i} is a {type(a).__name__}, not an array"
        if first is None:
            first, dtype = a, a.dtype
        elif a.dtype != dtype:
            return f"argument {i} is {a.dtype}, argument 0 {dtype}"
        if a.size == 0:
            return f"argument {i} is empty"
        if (v.contiguous is None or i in v.contiguous) and not a.flags.c_contiguous:
            return f"argument {i} is not C-ordered"
    if first is None:
        return "no array argument"
    if v.dtypes is not None and dtype not in v.dtypes:
        return f"dtype {dtype} (takes {', '.join(map(str, v.dtypes))})"
    if first.size < v.min_size:
        return f"{first.size} elements (from {v.min_size})"
    if not v.in_blocks and parallel.in_block():
        return "inside a block of parallel.rows"
    if v.accepts is not None and not v.accepts(*args):
        return "its accepts() declines these arguments"
    for i in v.outputs:
        out = args[i]
        if out is None:
            continue
        if not out.flags.writeable:
            return f"output {i} is read-only"
        if (v.contiguous is None or i in v.contiguous) and not out.flags.c_contiguous:
            return f"output {i} is not C-ordered"
        for j in checked:
            a = args[j]
            if j == i or type(a) is not np.ndarray:
                continue
            if a is out and j in v.inplace:
                continue
            if overlap(a, out):
                return f"output {i} overlaps argument {j}"
    if not backend_ready(v.backend):
        return f"the {v.backend} backend is off ({_backend_status(v.backend)})"
    return None


def choose(kernel, args):
    """The version of `kernel` that runs for args, or None (the reference)."""
    for v in VERSIONS.get(kernel, ()):
        if v.takes(args):
            return v
    return None


# (kernel name, number of arguments) -> the plan a call of that shape follows, made on its
# first call: choose(args) -> the fn of the version that runs, or None (every version's
# declaration checked inline, in registration order), or _SHORT for a call that leaves a
# trailing default out
_PLANS = {}
_SHORT = ("short",)


def _none(args):
    return None


def _plan(name, reference, nargs):
    versions = VERSIONS.get(name)
    if not versions:
        plan = _none
    elif nargs < reference.__code__.co_argcount:
        plan = _SHORT
    else:
        plan = _compile(versions, nargs, "choose")
    _PLANS[name, nargs] = plan
    return plan


def run(name, reference, args):
    """Run `name` on args: the first registered version that takes them, else the reference.
    (Installed as the core's dispatcher: fastpath.dispatched functions call it.)"""
    plan = _PLANS.get((name, len(args)))
    if plan is None:
        plan = _plan(name, reference, len(args))
    if plan is _SHORT:
        args = full_args(reference, args)        # versions are declared on every argument
        if len(args) < reference.__code__.co_argcount:
            return reference(*args)              # its own TypeError
        plan = _PLANS.get((name, len(args))) or _plan(name, reference, len(args))
    fn = plan(args)
    return reference(*args) if fn is None else fn(*args)


def picked(name, args):
    """The version run() takes for a call of `name` with args, or None for the reference,
    found by run()'s own compiled plan (tests hold it equal to `choose`, which asks each
    version's `takes`)."""
    reference = fastpath.REFERENCES[name]
    args = full_args(reference, args)
    plan = _PLANS.get((name, len(args))) or _plan(name, reference, len(args))
    if plan is _SHORT:
        return None
    fn = plan(args)
    return None if fn is None else next(v for v in VERSIONS[name] if v.fn is fn)


def full_args(reference, args):
    """args with the reference's trailing defaults filled in."""
    n, defaults = reference.__code__.co_argcount, reference.__defaults__ or ()
    missing = n - len(args)
    if missing <= 0 or missing > len(defaults):
        return args
    return args + defaults[len(defaults) - missing:]


def backward(ctx, g):
    """A node's derivative on arrays: a registered faster version that takes (ctx, g), else
    the formula `ctx.backward(g)`. The fast walk (walk.py) calls it for every node. (A user's
    version, `fast_backward`, may still return None for "not these": the next one, or the
    formula, runs; the library's own never do.)"""
    versions = VERSIONS.get(type(ctx))
    if versions:
        for v in versions:
            if _backward_ok(v, ctx, g):
                out = v.fn(ctx, g)
                if out is not None:
                    return out
    return ctx.backward(g)


def fast_backward(cls, name="fast", **declaration):
    """Decorator (tgx.autograd.fast_backward): register fn(ctx, g) as a faster array version
    of op `cls`'s derivative, beside the op, with what it takes (`dtypes`, `accepts(ctx, g)`,
    `backend`: Version's fields; by default any g). `cls.backward` stays the derivative
    (create_graph and gradgradcheck use it, and gradgradcheck fails when the two disagree);
    the walk of training runs fn instead. fn may return None for "not these arguments"."""
    declaration.setdefault("dtypes", None)

    def add(fn):
        register(cls, Version(name, fn, **declaration))
        return fn
    return add


def _backward_ok(v, ctx, g):
    """A derivative's version takes (ctx, g) when g has one of its dtypes, g and every input
    have at least one element, its accepts(ctx, g) holds and its backend runs."""
    if v.off:
        return False
    if v.dtypes is not None and (type(g) is not np.ndarray or g.dtype not in v.dtypes
                                 or g.size == 0):
        return False
    if not v.in_blocks and parallel.in_block():
        return False
    for p in ctx.parents:                 # an empty input: its gradient is the formula's
        if p._data.size == 0:
            return False
    if v.accepts is not None and not v.accepts(ctx, g):
        return False
    return backend_ready(v.backend)


def explain(name, *args):
    """[(version name, None or why it declined), ...] for a call of kernel `name`: which
    version would run (the first with None) and why the others do not."""
    reference = fastpath.REFERENCES.get(name)
    if reference is not None:
        args = full_args(reference, args)
        n = reference.__code__.co_argcount
        if len(args) < n:
            raise TypeError(f"explain: {name} takes {n} arguments, got {len(args)}")
    return [(v.name, why_not(v, args)) for v in VERSIONS.get(name, ())]


def _backend_status(backend):
    if backend == "kernels":
        return kernels.BUILD_ERROR or "numba is not installed or the kernels are switched off"
    if backend == "pool":
        return pool.status()
    return "one thread (TINYGRADX_THREADS=1 or one usable core)"


class switched_off:
    """Context manager for tests and benchmarks: the versions given (Version objects, or
    (kernel, name) pairs) do not run inside; `every=True` switches every version off, so the
    reference alone runs. Not for concurrent use from several threads."""

    def __init__(self, *versions, every=False):
        named = {(getattr(k, "__name__", k), n) for k, n in
                 (v for v in versions if not isinstance(v, Version))}
        self.versions = [v for vs in VERSIONS.values() for v in vs
                         if every or v in versions or (v.kernel, v.name) in named]

    def __enter__(self):
        self.was = [v.off for v in self.versions]
        for v in self.versions:
            v.off = True
        return self

    def __exit__(self, *exc):
        for v, was in zip(self.versions, self.was, strict=True):
            v.off = was
        return False

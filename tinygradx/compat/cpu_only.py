"""What a script written for a GPU or a cluster touches on its way, as PyTorch behaves on a
machine with one CPU and no GPU: imported and set freely, refused by name only where something
would have to run that cannot run here.

    torch.distributed     is_available(), is_initialized() and the backend checks are False;
                          every other function is refused when called (NotImplementedError
                          naming it), never when imported: `from torch.distributed import
                          init_process_group` works, calling it does not
    torch.nn.parallel     DataParallel: without a GPU PyTorch's wrapper calls the module itself,
                          and so does this one (its state dict keys start with "module.");
                          DistributedDataParallel is refused when constructed
    torch.backends        the flags (cuda.matmul.allow_tf32, cudnn.benchmark, ...): kept, read
                          back with PyTorch's defaults, and without effect (every product here
                          is computed in the tensors' own precision); is_available() False
    torch.compile         the model (or function) itself: compiling changes only speed, and
                          tinygradx runs every op eagerly
    torch.cuda            beyond is_available(): what PyTorch answers without a GPU
                          (empty_cache() does nothing, memory_allocated() is 0); a call that
                          needs a GPU (synchronize, set_device, ...) is refused by name
    torch.set_float32_matmul_precision   kept and read back; products stay float32 here
    torch.multiprocessing  Python's multiprocessing under torch's names (Process, Queue, Pool,
                          ...); spawn and start_processes, the launchers of distributed
                          training, refused when called; the sharing strategy kept and read back
                          (tensors are never shared between processes here)
    torch.autograd.Variable   the legacy wrapper: Variable(t) is a tensor sharing t's data
                          (requires_grad=True makes it a leaf that requires grad), as PyTorch

torch.amp and torch.cuda.amp are in amp.py.
"""
from __future__ import annotations

import functools
import multiprocessing
import warnings

import tinygradx
from tinygradx import nn

from .facade import not_available


def refused_call(name):
    """A function that can be imported under `name` and refuses by name when called (the
    reason is scope.py's)."""
    def call(*args, **kwargs):
        raise NotImplementedError(not_available(name))
    leaf = name.rpartition(".")[2]
    call.__name__ = call.__qualname__ = leaf
    call.__doc__ = f"{name}: importable, refused when called (tinygradx.compat)."
    return call


def answer(value, name):
    """A function under `name` that returns `value` (what PyTorch answers without a GPU)."""
    def call(*args, **kwargs):
        return value
    call.__name__ = call.__qualname__ = name.rpartition(".")[2]
    call.__doc__ = f"{name}: {value!r} (tinygradx.compat: one CPU, no GPU, one process)."
    return call


# -- torch.distributed ---------------------------------------------------------------------------

# torch.distributed's functions that scripts import, each refused when called (the names are
# PyTorch's: tests/compat/test_cpu_only.py checks them against torch when it is installed)
DISTRIBUTED_CALLS = (
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank",
    "get_group_rank", "get_node_local_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "init_device_mesh", "init_process_group", "irecv", "isend",
    "monitored_barrier", "new_group", "new_subgroups", "recv", "recv_object_list", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
    "send_object_list")
# and those that answer: there is no process group and no backend here
DISTRIBUTED_ANSWERS = {
    "is_available": False, "is_initialized": False, "is_nccl_available": False,
    "is_gloo_available": False, "is_mpi_available": False, "is_ucc_available": False,
    "is_xccl_available": False, "is_torchelastic_launched": False,
}


class ReduceOp:
    """torch.distributed.ReduceOp's names, so `op=dist.ReduceOp.SUM` evaluates (the call that
    takes it is refused)."""
    SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM = (
        "sum", "avg", "product", "min", "max", "band", "bor", "bxor", "premul_sum")


class Backend(str):
    """torch.distributed.Backend's names ("gloo", "nccl", ...)."""
    UNDEFINED, GLOO, NCCL, UCC, MPI = "undefined", "gloo", "nccl", "ucc", "mpi"


def distributed_names():
    """{name: object} of the torch.distributed stand-in."""
    names = {n: refused_call(f"torch.distributed.{n}") for n in DISTRIBUTED_CALLS}
    names.update({n: answer(v, f"torch.distributed.{n}") for n, v in DISTRIBUTED_ANSWERS.items()})
    names.update(ReduceOp=ReduceOp, Backend=Backend)
    return names


# -- torch.nn.parallel ---------------------------------------------------------------------------

class DataParallel(nn.Module):
    """torch.nn.DataParallel(module, device_ids=None, output_device=None, dim=0) on a machine
    without a GPU: PyTorch keeps the module and calls it, and so does this wrapper (its
    parameters are the module's, under "module.")."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"torch.nn.DataParallel: module must be an nn.Module, got "
                            f"{type(module).__name__}")
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(nn.Module):
    """torch.nn.parallel.DistributedDataParallel: importable (and usable in isinstance
    checks); constructing one is refused, as there is no process group here."""

    def __init__(self, module=None, *args, **kwargs):
        raise NotImplementedError(not_available("torch.nn.parallel.DistributedDataParallel")
                                  + "; call the module itself")


class DistributedSampler:
    """torch.utils.data.distributed.DistributedSampler: importable; constructing one is
    refused, as there is no process group here (PyTorch refuses too without one)."""

    def __init__(self, dataset=None, *args, **kwargs):
        raise NotImplementedError(not_available("torch.utils.data.distributed."
                                                "DistributedSampler") +
                                  "; a plain sampler (or shuffle=True) does it in one process")


# -- torch.backends ------------------------------------------------------------------------------

class Settings:
    """A fixed set of settings (torch.backends.cuda.matmul): each one set and read back as in
    PyTorch, none of them changing a computation here; an unknown name is refused by name, as
    PyTorch refuses it."""

    def __init__(self, name, **defaults):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", dict(defaults))

    def __getattr__(self, key):
        values = object.__getattribute__(self, "_values")
        if key in values:
            return values[key]
        raise AttributeError(not_available(f"{object.__getattribute__(self, '_name')}.{key}"))

    def __setattr__(self, key, value):
        if key not in self._values:
            raise AttributeError(not_available(f"{self._name}.{key}") +
                                 f": the settings are {', '.join(sorted(self._values))}")
        self._values[key] = value

    def __repr__(self):
        return f"<{self._name} (tinygradx.compat: settings without effect on the CPU)>"


# PyTorch's defaults (torch 2.x on a machine without a GPU)
CUDA_MATMUL = dict(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                   allow_bf16_reduced_precision_reduction=True, fp32_precision="ieee")
CUDNN_FLAGS = dict(enabled=True, benchmark=False, benchmark_limit=10, deterministic=False,
                   allow_tf32=True)


class _SdpKernel:
    """torch.backends.cuda.sdp_kernel(...) as a context manager that changes nothing here."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _sdp_switch(name):
    def switch(enabled):
        """Accepted and without effect: attention here is one code path on the CPU."""
    switch.__name__ = switch.__qualname__ = name
    return switch


def cuda_backend_names():
    names = {"matmul": Settings("torch.backends.cuda.matmul", **CUDA_MATMUL),
             "is_built": answer(False, "torch.backends.cuda.is_built"),
             "sdp_kernel": _SdpKernel}
    for kind in ("flash", "mem_efficient", "math", "cudnn"):
        names[f"enable_{kind}_sdp"] = _sdp_switch(f"enable_{kind}_sdp")
        names[f"{kind}_sdp_enabled"] = answer(True, f"torch.backends.cuda.{kind}_sdp_enabled")
    return names


def cudnn_backend_names():
    names = dict(CUDNN_FLAGS)
    names.update(is_available=answer(False, "torch.backends.cudnn.is_available"),
                 version=answer(None, "torch.backends.cudnn.version"))
    return names


# -- torch.compile -------------------------------------------------------------------------------

def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor",  # noqa: A001
            mode=None, options=None, disable=False):
    """torch.compile: the model (or function) itself. Compiling changes how fast a model runs,
    not what it computes, and tinygradx runs every op eagerly, so the eager model is what a
    compiled one would compute. Used as `@torch.compile(...)`, a decorator that returns the
    function."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                 backend=backend, mode=mode, options=options, disable=disable)
    if not callable(model):
        raise RuntimeError(f"torch.compile: the model must be a callable (an nn.Module or a "
                           f"function), got {type(model).__name__}")
    return model


# -- torch.cuda ----------------------------------------------------------------------------------

CUDA_ANSWERS = {"is_available": False, "device_count": 0, "is_initialized": False,
                "is_bf16_supported": False, "empty_cache": None, "memory_allocated": 0,
                "max_memory_allocated": 0, "memory_reserved": 0, "max_memory_reserved": 0,
                "manual_seed": None, "manual_seed_all": None, "seed": None, "seed_all": None,
                "ipc_collect": None}
CUDA_CALLS = ("synchronize", "set_device", "current_device", "get_device_name",
              "get_device_properties", "get_device_capability", "current_stream", "Stream",
              "Event", "device", "reset_peak_memory_stats", "mem_get_info", "memory_summary",
              "get_rng_state", "set_rng_state", "init")


def cuda_names():
    names = {n: answer(v, f"torch.cuda.{n}") for n, v in CUDA_ANSWERS.items()}
    names.update({n: refused_call(f"torch.cuda.{n}") for n in CUDA_CALLS})
    return names


# -- precision settings --------------------------------------------------------------------------

_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: 'highest', 'high' or 'medium', kept and read back.
    PyTorch may then compute float32 products with TF32 or bfloat16 on some hardware; here they
    stay float32 whatever the setting. Another value is ignored with PyTorch's warning."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision():
    """torch.get_float32_matmul_precision: what was set ('highest' at first)."""
    return _MATMUL_PRECISION[0]


# -- torch.multiprocessing -----------------------------------------------------------------------

MULTIPROCESSING = ("Array", "Barrier", "BoundedSemaphore", "Condition", "Event", "JoinableQueue",
                   "Lock", "Manager", "Pipe", "Pool", "Process", "Queue", "RLock", "Semaphore",
                   "SimpleQueue", "Value", "active_children", "cpu_count", "current_process",
                   "freeze_support", "get_all_start_methods", "get_context", "get_start_method",
                   "parent_process", "set_start_method")
_SHARING = ["file_descriptor"]


def set_sharing_strategy(new_strategy):
    """torch.multiprocessing.set_sharing_strategy: kept and read back (nothing is shared)."""
    if new_strategy not in ("file_descriptor", "file_system"):
        raise ValueError(f"torch.multiprocessing.set_sharing_strategy: unknown strategy "
                         f"{new_strategy!r} (file_descriptor or file_system)")
    _SHARING[0] = new_strategy


def multiprocessing_names():
    names = {n: getattr(multiprocessing, n) for n in MULTIPROCESSING}
    names.update({n: refused_call(f"torch.multiprocessing.{n}")
                  for n in ("spawn", "start_processes")})
    names.update(set_sharing_strategy=set_sharing_strategy,
                 get_sharing_strategy=lambda: _SHARING[0],
                 get_all_sharing_strategies=lambda: {"file_descriptor", "file_system"})
    return names


# -- torch.autograd.Variable ---------------------------------------------------------------------

class _VariableType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, tinygradx.Tensor)


class Variable(metaclass=_VariableType):
    """torch.autograd.Variable(data, requires_grad=False): since PyTorch 0.4 a Variable is a
    tensor; the call gives a tensor sharing `data`'s values, outside its graph (a leaf), that
    requires grad when asked. isinstance(t, Variable) holds for every tensor, as in PyTorch."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, tinygradx.Tensor):
            raise TypeError(f"torch.autograd.Variable: data has to be a tensor, but got "
                            f"{type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out

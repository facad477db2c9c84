"""The look-alike `torch` itself: which PyTorch module name shows which tinygradx module.

    torch                      tinygradx (its public names) + the dtype names below
    torch.nn                   tinygradx.nn
    torch.nn.functional        tinygradx.functional
    torch.nn.init              tinygradx.nn.init (tinygradx/nn/init.py)
    torch.nn.utils             tinygradx.optim.clip_grad: clip_grad_norm_, clip_grad_value_
    torch.nn.utils.rnn         tinygradx.nn.utils.rnn: pad_sequence, PackedSequence, ...
    torch.optim                tinygradx.optim
    torch.optim.lr_scheduler   tinygradx.optim.lr_scheduler (tinygradx/optim/lr_scheduler.py)
    torch.autograd             Function (tinygradx.Function: PyTorch's static style works),
                               grad, gradcheck, gradgradcheck, no_grad, enable_grad,
                               set_grad_enabled, inference_mode, detect_anomaly,
                               set_detect_anomaly, backward (autograd/backprop.py)
    torch.autograd.function    Function, FunctionCtx, once_differentiable (custom_function.py)
    torch.autograd.functional  tinygradx.func's jacobian, hessian, hvp, vhp
    torch.autograd.graph       saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks
                               (tinygradx/autograd/saved_hooks.py)
    torch.func                 tinygradx.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
                               hessian, functional_call
    torch.cuda                 is_available() is False, device_count() is 0, manual_seed is a
                               no-op (what PyTorch answers on a machine without a GPU; the
                               rest in cpu_only.py)
    torch.distributed,         what PyTorch does in one process without a GPU (cpu_only.py):
    torch.nn.parallel,         imported and set freely, refused by name where something would
    torch.backends, compile    have to run that cannot run here
    torch.amp, torch.cuda.amp  GradScaler and autocast (amp.py)
    torch.utils.data           tinygradx.data (Dataset, DataLoader, random_split, ...), with
                               its submodules .dataset, .sampler, .dataloader, .distributed
                               and ._utils.collate
    torch.Tensor               tinygradx.Tensor for isinstance and subclassing checks; called,
                               torch's legacy constructor (FloatTensor: sizes or data)

Every other name is refused with an error naming it (facade.py). `MODULES` maps each PyTorch
module name to its facade: what `installed()` puts into sys.modules.
"""
from __future__ import annotations

import tinygradx
from tinygradx.optim import clip_grad, lr_scheduler
from tinygradx.autograd import custom_function, saved_hooks
from tinygradx import data, functional, nn, optim
from tinygradx.data import collate
from tinygradx.ops import dtypes
from tinygradx.gradcheck import func
from tinygradx.nn import init
from tinygradx.nn import utils as nn_utils

from . import amp as amp_, cpu_only
from .facade import Facade

# torch's dtype names: the numpy scalar types tinygradx's dtype arguments take
DTYPES = {
    "float32": dtypes.float32, "float": dtypes.float32, "float64": dtypes.float64,
    "double": dtypes.float64, "float16": dtypes.float16, "half": dtypes.float16,
    "int64": dtypes.int64, "long": dtypes.int64, "int32": dtypes.int32, "int": dtypes.int32,
    "int16": dtypes.int16, "short": dtypes.int16, "int8": dtypes.int8, "uint8": dtypes.uint8,
    "bool": dtypes.bool_,
}


class AbsentDtype:
    """A torch dtype tinygradx does not have (torch.bfloat16, the complex dtypes): the name
    exists, so a script may mention it (nanoGPT's `{'bfloat16': torch.bfloat16, ...}[dtype]`),
    and any use of it as a dtype is refused by the dtype boundary with this name
    (`unknown dtype torch.bfloat16; use one of ...`)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__


ABSENT_DTYPES = {n: AbsentDtype(n) for n in ("bfloat16", "complex64", "complex128", "cfloat",
                                            "cdouble", "complex32", "chalf")}


class _LegacyTensor:
    """torch.Tensor as the look-alike shows it: isinstance and issubclass answer for
    tinygradx's Tensor, `class T(torch.Tensor)` subclasses it, attributes are the Tensor
    class's (torch.Tensor.add); a call is torch's legacy constructor: torch.Tensor(3, 4) is
    float32 of that size, torch.Tensor([1, 2]) float32 data (tinygradx's own Tensor(data)
    keeps the data's dtype and memory)."""

    def __init__(self):
        self.__name__ = self.__qualname__ = "Tensor"

    def __instancecheck__(self, obj):
        return isinstance(obj, tinygradx.Tensor)

    def __subclasscheck__(self, sub):
        return issubclass(sub, tinygradx.Tensor)

    def __mro_entries__(self, bases):
        return (tinygradx.Tensor,)

    def __call__(self, *args, **kwargs):
        return tinygradx.FloatTensor(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(tinygradx.Tensor, name)

    def __repr__(self):
        return "<class 'torch.Tensor' (tinygradx.Tensor, tinygradx.compat)>"


Tensor = _LegacyTensor()


functional_ = Facade("torch.nn.functional", functional)
init_ = Facade("torch.nn.init", init)
rnn_utils = Facade("torch.nn.utils.rnn", nn_utils.rnn)
utils_nn = Facade("torch.nn.utils", clip_grad, {"rnn": rnn_utils})
parallel = Facade("torch.nn.parallel", None, {
    "DataParallel": cpu_only.DataParallel,
    "DistributedDataParallel": cpu_only.DistributedDataParallel})
nn_ = Facade("torch.nn", nn, {"functional": functional_, "init": init_, "utils": utils_nn,
                              "parallel": parallel, "DataParallel": cpu_only.DataParallel})
lr_scheduler_ = Facade("torch.optim.lr_scheduler", lr_scheduler)
optim_ = Facade("torch.optim", optim, {"lr_scheduler": lr_scheduler_})
# torch.autograd.functional's vjp and jvp take (func, inputs, v), not torch.func's arguments:
# only the four whose signatures agree are mapped
autograd_functional = Facade("torch.autograd.functional", None, {
    n: getattr(func, n) for n in ("jacobian", "hessian", "hvp", "vhp")})
autograd_function = Facade("torch.autograd.function", None, {
    "Function": tinygradx.Function, "FunctionCtx": custom_function.FunctionCtx,
    "once_differentiable": custom_function.once_differentiable})
autograd_graph = Facade("torch.autograd.graph", None, {
    n: getattr(saved_hooks, n) for n in ("saved_tensors_hooks", "save_on_cpu",
                                         "disable_saved_tensors_hooks")})
autograd = Facade("torch.autograd", None, {
    "function": autograd_function, "graph": autograd_graph,
    "Function": tinygradx.Function, "gradcheck": tinygradx.gradcheck,
    "gradgradcheck": tinygradx.gradgradcheck, "functional": autograd_functional,
    "grad": tinygradx.grad, "no_grad": tinygradx.no_grad, "enable_grad": tinygradx.enable_grad,
    "set_grad_enabled": tinygradx.set_grad_enabled, "inference_mode": tinygradx.inference_mode,
    "detect_anomaly": tinygradx.detect_anomaly, "Variable": cpu_only.Variable,
    "backward": tinygradx.autograd.backward,
    "set_detect_anomaly": tinygradx.autograd.set_detect_anomaly})
func_ = Facade("torch.func", None, {
    n: getattr(func, n) for n in ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd",
                                  "hessian", "functional_call")})
_AMP = {"custom_fwd": amp_.custom_fwd, "custom_bwd": amp_.custom_bwd}
amp = Facade("torch.amp", None, dict(_AMP, GradScaler=amp_.GradScaler, autocast=amp_.autocast,
                                     is_autocast_available=amp_.is_autocast_available))
cuda_amp = Facade("torch.cuda.amp", None, dict(_AMP, GradScaler=amp_.CudaGradScaler,
                                               autocast=amp_.cuda_autocast))
cpu_amp = Facade("torch.cpu.amp", None, {"autocast": amp_.cpu_autocast})
cpu = Facade("torch.cpu", None, {"amp": cpu_amp,
                                 "is_available": cpu_only.answer(True, "torch.cpu.is_available")})
cuda = Facade("torch.cuda", None, dict(cpu_only.cuda_names(), amp=cuda_amp))
distributed = Facade("torch.distributed", None, cpu_only.distributed_names())
multiprocessing_ = Facade("torch.multiprocessing", None, cpu_only.multiprocessing_names())
backends_cuda = Facade("torch.backends.cuda", None, cpu_only.cuda_backend_names())
backends_cudnn = Facade("torch.backends.cudnn", None, cpu_only.cudnn_backend_names())
backends_mps = Facade("torch.backends.mps", None, {
    "is_available": cpu_only.answer(False, "torch.backends.mps.is_available"),
    "is_built": cpu_only.answer(False, "torch.backends.mps.is_built")})
backends = Facade("torch.backends", None, {"cuda": backends_cuda, "cudnn": backends_cudnn,
                                           "mps": backends_mps})
# torch.utils.data's submodules, each with its part of the package's names (scripts import
# `from torch.utils.data.dataloader import DataLoader`)
DATA_PARTS = {
    "dataloader": ("DataLoader", "get_worker_info", "default_collate", "default_convert"),
    "dataset": ("Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
                "ChainDataset", "Subset", "random_split"),
    "sampler": ("BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
                "SubsetRandomSampler", "WeightedRandomSampler"),
}
data_parts = {part: Facade(f"torch.utils.data.{part}", data, only=names)
              for part, names in DATA_PARTS.items()}
data_parts["distributed"] = Facade("torch.utils.data.distributed", None, {
    "DistributedSampler": cpu_only.DistributedSampler})
# `from torch.utils.data._utils.collate import default_collate` (older scripts, and collate
# functions that extend torch's): tinygradx/data/collate.py
data_parts["_utils"] = Facade("torch.utils.data._utils", None, {
    "collate": Facade("torch.utils.data._utils.collate", collate)})
data_ = Facade("torch.utils.data", data, dict(data_parts,
                                              DistributedSampler=cpu_only.DistributedSampler))
utils = Facade("torch.utils", None, {"data": data_})

torch = Facade("torch", tinygradx, dict(
    DTYPES, **ABSENT_DTYPES, nn=nn_, optim=optim_, autograd=autograd, func=func_, cuda=cuda,
    utils=utils, Tensor=Tensor, amp=amp, cpu=cpu, distributed=distributed, backends=backends,
    multiprocessing=multiprocessing_, autocast=amp_.autocast, GradScaler=amp_.GradScaler,
    compile=cpu_only.compile,
    set_float32_matmul_precision=cpu_only.set_float32_matmul_precision,
    get_float32_matmul_precision=cpu_only.get_float32_matmul_precision),
    doc="tinygradx under PyTorch's names (tinygradx.compat); not PyTorch.")

MODULES = {m.__name__: m for m in (torch, nn_, functional_, init_, utils_nn, rnn_utils,
                                   parallel, optim_,
                                   lr_scheduler_, autograd, autograd_function,
                                   autograd_functional, autograd_graph, func_, cuda, cuda_amp,
                                   amp, cpu, cpu_amp, distributed, backends, backends_cuda,
                                   backends_cudnn, backends_mps, multiprocessing_, utils, data_,
                                   *data_parts.values(), data_parts["_utils"].collate)}

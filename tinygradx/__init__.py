"""tinygradx: a readable tensor + reverse-mode autograd engine on numpy.

    import tinygradx as tgx
    import tinygradx.functional as F
    x = tgx.randn(2, 3, requires_grad=True)
    F.softmax(x, dim=-1).sum().backward()
"""
import sys as _sys

from . import process  # first: a setting that OpenBLAS reads when numpy loads

try:
    process.check_environment()           # every TINYGRADX_ variable, before anything reads one
except process.SettingError as _err:      # one line, not a traceback: the program cannot start
    _sys.stderr.write(f"tinygradx: error: {_err}\n")
    raise SystemExit(2) from None
process.blas_thread_timeout()

# every import below loads numpy, so each must follow the BLAS setting above (hence E402)
from . import autograd, ops  # noqa: E402  (after the BLAS setting)
from .ops import attention, fused, versions  # noqa: E402,F401  (the speed layer, installed)
from .autograd import (Function, OpError, detect_anomaly, enable_grad,  # noqa: E402
                       is_grad_enabled, no_grad, unbroadcast)
from .autograd.rng import default_rng, get_rng_state, manual_seed, set_rng_state  # noqa: E402
from .autograd.backprop import grad  # noqa: E402
from .ops.dtypes import (bool_, float16, float32, float64, int8, int16, int32,  # noqa: E402
                         int64, uint8, uint16, uint32, uint64)
from .tensor.devices import device  # noqa: E402
from .tensor import Tensor  # noqa: E402
from .autograd import custom_function  # noqa: E402,F401  (Function.apply of PyTorch's style)
from .tensor.creation import (arange, as_tensor, cat, concatenate, einsum,  # noqa: E402
                              empty, empty_like, eye, from_numpy, full,
                              full_like, matmul, maximum, minimum, ones,
                              ones_like, rand, rand_like, randint, randn,
                              randn_like, stack, tensor, where, zeros,
                              zeros_like)
from .tensor.index_methods import (argsort, cumprod, cumsum, diagonal, flip,  # noqa: E402
                                   gather, masked_select, repeat_interleave,
                                   roll, scatter, scatter_add, sort, topk,
                                   unflatten)
from .tensor.functions import (BoolTensor, ByteTensor, DoubleTensor,  # noqa: E402
                               FloatTensor, IntTensor, LongTensor, abs, argmax, argmin, bmm,
                               clamp, clip, eq, exp, is_tensor, log, log_softmax, max, mean,
                               min, multinomial, nonzero, numel, pow, sigmoid, softmax, sqrt,
                               sum, tanh, tril, triu)
from .tensor.math_methods import (ceil, cos, exp2, floor, isclose, isfinite, isinf,  # noqa: E402
                                  isnan, lerp, log2, log10, logaddexp, round, sign, sin, trunc)
from .tensor.functions import (addmm, all, allclose, any, chunk, equal,  # noqa: E402
                               flatten, moveaxis, movedim, narrow, norm, outer, permute, prod,
                               reshape, select, split, squeeze, std, swapaxes, swapdims, t,
                               transpose, unbind, unsqueeze, var)
from .tensor.index_methods import index_select  # noqa: E402
from .tensor.math_methods import (expm1, log1p, neg, negative, reciprocal, rsqrt,  # noqa: E402
                                  square)
from .tensor.creation import linspace, logspace  # noqa: E402
from .autograd.grad_mode import inference_mode, set_grad_enabled  # noqa: E402
from .ops.dtypes import finfo, get_default_dtype, iinfo, set_default_dtype  # noqa: E402
from .shapes import Size  # noqa: E402
from .tensor.creation import Generator, bernoulli, randint_like, randperm  # noqa: E402
from .tensor.saving import load, save  # noqa: E402
from . import data  # noqa: E402
from .tensor.math_methods import floor_divide, fmod, remainder  # noqa: E402
from .tensor.functions import (add, amax, amin, argwhere, bitwise_and,  # noqa: E402
                               bitwise_left_shift, bitwise_not, bitwise_or,
                               bitwise_right_shift, bitwise_xor, broadcast_to, clamp_max,
                               clamp_min, clone, count_nonzero, div, divide, dot, erf, ge,
                               greater, greater_equal, gt, is_floating_point, le, less,
                               less_equal, logical_and, logical_not, logical_or, logical_xor,
                               logsumexp, lt, masked_fill, mm, mul, multiply, mv, ne, not_equal,
                               ravel, relu, sub, subtract, true_divide)
from .tensor.more_math import (absolute, acos, acosh, angle, arccos, arccosh,  # noqa: E402
                               arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan,
                               atan2, atanh, copysign, cosh, deg2rad, digamma, erfc, erfinv,
                               fix, float_power, fmax, fmin, frac, frexp, heaviside, hypot,
                               isneginf, isposinf, isreal, ldexp, lgamma, logaddexp2, logit,
                               mvlgamma, nan_to_num, nextafter, polygamma, positive, rad2deg,
                               sgn, signbit, sinc, sinh, tan, xlogy)
from .tensor.index_methods import cummax, cummin, logcumsumexp  # noqa: E402
from .tensor.stats_methods import (aminmax, bincount, bucketize, corrcoef, cov,  # noqa: E402
                                   histc, histogram, isin, kthvalue, median, mode, msort,
                                   nanmean, nanmedian, nanquantile, nansum, quantile,
                                   searchsorted, std_mean, unique, unique_consecutive, var_mean)
from .tensor.array_functions import (atleast_1d, atleast_2d, atleast_3d, block_diag,  # noqa: E402
                                     broadcast_shapes, broadcast_tensors, cartesian_prod,
                                     cdist, chain_matmul, column_stack, combinations, concat,
                                     cross, cumulative_trapezoid, diag, diag_embed, diagflat,
                                     diff, dist, dsplit, dstack, fliplr, flipud, gcd, gcd_,
                                     hsplit, hstack, kron, lcm, lcm_, meshgrid, pdist, renorm,
                                     rot90, row_stack, tensor_split, tensordot,
                                     trapezoid, trapz, tril_indices, triu_indices,
                                     unravel_index, vander, vsplit, vstack)
from .tensor.scatter_methods import (index_add, index_copy, index_fill,  # noqa: E402
                                     index_put, index_reduce, masked_scatter, put,
                                     scatter_reduce, take, take_along_dim)
from .tensor.functions import (addbmm, addcdiv, addcmul, addmv, addr, baddbmm, ger,  # noqa: E402
                               inner, is_complex, is_inference, is_nonzero, tile, vdot)
from . import functional, nn, optim  # noqa: E402
from .functional.torch_forms import (adaptive_avg_pool1d, adaptive_max_pool1d,  # noqa: E402
                                     avg_pool1d, channel_shuffle, conv1d, conv2d, conv3d,
                                     conv_transpose1d, conv_transpose2d, conv_transpose3d,
                                     max_pool1d, max_pool1d_with_indices, max_pool2d,
                                     max_pool3d, pixel_shuffle, pixel_unshuffle)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402
from . import func  # noqa: E402
from . import inference  # noqa: E402
from . import perf  # noqa: E402
from .perf import profile  # noqa: E402
from .trace import trace  # noqa: E402

__version__ = "0.1.0"

# the public names of `import tinygradx as tgx` (re-exported from the modules above)
__all__ = [
    "autograd", "fused", "ops", "functional", "func", "inference", "nn", "optim", "perf",
    "Function", "OpError", "default_rng", "detect_anomaly", "enable_grad", "get_rng_state", "grad",
    "is_grad_enabled", "manual_seed", "no_grad", "set_rng_state", "unbroadcast",
    "Tensor", "bool_", "float16", "float32", "float64", "int32", "int64", "uint8", "device",
    "uint16", "uint32", "uint64",
    "arange", "as_tensor", "cat", "concatenate", "einsum", "empty", "empty_like", "eye",
    "from_numpy", "full", "full_like", "matmul", "maximum", "minimum",
    "ones", "ones_like", "rand", "rand_like", "randint", "randn", "randn_like", "stack",
    "tensor", "where", "zeros", "zeros_like",
    "argsort", "cumprod", "cumsum", "diagonal", "flip", "gather", "masked_select",
    "repeat_interleave", "roll", "scatter", "scatter_add", "sort", "topk", "unflatten",
    "ceil", "cos", "exp2", "floor", "isclose", "isfinite", "isinf", "isnan", "lerp", "log2",
    "log10", "logaddexp", "round", "sign", "sin", "trunc",
    "BoolTensor", "ByteTensor", "DoubleTensor", "FloatTensor", "IntTensor", "LongTensor", "abs",
    "argmax", "argmin", "bmm", "clamp", "clip", "eq", "exp", "is_tensor", "log", "log_softmax",
    "max", "mean", "min", "multinomial", "nonzero", "numel", "pow", "sigmoid", "softmax",
    "sqrt", "sum", "tanh", "tril", "triu",
    "int8", "int16", "long", "double", "half", "short",
    "GradcheckError", "gradcheck", "gradgradcheck", "profile", "trace",
    # more of torch's names
    "addmm", "all", "allclose", "any", "chunk", "equal", "flatten", "moveaxis", "movedim",
    "narrow", "norm", "outer", "permute", "prod", "reshape", "select", "split", "squeeze", "std",
    "swapaxes", "swapdims", "t", "transpose", "unbind", "unsqueeze", "var", "index_select",
    "expm1", "log1p", "neg", "negative", "reciprocal", "rsqrt", "square", "linspace",
    "logspace", "inference_mode", "set_grad_enabled", "finfo", "get_default_dtype", "iinfo",
    "set_default_dtype", "Size",
    # the everyday surface: randomness, integer-style division, comparisons as functions, ...
    "data", "save", "load", "Generator", "bernoulli", "randint_like", "randperm",
    "floor_divide", "fmod", "remainder", "bitwise_left_shift", "bitwise_right_shift",
    "add", "amax", "amin", "argwhere", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "broadcast_to", "clamp_max", "clamp_min", "clone", "count_nonzero", "div", "divide", "dot",
    "erf", "ge", "greater", "greater_equal", "gt", "is_floating_point", "le", "less",
    "less_equal", "logical_and", "logical_not", "logical_or", "logical_xor", "logsumexp", "lt",
    "masked_fill", "mm", "mul", "multiply", "mv", "ne", "not_equal", "ravel", "relu", "sub",
    "subtract", "true_divide",
    # the trigonometric, hyperbolic, special and float-aware functions (tensor/more_math.py)
    "absolute", "acos", "acosh", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "copysign", "cosh",
    "deg2rad", "digamma", "erfc", "erfinv", "fix", "float_power", "fmax", "fmin", "frac",
    "frexp", "heaviside", "hypot", "isneginf", "isposinf", "isreal", "ldexp", "lgamma",
    "logaddexp2", "logit", "mvlgamma", "nan_to_num", "nextafter", "polygamma", "positive",
    "rad2deg", "sgn", "signbit", "sinc", "sinh", "tan", "xlogy",
    # products by rank and the fused add* forms (tensor/aliases.py), predicates
    "addbmm", "addcdiv", "addcmul", "addmv", "addr", "baddbmm", "ger", "inner", "is_complex",
    "is_inference", "is_nonzero", "tile", "vdot",
    # torch's top-level forms of the convolution and pooling families (functional/torch_forms.py)
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "channel_shuffle", "conv1d",
    "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool3d", "pixel_shuffle", "pixel_unshuffle",
    # the running extremes and the log-sum-exp scan (ops/scans.py)
    "cummax", "cummin", "logcumsumexp",
    # the scatter family (tensor/scatter_methods.py, ops/scatter_reduce.py)
    "index_add", "index_copy", "index_fill", "index_put", "index_reduce", "masked_scatter", "put",
    "scatter_reduce", "take", "take_along_dim",
    # order statistics, counting and histograms (tensor/stats_methods.py)
    "aminmax", "bincount", "bucketize", "corrcoef", "cov", "histc", "histogram", "isin",
    "kthvalue", "median", "mode", "msort", "nanmean", "nanmedian", "nanquantile", "nansum",
    "quantile", "searchsorted", "std_mean", "unique", "unique_consecutive", "var_mean",
    # diagonals, blocks, grids, stacking, integrals, distances (tensor/array_functions.py)
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "column_stack",
    "combinations", "concat", "cross", "cumulative_trapezoid", "diag", "diag_embed", "diagflat",
    "diff", "dist", "dsplit", "dstack", "fliplr", "flipud", "gcd", "gcd_", "hsplit", "hstack",
    "kron", "lcm", "lcm_", "meshgrid", "pdist", "renorm", "rot90", "row_stack", "tensor_split",
    "tensordot", "trapezoid", "trapz", "tril_indices", "triu_indices", "unravel_index",
    "vander", "vsplit", "vstack",
]

# torch's dtype names: tgx.long, tgx.float, ... (as torch.long, torch.float). Set last, since
# float, int and bool shadow the builtins in this module; __all__ leaves those three out, so
# `from tinygradx import *` never hides a user's builtins.
long, double, half, short = int64, float64, float16, int16
float, int, bool = float32, int32, bool_  # noqa: A001

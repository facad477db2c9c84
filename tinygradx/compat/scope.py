"""The PyTorch names left out of the look-alike on purpose, and why: what does not fit an eager
engine of real numbers on one CPU (distributed training, quantized and sparse tensors, lazy
modules, GPUs, TorchScript and the compiler's internals, complex and low-precision dtypes, ...).

Two readers: the refusal message (facade.py: `torch.nn.LazyLinear is not available ...: lazy
modules ...`), and the coverage table (docs/make_pytorch_coverage.py), which counts these names
apart from the ones still to build. A rule is a reason and the glob patterns (fnmatch, on the
full PyTorch name: `torch.Tensor.to_sparse*`) it covers; the first rule that matches wins.
"""
from __future__ import annotations

from fnmatch import fnmatchcase

DISTRIBUTED = "distributed training: tinygradx runs in one process on the CPU"
QUANTIZED = "quantized tensors and int8 kernels: tinygradx computes in float32 and float64"
SPARSE = "sparse tensors: a tinygradx tensor is a dense numpy array"
LAZY = ("lazy modules take their sizes from the first input; tinygradx's layers take them "
        "when built")
ACCELERATOR = "a GPU or another accelerator (CUDA, MPS, XPU, ...): tinygradx computes on the CPU"
KERNELS = ("an entry point of a vendor kernel library (cuDNN, MIOpen, MKL-DNN, FBGEMM), not an "
           "API for models")
COMPILER = ("TorchScript, torch.fx and the compiler's tracing and symbolic shapes: tinygradx "
            "runs every op eagerly, in Python")
COMPLEX = "complex numbers: tinygradx's dtypes are real (floats, integers, bool)"
LOW_PRECISION = "bfloat16, float8 and sub-byte dtypes: numpy has none of them"
STORAGE = ("storages, memory formats, strides and raw pointers: a tinygradx tensor is a numpy "
           "array and has no storage object of its own")
NESTED = "nested (jagged) tensors"
DATAPIPES = "DataPipes (torchdata's, deprecated in PyTorch)"
ATEN = ("an ATen kernel under a public name (functionalization's *_copy ops, the kernels "
        "behind nn.LSTM and the norms, their backward helpers); the module or function that "
        "calls it is the API")
INTERNAL = "PyTorch's own machinery (dispatch, overrides, tracing state), not an API for models"
REMOVED = "removed from PyTorch: the name remains only to raise an error there"
FIRST_CLASS_DIMS = ("first-class dimensions (functorch.dim: Tensor.index binds positions to Dim "
                    "objects), an experimental indexing system; learner code's `.index(...)` is "
                    "a list's or a string's")

RULES = (
    (DISTRIBUTED, (
        "torch.distributed.*", "torch.nn.parallel.DistributedDataParallel*",
        "torch.utils.data.distributed.*", "torch.utils.data.DistributedSampler",
        "torch.nn.SyncBatchNorm", "torch.Tensor.is_distributed", "torch.is_distributed",
        "torch.batch_norm_gather_stats*", "torch.batch_norm_backward_*",
        "torch.batch_norm_elemt", "torch.batch_norm_stats", "torch.batch_norm_update_stats",
        "torch.wait", "torch.fork", "torch.Future",
        "torch.Tensor.share_memory_", "torch.Tensor.is_shared",
        "torch.prepare_multiprocessing_environment")),
    (QUANTIZED, (
        "torch.*quantiz*", "torch.q_*", "torch.Tensor.q_*", "torch.qint*", "torch.quint*",
        "torch.qscheme", "torch.Tensor.qscheme", "torch.per_channel_*", "torch.per_tensor_*",
        "torch.int_repr", "torch.Tensor.int_repr", "torch.dequantize", "torch.Tensor.dequantize",
        "torch.fbgemm_*", "torch.choose_qparams_optimized", "torch.fused_moving_avg_obs_fake_quant",
        "torch.*Q*Storage", "torch.nn.quantized*", "torch.Tensor.is_quantized")),
    (SPARSE, (
        "torch.*sparse*", "torch.Tensor.*sparse*", "torch.Tensor.coalesce",
        "torch.Tensor.is_coalesced", "torch.Tensor.indices", "torch.Tensor.values",
        "torch.Tensor.crow_indices", "torch.Tensor.col_indices", "torch.Tensor.ccol_indices",
        "torch.Tensor.row_indices", "torch.Tensor.dense_dim", "torch.Tensor.to_dense",
        "torch.*_indices_copy", "torch.indices_copy", "torch.values_copy", "torch.smm",
        "torch.Tensor.smm", "torch.hsmm", "torch.dsmm", "torch.hspmm", "torch.spmm",
        "torch.saddmm", "torch.sspaddmm", "torch.Tensor.sspaddmm", "torch.segment_reduce",
        "torch.nn.utils.prune*", "torch.optim.SparseAdam")),
    (LAZY, ("torch.nn.Lazy*",)),
    (ACCELERATOR, (
        "torch.cuda.*", "torch.Tensor.cuda", "torch.Tensor.xpu", "torch.Tensor.ipu",
        "torch.Tensor.mtia", "torch.Tensor.pin_memory", "torch.Tensor.is_pinned",
        "torch.Tensor.record_stream", "torch.Stream", "torch.Event", "torch.is_vulkan_available",
        "torch.get_device_module", "torch.AcceleratorError", "torch.OutOfMemoryError",
        "torch.*_autocast_*", "torch.autocast_*", "torch.is_autocast_*",
        "torch.profiler_allow_cudagraph_*", "torch.nn.parallel.*")),
    (KERNELS, (
        "torch.*cudnn*", "torch.*miopen*", "torch.*mkldnn*", "torch.Tensor.to_mkldnn",
        "torch.Tensor.is_mkldnn", "torch.has_lapack", "torch.has_mkl", "torch.has_openmp",
        "torch.has_spectral", "torch.conv_tbc", "torch.nn.functional.conv_tbc",
        "torch.nn.functional.grouped_mm", "torch.nn.functional.scaled_grouped_mm",
        "torch.nn.functional.scaled_mm", "torch.nn.functional.native_channel_shuffle",
        "torch.native_channel_shuffle")),
    (COMPILER, (
        "torch.jit*", "torch.fx*", "torch.Script*", "torch.LiteScriptModule",
        "torch.CompilationUnit", "torch.ConcreteModuleType*", "torch.Graph",
        "torch.GraphExecutorState", "torch.Block", "torch.Node", "torch.Value", "torch.Use",
        "torch.Code", "torch.ExecutionPlan", "torch.Gradient", "torch.AliasDb",
        "torch.ArgumentSpec", "torch.CompleteArgumentSpec", "torch.Argument",
        "torch.FunctionSchema", "torch.*Type", "torch.InferredType", "torch.TracingState",
        "torch.FileCheck", "torch.ErrorReport", "torch.CallStack", "torch.IODescriptor",
        "torch.JITException", "torch.StaticModule", "torch.ThroughputBenchmark",
        "torch.Benchmark*", "torch.OperatorInfo", "torch.Tag", "torch.Sym*", "torch.sym_*",
        "torch.import_ir_module*", "torch.parse_ir", "torch.parse_schema",
        "torch.parse_type_comment", "torch.merge_type_from_type_comment",
        "torch.unify_type_list", "torch.cond", "torch.while_loop", "torch.vmap",
        "torch.DeepCopyMemoTable", "torch.PyTorchFile*", "torch.*StorageContext",
        "torch.ScriptModuleSerializer", "torch.Capsule", "torch.AggregationType",
        "torch.LockingLogger", "torch.NoopLogger", "torch.LoggerBase", "torch.BufferDict",
        "torch.ModuleDict", "torch.ParameterDict", "torch.classproperty",
        "torch.compiled_with_cxx11_abi", "torch.nn.functional.boolean_dispatch",
        "torch.nn.functional.assert_int_or_pair")),
    (COMPLEX, (
        "torch.complex*", "torch.cfloat", "torch.cdouble", "torch.chalf", "torch.Tensor.cfloat",
        "torch.Tensor.cdouble", "torch.Tensor.chalf", "torch.*view_as_complex*",
        "torch.*view_as_real*", "torch.polar", "torch.*conj*", "torch.Tensor.*conj*",
        "torch.is_complex", "torch.Tensor.is_complex", "torch.angle", "torch.Tensor.angle",
        "torch.real", "torch.imag", "torch.Tensor.real", "torch.Tensor.imag", "torch.Tensor.mH",
        "torch.Tensor.H", "torch.adjoint", "torch.Tensor.adjoint", "torch.sgn",
        "torch.Tensor.sgn", "torch.Tensor.sgn_", "torch.stft", "torch.istft",
        "torch.Tensor.stft", "torch.Tensor.istft", "torch.ComplexDoubleStorage",
        "torch.ComplexFloatStorage", "torch.vdot", "torch.Tensor.vdot", "torch.is_neg",
        "torch.Tensor.is_neg", "torch.resolve_neg", "torch.Tensor.resolve_neg")),
    (LOW_PRECISION, (
        "torch.bfloat16", "torch.BFloat16*", "torch.Tensor.bfloat16", "torch.float8_*",
        "torch.float4_*", "torch.bits*", "torch.bit", "torch.int1", "torch.int2", "torch.int3",
        "torch.int4", "torch.int5", "torch.int6", "torch.int7", "torch.uint1", "torch.uint2",
        "torch.uint3", "torch.uint4", "torch.uint5", "torch.uint6", "torch.uint7",
        "torch.optim.Muon")),
    (STORAGE, (
        "torch.*Storage", "torch.StorageBase", "torch.Tensor.storage*",
        "torch.Tensor.untyped_storage", "torch.Tensor.data_ptr", "torch.Tensor.const_data_ptr",
        "torch.Tensor.set_", "torch.Tensor.is_set_to", "torch.is_storage",
        "torch.Tensor.dim_order", "torch.channels_last*", "torch.contiguous_format",
        "torch.preserve_format", "torch.legacy_contiguous_format", "torch.memory_format",
        "torch.*as_strided*", "torch.Tensor.*as_strided*", "torch.empty_strided",
        "torch.Tensor.new_empty_strided", "torch.empty_permuted", "torch.from_file",
        "torch.frombuffer", "torch.from_dlpack", "torch.to_dlpack", "torch.layout",
        "torch.strided", "torch.Tensor.layout", "torch.Tensor.resize_*",
        "torch.Tensor.resize", "torch.resize_as_", "torch.Tensor.is_meta",
        "torch.Tensor.module_load", "torch.Tensor.stride", "torch.Tensor.storage_offset",
        "torch.hash_tensor", "torch.Tensor.hash_tensor", "torch.nonzero_static",
        "torch.Tensor.nonzero_static")),
    (NESTED, ("torch.nested*", "torch.jagged", "torch.Tensor.is_nested",
              "torch.Tensor.to_padded_tensor")),
    (DATAPIPES, ("torch.utils.data.*DataPipe*", "torch.utils.data.DataChunk",
                 "torch.utils.data.functional_datapipe",
                 "torch.utils.data.argument_validation", "torch.utils.data.runtime_validation*",
                 "torch.utils.data.non_deterministic",
                 "torch.utils.data.guaranteed_datapipes_determinism")),
    (ATEN, (
        "torch.*_copy", "torch.native_*", "torch.rnn_*", "torch.lstm", "torch.lstm_cell",
        "torch.gru", "torch.gru_cell", "torch.constant_pad_nd", "torch.convolution",
        "torch.embedding_renorm_", "torch.grid_sampler*", "torch.affine_grid_generator",
        "torch.norm_except_dim", "torch.frobenius_norm", "torch.nuclear_norm",
        "torch.feature_dropout", "torch.feature_dropout_", "torch.feature_alpha_dropout_",
        "torch.alpha_dropout_", "torch.dropout_", "torch.*_scatter", "torch.Tensor.*_scatter",
        "torch.slice_inverse", "torch.Tensor.slice_inverse", "torch.unsafe_*",
        "torch.Tensor.unsafe_*", "torch.nn.functional.multi_head_attention_forward",
        "torch.rsub", "torch.fix_", "torch.index_put_", "torch.narrow_copy",
        "torch.Tensor.narrow_copy", "torch.split_with_sizes", "torch.Tensor.split_with_sizes")),
    (INTERNAL, (
        "torch.DispatchKey*", "torch.ExcludeDispatchKeyGuard", "torch.DisableTorchFunction*",
        "torch.nn.functional.handle_torch_function", "torch.nn.functional.has_torch_function*",
        "torch.Tensor.as_subclass", "torch.USE_*", "torch.TYPE_CHECKING", "torch.PRIVATE_OPS",
        "torch.FatalError", "torch.get_file_path", "torch.thread_safe_generator",
        "torch.set_warn_always", "torch.is_warn_always_enabled", "torch.init_num_threads",
        "torch.SUM", "torch.AVG", "torch.Tensor.output_nr", "torch.Tensor.grad_dtype",
        "torch.Tensor.is_maia", "torch.Tensor.is_vulkan", "torch.Tensor.is_xla",
        "torch.Tensor.is_ipu", "torch.Tensor.is_mtia", "torch.Tensor.is_meta",
        "torch.clear_autocast_cache")),
    (FIRST_CLASS_DIMS, ("torch.Tensor.index",)),
    (REMOVED, (
        "torch.eig", "torch.Tensor.eig", "torch.symeig", "torch.Tensor.symeig", "torch.lstsq",
        "torch.Tensor.lstsq", "torch.solve", "torch.Tensor.solve", "torch.matrix_rank",
        "torch.Tensor.reinforce", "torch.Tensor.volatile")),
)


# names a rule's pattern matches that are in scope all the same: nn.init.sparse_ fills a dense
# tensor (with a share of zeros per column), it makes no sparse tensor
IN_SCOPE = ("torch.nn.init.sparse", "torch.nn.init.sparse_")


def reason(name):
    """Why the PyTorch name `name` (a full name: torch.nn.LazyLinear) is left out, or ""."""
    if name in IN_SCOPE:
        return ""
    for why, patterns in RULES:
        if any(fnmatchcase(name, p) for p in patterns):
            return why
    return ""

"""What a script written for a GPU or a cluster meets on its way through the look-alike:
torch.distributed, torch.nn.parallel, torch.amp / torch.cuda.amp, torch.backends,
torch.compile, the torch.utils.data submodules. Each is held to what PyTorch does on this same
machine (one CPU, no GPU, one process): imports and settings succeed, a call that would need a
GPU or a process group is refused by name where it is made.
"""
import warnings

import numpy as np
import pytest

import tinygradx.compat as compat
from oracle import assert_clear, requires_torch, torch as real
from tinygradx.compat import cpu_only

LOOK = compat.torch


def refused(call, name):
    with pytest.raises(NotImplementedError) as e:
        call()
    assert_clear(e.value, name, "not available")
    return str(e.value)


# -- imports: the lines scripts start with ----------------------------------------------------

IMPORTS = [
    "from torch.nn.parallel import DistributedDataParallel as DDP",
    "from torch.distributed import init_process_group, destroy_process_group",
    "import torch.distributed as dist",
    "from torch.cuda.amp import GradScaler, autocast",
    "from torch.amp import GradScaler, autocast",
    "import torch.backends.cudnn as cudnn",
    "from torch.utils.data.dataloader import DataLoader, default_collate",
    "from torch.utils.data.dataset import Dataset, TensorDataset, Subset, random_split",
    "from torch.utils.data.sampler import RandomSampler, SequentialSampler, BatchSampler",
    "from torch.utils.data.distributed import DistributedSampler",
    "from torch.nn import DataParallel",
    "from torch import compile, autocast",
]


@pytest.mark.parametrize("line", IMPORTS)
def test_the_imports_succeed(line):
    with compat.installed():
        exec(line, {})


def test_the_data_submodules_hand_out_the_package_classes():
    with compat.installed() as torch:
        from torch.utils.data.dataloader import DataLoader
        from torch.utils.data.sampler import SequentialSampler
        assert DataLoader is torch.utils.data.DataLoader
        assert SequentialSampler is torch.utils.data.SequentialSampler
        with pytest.raises(ImportError, match="torch.utils.data.sampler.DataLoader"):
            exec("from torch.utils.data.sampler import DataLoader", {})


@requires_torch
def test_the_data_submodules_hold_torchs_names():
    import importlib
    from tinygradx.compat.lookalike import DATA_PARTS
    for part, names in DATA_PARTS.items():
        assert set(names) == set(importlib.import_module(f"torch.utils.data.{part}").__all__)


# -- torch.distributed ----------------------------------------------------------------------------

def test_distributed_answers_and_refuses_when_called():
    dist = LOOK.distributed
    assert dist.is_available() is False and dist.is_initialized() is False
    assert dist.is_torchelastic_launched() is False and dist.is_nccl_available() is False
    assert dist.ReduceOp.SUM and dist.Backend.GLOO == "gloo"
    msg = refused(lambda: dist.init_process_group(backend="nccl"),
                  "torch.distributed.init_process_group")
    assert "one process" in msg
    refused(lambda: dist.all_reduce(LOOK.ones(2), op=dist.ReduceOp.SUM),
            "torch.distributed.all_reduce")
    refused(dist.get_rank, "torch.distributed.get_rank")
    with pytest.raises(AttributeError, match="torch.distributed.rpc is not available.*one "
                                             "process"):
        _ = dist.rpc


@requires_torch
def test_the_distributed_names_are_torchs():
    for name in (*cpu_only.DISTRIBUTED_CALLS, *cpu_only.DISTRIBUTED_ANSWERS):
        assert callable(getattr(real.distributed, name)), name
    ops = {n for n in vars(cpu_only.ReduceOp) if n.isupper()}
    assert ops <= set(dir(real.distributed.ReduceOp))


def test_ddp_is_refused_when_constructed_and_dataparallel_calls_the_module():
    model = LOOK.nn.Linear(3, 2)
    refused(lambda: LOOK.nn.parallel.DistributedDataParallel(model, device_ids=[0]),
            "torch.nn.parallel.DistributedDataParallel")
    refused(lambda: LOOK.utils.data.distributed.DistributedSampler([1, 2]),
            "torch.utils.data.distributed.DistributedSampler")
    assert not isinstance(model, LOOK.nn.parallel.DistributedDataParallel)


@requires_torch
def test_dataparallel_matches_torch_on_a_cpu():
    """torch.nn.DataParallel without a GPU: the wrapped module's output, its state dict under
    "module.", and the gradients of the module's parameters."""
    real.manual_seed(0)
    theirs = real.nn.DataParallel(real.nn.Linear(4, 3), device_ids=[0])
    mine = LOOK.nn.DataParallel(LOOK.nn.Linear(4, 3), device_ids=[0])
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert list(mine.state_dict()) == list(state) == ["module.weight", "module.bias"]
    mine.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    yt, ym = theirs(real.tensor(x)), mine(LOOK.tensor(x))
    np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    yt.sum().backward()
    ym.sum().backward()
    np.testing.assert_allclose(mine.module.weight.grad.numpy(),
                               theirs.module.weight.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert mine.device_ids == theirs.device_ids == []


# -- torch.amp, torch.cuda.amp --------------------------------------------------------------------

def _scaler_warning(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = make()
    return scaler, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@requires_torch
@pytest.mark.parametrize("make", [
    lambda t: t.cuda.amp.GradScaler(enabled=True), lambda t: t.amp.GradScaler("cuda"),
    lambda t: t.amp.GradScaler(), lambda t: t.GradScaler(enabled=True)],
    ids=["cuda.amp", "amp-cuda", "amp-default", "torch.GradScaler"])
def test_a_cuda_scaler_is_disabled_with_a_warning_as_in_torch(make):
    theirs, w_theirs = _scaler_warning(lambda: make(real))
    mine, w_mine = _scaler_warning(lambda: make(LOOK))
    assert theirs.is_enabled() is mine.is_enabled() is False
    assert any("not available" in w for w in w_theirs)
    assert any("disabling" in w for w in w_mine)
    assert mine.get_scale() == theirs.get_scale() == 1.0
    assert mine.state_dict() == theirs.state_dict() == {}
    loss = LOOK.ones(2, requires_grad=True).sum()
    assert mine.scale(loss) is loss


def test_a_disabled_scaler_steps_the_optimizer():
    p = LOOK.nn.Parameter(LOOK.ones(3))
    opt = LOOK.optim.SGD([p], lr=0.5)
    scaler = LOOK.cuda.amp.GradScaler(enabled=False)
    scaler.scale((p * 2).sum()).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(p.detach().numpy(), [0.0, 0.0, 0.0])


def _scaled_steps(t, grads):
    """A CPU GradScaler over a few steps whose gradients are `grads` (one may be inf): the
    parameters, the scale and growth tracking after each."""
    p = t.nn.Parameter(t.tensor([1.0, -2.0, 3.0]))
    opt = t.optim.SGD([p], lr=0.1)
    scaler = t.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    seen = []
    for g in grads:
        opt.zero_grad()
        loss = (p * t.tensor(g)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        seen.append((p.detach().numpy().copy(), scaler.get_scale(),
                     scaler.state_dict()["_growth_tracker"]))
    return seen


@requires_torch
def test_a_cpu_scaler_scales_skips_and_grows_as_torch():
    grads = [[0.5, 1.0, -1.0], [1.0, 2.0, 3.0], [float("inf"), 0.0, 1.0], [0.25, 0.5, 0.75],
             [1.0, 1.0, 1.0], [2.0, 0.0, -2.0]]
    mine, theirs = _scaled_steps(LOOK, grads), _scaled_steps(real, grads)
    for (pm, sm, gm), (pt, st, gt) in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(pm, pt, rtol=1e-7)
        assert sm == st and gm == gt


@requires_torch
def test_a_cpu_scaler_refuses_what_torch_refuses():
    for t in (LOOK, real):
        p = t.nn.Parameter(t.ones(2))
        opt = t.optim.SGD([p], lr=0.1)
        scaler = t.amp.GradScaler("cpu")
        scaler.scale(p.sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            scaler.step(opt)


@requires_torch
def test_autocast_is_disabled_on_cuda_and_changes_no_dtype():
    x = np.ones((2, 3), np.float32)
    for make in (lambda t: t.autocast("cuda"), lambda t: t.cuda.amp.autocast(),
                 lambda t: t.amp.autocast(device_type="cuda", dtype=t.float16),
                 lambda t: t.autocast("cpu", enabled=False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with make(real):
                want = (real.tensor(x) @ real.tensor(x).T).dtype
            with make(LOOK):
                got = (LOOK.tensor(x) @ LOOK.tensor(x).T).dtype
        assert str(got) == str(want).replace("torch.", "") == "float32"


def test_autocast_on_the_cpu_says_once_that_it_keeps_float32():
    from tinygradx.compat import amp
    amp._WARNED_CPU.clear()
    with pytest.warns(UserWarning, match="no mixed precision"):
        with LOOK.autocast(device_type="cpu", dtype=LOOK.float16):
            y = LOOK.ones(2, 2) @ LOOK.ones(2, 2)
    assert y.dtype == LOOK.float32

    @LOOK.autocast("cpu")
    def f(x):
        return x * 2
    assert f(LOOK.ones(1)).item() == 2.0
    with pytest.raises(RuntimeError, match="unsupported device_type 'gpu'"):
        LOOK.autocast("gpu")


# -- torch.backends, precision settings, compile --------------------------------------------------

@requires_torch
def test_backend_flags_start_as_torchs_and_are_kept():
    for path in ("cuda.matmul.allow_tf32", "cuda.matmul.allow_fp16_reduced_precision_reduction",
                 "cudnn.allow_tf32", "cudnn.benchmark", "cudnn.deterministic", "cudnn.enabled"):
        head, _, leaf = path.rpartition(".")
        obj_m = eval(f"b.{head}", {"b": LOOK.backends})
        obj_t = eval(f"b.{head}", {"b": real.backends})
        assert getattr(obj_m, leaf) == getattr(obj_t, leaf), path
    for call in ("cudnn.is_available()", "mps.is_available()", "mps.is_built()",
                 "cuda.is_built()", "cudnn.version()"):
        assert eval(f"b.{call}", {"b": LOOK.backends}) == eval(f"b.{call}",
                                                              {"b": real.backends}), call
    try:
        LOOK.backends.cuda.matmul.allow_tf32 = True
        LOOK.backends.cudnn.benchmark = True
        assert LOOK.backends.cuda.matmul.allow_tf32 is True and LOOK.backends.cudnn.benchmark
    finally:
        LOOK.backends.cuda.matmul.allow_tf32 = False
        LOOK.backends.cudnn.benchmark = False
    with pytest.raises(AttributeError, match="torch.backends.cuda.matmul.allow_tf3 is not "
                                             "available.*allow_tf32"):
        LOOK.backends.cuda.matmul.allow_tf3 = True
    with LOOK.backends.cuda.sdp_kernel(enable_flash=False):
        LOOK.backends.cuda.enable_flash_sdp(False)


@requires_torch
def test_float32_matmul_precision_is_kept_as_torch_keeps_it():
    try:
        for value in ("high", "medium", "highest"):
            real.set_float32_matmul_precision(value)
            LOOK.set_float32_matmul_precision(value)
            assert LOOK.get_float32_matmul_precision() == real.get_float32_matmul_precision()
        with pytest.warns(UserWarning, match="not one of"):
            LOOK.set_float32_matmul_precision("bogus")
        assert LOOK.get_float32_matmul_precision() == "highest"
    finally:
        real.set_float32_matmul_precision("highest")


@requires_torch
def test_compile_returns_the_model_and_computes_what_torch_compiled_computes():
    real.manual_seed(0)
    theirs = real.nn.Linear(3, 2)
    mine = LOOK.nn.Linear(3, 2)
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = LOOK.compile(mine)(LOOK.tensor(x)).detach().numpy()
    want = real.compile(theirs, backend="eager")(real.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    model = LOOK.nn.Linear(2, 2)
    assert LOOK.compile(model) is model
    assert LOOK.compile(model, mode="max-autotune", fullgraph=True) is model

    @LOOK.compile(dynamic=False)
    def f(x):
        return x + 1
    assert f(LOOK.ones(1)).item() == 2.0
    with pytest.raises(RuntimeError, match="must be a callable"):
        LOOK.compile(3)


@requires_torch
def test_cuda_answers_as_torch_does_without_a_gpu():
    for name in ("is_available", "device_count", "is_initialized", "is_bf16_supported",
                 "empty_cache", "memory_allocated", "max_memory_allocated"):
        assert getattr(LOOK.cuda, name)() == getattr(real.cuda, name)(), name
    for name in ("synchronize", "current_device", "get_device_name"):
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            getattr(real.cuda, name)()
        refused(getattr(LOOK.cuda, name), f"torch.cuda.{name}")


# -- torch.multiprocessing, torch.autograd.Variable -----------------------------------------------

def test_multiprocessing_imports_and_refuses_its_launchers():
    with compat.installed() as torch:
        import torch.multiprocessing as mp
        assert mp.cpu_count() >= 1 and mp.get_start_method(allow_none=True) in (None, "fork",
                                                                                 "spawn",
                                                                                 "forkserver")
        refused(lambda: mp.spawn(print, nprocs=2), "torch.multiprocessing.spawn")
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        mp.set_sharing_strategy("file_descriptor")
        with pytest.raises(ValueError, match="unknown strategy"):
            mp.set_sharing_strategy("shm")
        assert torch.multiprocessing is mp


@requires_torch
def test_variable_is_a_tensor_sharing_the_data_as_in_torch():
    for ns in (LOOK, real):
        t = ns.ones(2)
        v = ns.autograd.Variable(t)
        assert v is not t and not v.requires_grad and isinstance(t, ns.autograd.Variable)
        w = ns.autograd.Variable(t, requires_grad=True)
        assert w.requires_grad and w.is_leaf and not t.requires_grad
        w.data[0] = 5.0
        assert t.tolist() == [5.0, 1.0]
        y = ns.autograd.Variable(t * 2)
        assert y.grad_fn is None
        with pytest.raises(TypeError, match="tensor, but got list"):
            ns.autograd.Variable([1, 2])

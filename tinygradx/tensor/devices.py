"""Devices: tinygradx computes on the CPU (numpy) only, so there is one device, `cpu`.

`device` mirrors torch.device so model code that names its device runs unchanged:
`tgx.device("cpu")`, `x.device`, `x.to("cpu")`, `zeros(3, device=dev)`. A device other than
the CPU ("cuda", "cuda:0", "mps", ...) is refused where it is named, in one line, rather than
accepted and ignored: a program that asked for a GPU should learn at once that it will not
get one (PyTorch code picks the CPU itself when `torch.cuda.is_available()` is False).
"""
from __future__ import annotations

# torch's device types: a name from this list is a real device that tinygradx does not have;
# anything else is not a device at all (a typo), and the message says which
_OTHER_TYPES = ("cuda", "mps", "xpu", "xla", "meta", "hip", "ipu", "mkldnn", "opengl",
                "opencl", "ideep", "ve", "fpga", "maia", "lazy", "vulkan", "hpu", "mtia",
                "privateuseone")


class device:
    """torch.device's look-alike: `device("cpu")`, `device("cpu", 0)`, `device("cpu:0")`.

    `.type` is "cpu", `.index` None or the index given; two cpu devices compare equal (and
    hash alike) when their indices do, as in PyTorch. Any other device type raises a
    RuntimeError saying that tinygradx runs on the CPU only.
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device: give an index only with a device type string")
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError(f"device: expected a device type string such as 'cpu' or a "
                            f"device, got {type!r}")
        name, _, idx = type.partition(":")
        if idx:
            if index is not None:
                raise ValueError(f"device: the index is given twice ({type!r} and {index})")
            if not idx.isdigit():
                raise RuntimeError(f"device: invalid device string {type!r}")
            index = int(idx)
        if name != "cpu":
            raise unsupported("tgx.device", type if idx or index is None else f"{type}:{index}")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)
                                  or index < 0):
            raise ValueError(f"device: index must be a non-negative int, got {index!r}")
        self.type, self.index = "cpu", index

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return f"device(type='cpu'{'' if self.index is None else f', index={self.index}'})"

    def __str__(self):
        return "cpu" if self.index is None else f"cpu:{self.index}"


CPU = device("cpu")


def unsupported(where, name):
    """The one-line error for a device tinygradx does not have (or a string that is none)."""
    kind = str(name).partition(":")[0]
    if kind in _OTHER_TYPES:
        return RuntimeError(f"{where}: device {str(name)!r} is not available: tinygradx runs "
                            f"on the CPU only (use 'cpu', tgx.device('cpu') or None)")
    return RuntimeError(f"{where}: {name!r} is not a device; tinygradx runs on the CPU only "
                        f"(use 'cpu', tgx.device('cpu') or None)")


def check_device(where, dev):
    """None, "cpu", "cpu:N" and cpu devices pass; anything else raises a one-line error."""
    if dev is None or isinstance(dev, device):
        return
    if isinstance(dev, str):
        name, _, idx = dev.partition(":")
        if name == "cpu" and (not idx or idx.isdigit()):
            return
        raise unsupported(where, dev)
    if isinstance(dev, int) and not isinstance(dev, bool):
        raise RuntimeError(f"{where}: device {dev} is a GPU ordinal; tinygradx runs on the CPU "
                           f"only (use 'cpu', tgx.device('cpu') or None)")
    raise TypeError(f"{where}: device must be a string such as 'cpu' or a tgx.device, got "
                    f"{type(dev).__name__}")


def is_device(x):
    """True for what `.to()` reads as a device: a device, or a device string (not a dtype)."""
    return isinstance(x, device) or (isinstance(x, str) and x.partition(":")[0] in (
        ("cpu",) + _OTHER_TYPES))

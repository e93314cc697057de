"""What the code of a Python kernel file may call while the harness checks it (issue 32).

A launcher (a Triton or CUDA file's ``kernel(inputs, outputs)``) launches its language's kernels and computes
nothing itself. The harness records the ATen ops dispatched on the calling thread (harness/worker.py), but a
launcher could compute with torch where that recording does not look: on a thread of its own, with the recording
switched off, or from a function dressed up as the harness's own. So while a kernel is checked, every call made
from the kernel file's own code must go to the file's own functions, its language's runtime
(:attr:`kevolve.backend.runner.Runner.runtime_packages`), or a short list of builtins, container methods and tensor
methods that describe or view memory. Anything else (starting a thread, a torch function, the harness's code) is a
violation, named with the line that made it. Calls the runtime makes in turn are its own business.

The file's code is told apart by its code objects' file name, which it cannot change: an audit hook (which
Python lets no one remove) refuses code objects and functions made by hand, and ``compile``/``exec``, when the
file's own code asks for them, at load time as at run time.
"""

from __future__ import annotations

import builtins
import importlib.util
import math
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType
from typing import Any

import torch

#: the Python kernel files this process has loaded (kevolve.backend.runner.load_kernel_module adds them)
KERNEL_FILES: set[str] = set()

#: builtins a launcher may call: none of them calls back into code it is handed (no map, sorted, key=...)
BUILTINS = frozenset({
    "len", "range", "min", "max", "abs", "divmod", "round", "pow", "sum", "any", "all", "isinstance", "issubclass",
    "int", "float", "bool", "str", "repr", "format", "tuple", "list", "dict", "set", "frozenset", "enumerate",
    "zip", "iter", "next", "reversed", "getattr", "hasattr", "callable", "hash", "print", "slice", "id"})
#: tensor methods a launcher may call: sizes, strides, addresses and views of memory, and allocations
TENSOR_METHODS = frozenset({
    "numel", "size", "stride", "dim", "ndimension", "data_ptr", "element_size", "is_contiguous", "storage_offset",
    "get_device", "view", "reshape", "as_strided", "new_empty", "new_empty_strided", "unsqueeze", "squeeze",
    "flatten", "expand", "narrow", "select", "t", "transpose", "permute", "contiguous", "untyped_storage",
    "nbytes", "__len__", "dtype", "device"})
#: the methods of these types a launcher may call, but for those that call back into code they are handed
CONTAINERS = (list, tuple, dict, set, frozenset, str, int, float, bytes)
CALLING_BACK = frozenset({"sort"})

#: audit events a kernel file's own code may not raise: code that passes for another file's, or source run
FORGING = frozenset({"code.__new__", "function.__new__", "compile", "exec"})

_refused: list[str] = []


def record_file(path: str) -> None:
    """Note a loaded kernel file (its code is then held to the rules above), and install the audit hook."""
    KERNEL_FILES.add(path)  # its code objects carry the path it is loaded by
    _install_hook()


def refused() -> list[str]:
    """What the audit hook refused a kernel file's code since the last call (and forgets it)."""
    found, _refused[:] = list(_refused), []
    return found


@contextmanager
def calls_checked(runtimes: tuple[str, ...]) -> Iterator[list[str]]:
    """Within the block, every call made from a kernel file's code (on this thread and on threads started with
    :mod:`threading`) is checked; the list it yields collects the violations."""
    found: list[str] = []
    allowed_dirs = tuple(filter(None, map(_package_dir, runtimes)))

    in_c: set[int] = set()  # kernel frames in a C call: Python that the C code calls back is not theirs

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            caller = frame.f_back
            if caller is not None and is_kernel(caller.f_code) and id(caller) not in in_c \
                    and not _callee_allowed(frame.f_code, allowed_dirs):
                found.append(f"calls {frame.f_code.co_qualname} ({frame.f_code.co_filename}) "
                             f"at line {caller.f_lineno}")
        elif event == "c_call" and is_kernel(frame.f_code):
            if not _builtin_allowed(arg, runtimes):
                found.append(f"calls {_describe(arg)} at line {frame.f_lineno}")
            in_c.add(id(frame))
        elif event in ("c_return", "c_exception"):
            in_c.discard(id(frame))

    previous = sys.getprofile()
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)


def is_kernel(code: Any) -> bool:
    """Whether ``code`` (a code object) comes from a loaded kernel file."""
    return code.co_filename in KERNEL_FILES


def _callee_allowed(code: Any, allowed_dirs: tuple[str, ...]) -> bool:
    return is_kernel(code) or code.co_filename.startswith(allowed_dirs)


def _builtin_allowed(function: Any, runtimes: tuple[str, ...]) -> bool:
    owner = getattr(function, "__self__", None)
    name = getattr(function, "__name__", "")
    if owner is builtins:
        return name in BUILTINS
    if owner is math:
        return True
    if isinstance(owner, torch.Tensor):
        return name in TENSOR_METHODS
    if isinstance(owner, CONTAINERS):
        return name not in CALLING_BACK
    module = owner.__name__ if isinstance(owner, ModuleType) else (getattr(function, "__module__", None)
                                                                     or type(owner).__module__)
    return str(module).split(".")[0] in runtimes


def _describe(function: Any) -> str:
    owner = getattr(function, "__self__", None)
    where = owner.__name__ if isinstance(owner, ModuleType) else type(owner).__name__ if owner is not None else ""
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", repr(function))
    return f"{where}.{name}" if where and not name.startswith(f"{where}.") else name


def _package_dir(name: str) -> str:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.submodule_search_locations:
        return ""
    return os.path.join(os.path.realpath(next(iter(spec.submodule_search_locations))), "")


_HOOKED: list[bool] = []


def _install_hook() -> None:
    if _HOOKED:
        return

    def hook(event: str, args: tuple) -> None:
        if event not in FORGING:
            return
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        if frame is not None and is_kernel(frame.f_code):
            why = f"a kernel file's code may not {_FORGING_WORDS[event]} (line {frame.f_lineno})"
            _refused.append(why)
            raise RuntimeError(f"kevolve: {why}")

    sys.addaudithook(hook)
    _HOOKED.append(True)


_FORGING_WORDS = {"code.__new__": "make or change code objects", "function.__new__": "make functions by hand",
                  "compile": "compile source", "exec": "run source with exec"}


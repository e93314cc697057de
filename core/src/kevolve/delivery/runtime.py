"""A kernel as a PyTorch operator: registered with ``torch.library``, traced by ``torch.compile`` and
``torch.export`` through its fake implementation, and cheap to call.

The per-call path is all a user pays for: output shapes looked up by the inputs' signature (shapes and dtypes; the
shape function runs once per signature, or on every call only where an output's size depends on input values),
the outputs allocated, the kernel launched. The harness times exactly this path, so a speedup it reports is the
one a caller gets.

This file needs torch only: ``result.save()`` copies it, with ``native.cpp``, into the saved package, which
registers the same operator on import without kevolve installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

NAMESPACE = "kevolve"
#: torch device type -> the dispatch key a kernel for that device is registered under
DISPATCH_KEYS = {"cpu": "CPU", "cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "mtia": "MTIA"}

Spec = tuple[tuple[int, ...], torch.dtype]
#: ``output_specs(inputs, read) -> [(shape, dtype), ...]``; ``read`` turns a 0-d tensor into a size (``int``
#: on real tensors, a new symbolic size under tracing)
ShapeFunction = Callable[..., list[Spec]]
KernelFn = Callable[[list[torch.Tensor], list[torch.Tensor]], None]

_LIBRARIES: dict[str, Any] = {}


class KernelOp:
    """The operator's implementation: shape lookup, output allocation, launch.

    ``value_dependent``: an output's size depends on input values (e.g. jagged outputs sized by offsets), so the
    shape function runs, and reads the device, on every call. Otherwise its answer is cached per signature.
    ``extras`` are tensors the kernel takes after the caller's (a module's weights)."""

    def __init__(self, qualname: str, kernel: KernelFn, output_specs: ShapeFunction, *, value_dependent: bool,
                 arg_names: Sequence[str], input_dtypes: Sequence[torch.dtype], device: str,
                 extras: Sequence[torch.Tensor] = (), error: type[Exception] = ValueError) -> None:
        self.qualname, self.kernel, self.output_specs = qualname, kernel, output_specs
        self.value_dependent = value_dependent
        self.arg_names, self.input_dtypes = tuple(arg_names), tuple(input_dtypes)
        self.device = torch.device(device)
        self.extras = [t.to(self.device) for t in extras]
        self.error = error
        #: input signature -> one template per output: a scalar of its dtype on its device expanded to its shape,
        #: which ``empty_like`` turns into a contiguous output at half the cost of ``empty(shape, ...)``
        self._templates: dict[tuple, list[torch.Tensor]] = {}

    def __call__(self, *args: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        inputs = [a.contiguous() for a in args]
        device = inputs[0].device if inputs else self.device
        if self.value_dependent:
            outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in self.specs(inputs, int)]
        else:
            key = (device, *[(a.shape, a.dtype) for a in inputs])
            templates = self._templates.get(key)
            if templates is None:
                templates = self._templates[key] = [torch.empty((), dtype=dtype, device=device).expand(shape)
                                                    for shape, dtype in self.specs(inputs, int)]
            outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in templates]
        self.kernel(inputs + self.extras if self.extras else inputs, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def specs(self, inputs: list[torch.Tensor], read: Callable[[torch.Tensor], Any]) -> list[Spec]:
        """The outputs' shapes and dtypes, after checking what the kernel was built for."""
        for index, (tensor, want) in enumerate(zip(inputs, self.input_dtypes)):
            if tensor.dtype != want:
                raise self.error(f"{self.qualname}: input {index} ({self.arg_names[index]}) is {tensor.dtype}, the "
                                 f"kernel was built for {want}; convert it or optimize the op for this dtype")
            if tensor.device.type != self.device.type:
                raise self.error(f"{self.qualname}: input {index} ({self.arg_names[index]}) is on "
                                 f"{tensor.device}, the kernel runs on {self.device.type} tensors")
        return self.output_specs(inputs, read)

    def fake(self, *args: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Outputs of the right shapes for tracing (fake or meta tensors); a size that depends on values becomes
        a new symbolic size."""
        read = lambda _: torch.library.get_ctx().new_dynamic_size()
        specs = self.specs(list(args), read)
        outputs = [torch.empty(shape, dtype=dtype, device=args[0].device) for shape, dtype in specs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def library() -> Any:
    """The ``kevolve`` fragment every kernel op is defined in (kept alive: a collected Library unregisters)."""
    if NAMESPACE not in _LIBRARIES:
        _LIBRARIES[NAMESPACE] = torch.library.Library(NAMESPACE, "FRAGMENT")
    return _LIBRARIES[NAMESPACE]


def registered(name: str) -> Any | None:
    """The op ``kevolve::name`` if this process already has it (from kevolve or from a saved package)."""
    try:
        return getattr(getattr(torch.ops, NAMESPACE), name).default
    except AttributeError:
        return None


def register(name: str, op: KernelOp, *, n_outputs: int, doc: str, capturable: bool) -> Any:
    """Define ``kevolve::name``, register its per-call path for the op's device, its fake implementation and a
    gradient that refuses, and return ``torch.ops.kevolve.name.default``. A name already registered in this
    process is the same kernel (names carry the source hash) and is returned as it is."""
    existing = registered(name)
    if existing is not None:
        return existing
    lib = library()
    returns = "Tensor" if n_outputs == 1 else "(" + ", ".join(["Tensor"] * n_outputs) + ")"
    tags = [torch.Tag.pt2_compliant_tag]
    if op.value_dependent:
        tags.append(torch.Tag.dynamic_output_shape)
    if not capturable and hasattr(torch.Tag, "cudagraph_unsafe"):
        tags.append(torch.Tag.cudagraph_unsafe)
    lib.define(f"{name}({', '.join(f'Tensor {arg}' for arg in op.arg_names)}) -> {returns}", tags=tuple(tags))
    per_call = bind_native(name, op, lib)
    torch.library.register_fake(f"{NAMESPACE}::{name}", op.fake, lib=lib)
    gradient = refuse_gradient(f"{NAMESPACE}::{name}", lib)
    overload = getattr(getattr(torch.ops, NAMESPACE), name).default
    entered = fast_calls(overload)
    overload.__doc__ = (f"{doc}\nper call: {per_call}\nentry: {entered}\n\nGradient: none ({gradient}); backward "
                        "through it raises.")
    return overload


def fast_calls(overload: Any) -> str:
    """Make a call of ``overload`` from Python skip the Python layers of an OpOverload call (``entry.cpp``): its
    class becomes a subclass of its own whose ``__call__`` is a C function, so the object stays
    ``torch.ops.kevolve.NAME.default`` for ``torch.compile``, ``torch.export`` and ``opcheck``. Returns how a call
    enters the op."""
    try:
        library = _loaded(Path(__file__).with_name("entry.cpp"), python=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"OpOverload.__call__ (the C entry was not built: {str(exc).splitlines()[0][:200]})"
    import ctypes

    make = library.kevolve_entry
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.c_char_p, ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.py_object]
    schema = overload._schema
    call = make(schema.name.encode(), len(schema.arguments), len(schema.returns), overload._op)
    overload.__class__ = type(type(overload).__name__, (type(overload),), {"__call__": call})
    return "a C function (plain tensors straight to the dispatcher; anything else through OpOverload.__call__)"


def bind_native(name: str, op: KernelOp, lib: Any) -> str:
    """Register the per-call path: in C++ (``native.cpp``: shape lookup, allocation and the launch with no
    Python) where the kernel launches from C (``op.kernel.native_launch``, e.g. a compiled CPU kernel), else
    ``op`` itself, whose kernel launches from Python anyway (also where ``native_launch`` returns None: a Triton
    launcher run every call). Returns what runs per call.

    The native path calls back into Python through helper ops: ``kevolve::name__shapes(Tensor[] inputs) ->
    Tensor[]`` (one meta tensor per output) for signatures it has not seen (every call where sizes depend on
    values), ``kevolve::name__extras() -> Tensor[]`` once for a module's weights, and ``kevolve::name__python(
    Tensor[] inputs, Tensor(a!)[] outputs) -> ()`` for the calls the launch function leaves to the kernel's own
    launcher (a Triton kernel learning a signature's launches). Python run by an op is hidden from torch.compile,
    which would otherwise try to compile it when a compiled graph calls the op."""
    key = DISPATCH_KEYS.get(op.device.type, "CompositeExplicitAutograd")
    launch = getattr(op.kernel, "native_launch", None)
    try:
        bound = launch(build_torch_library, op.value_dependent) if launch is not None else None
        native = _native() if bound is not None else None
    except (OSError, subprocess.SubprocessError) as exc:
        lib.impl(name, torch.compiler.disable(op), key)
        return f"Python; the native path was not built: {str(exc).splitlines()[0][:200]}"
    if bound is None:  # no launch from C for this op: its Python path is the short one
        lib.impl(name, torch.compiler.disable(op), key)
        return getattr(op.kernel, "native_per_call", "Python (shape lookup, allocation) and the kernel's Python "
                                                      "launcher")
    function, state = bound

    def helper(suffix: str, schema: str, fn: Callable) -> None:
        lib.define(f"{name}__{suffix}{schema}")
        lib.impl(f"{name}__{suffix}", torch.compiler.disable(fn), "CompositeExplicitAutograd")

    helper("shapes", "(Tensor[] inputs) -> Tensor[]", lambda inputs: [
        torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in op.specs(list(inputs), int)])
    helper("python", "(Tensor[] inputs, Tensor(a!)[] outputs) -> ()",
           lambda inputs, outputs: op.kernel(list(inputs), list(outputs)))
    if op.extras:
        helper("extras", "() -> Tensor[]", lambda: list(op.extras))
    import ctypes

    error = ctypes.create_string_buffer(2048)
    if native.kevolve_bind_op(f"{NAMESPACE}::{name}".encode(), key.encode(), len(op.arg_names),
                              int(op.value_dependent), function, state, error, len(error)):
        raise RuntimeError(f"registering {NAMESPACE}::{name}: {error.value.decode(errors='replace')}")
    return getattr(op.kernel, "native_per_call", "native (shape lookup, allocation and the launch in C++)")


# --- gradients: none, and saying so ----------------------------------------------------------------------------

def refuse_gradient(qualname: str, lib: Any) -> str:
    """Make backward through ``qualname`` raise instead of passing on a wrong (missing) gradient.

    PyTorch's own C++ fallback for ops without a derivative does this at no cost per call (``native.cpp``). Without
    a C++ compiler, a Python autograd formula that raises does the same at about 6 us per call (measured on the
    CPU, torch 2.13)."""
    try:
        import ctypes

        error = ctypes.create_string_buffer(1024)
        if _native().kevolve_raise_on_backward(qualname.encode(), error, len(error)) == 0:
            return "PyTorch's not-implemented derivative"
        why = error.value.decode(errors="replace").splitlines()[0][:200]
    except (OSError, subprocess.SubprocessError) as exc:
        why = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]

    def backward(ctx: Any, *grads: torch.Tensor) -> None:
        raise RuntimeError(f"{qualname} has no gradient: it is an inference kernel found by kevolve; run it under "
                           "torch.no_grad() or detach its inputs")

    torch.library.register_autograd(qualname, backward, lib=lib)
    return f"a Python formula that raises; the native one was not built: {why}"


def prepare_native() -> str:
    """Build (or find) ``native.cpp`` now, before processes that register ops need it; returns why it is
    unavailable, or ''."""
    try:
        _native()
        return ""
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def _loaded(source: Path, python: bool = False) -> Any:
    """The compiled ``source``, loaded once per process; with ``python``, a library that uses Python's C API, its
    calls made holding the interpreter's lock."""
    import ctypes

    if source.name not in _LOADED:
        path = str(build_torch_library(source, python=python))
        _LOADED[source.name] = ctypes.PyDLL(path) if python else ctypes.CDLL(path)
    return _LOADED[source.name]


_LOADED: dict[str, Any] = {}


def _native() -> Any:
    """The compiled ``native.cpp`` (loaded once per process by :func:`_loaded`), its functions' C signatures set."""
    import ctypes

    library = _loaded(Path(__file__).with_name("native.cpp"))
    library.kevolve_raise_on_backward.restype = ctypes.c_int
    library.kevolve_raise_on_backward.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    library.kevolve_bind_op.restype = ctypes.c_int
    library.kevolve_bind_op.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int,
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    return library


def build_torch_library(source: Path, include_dirs: Sequence[Path] = (), python: bool = False) -> Path:
    """A C++ file that uses torch's C++ API, built into a shared library against this torch with the host's
    compiler, cached under ``$XDG_CACHE_HOME/kevolve/native`` by torch version, ABI, compiler, the source and the
    headers beside it: one process builds while the others wait, and a failed build is remembered (with its
    reason) so that no later process spends its time failing again. With ``python``, against this Python's
    headers and torch's Python bindings too (and cached by Python's version)."""
    import sysconfig

    from filelock import FileLock  # torch's own dependency

    headers = sorted(p for d in include_dirs for p in Path(d).glob("*.h"))
    text = source.read_text() + "".join(p.read_text() for p in headers)
    if python:
        include_dirs = [*include_dirs, Path(sysconfig.get_paths()["include"])]
        text += f"{sysconfig.get_python_version()} {sysconfig.get_config_var('SOABI')}"
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if compiler is None:
        raise OSError("no C++ compiler (g++, c++, clang++ or $CXX)")
    key = hashlib.sha256(f"{text}{torch.__version__}{abi}{compiler}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kevolve" / "native"
    target = cache / f"{source.stem}-{torch.__version__.replace('+', '_')}-{key}.so"
    failed = target.with_suffix(".failed")
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock"):
        if target.exists():
            return target
        if failed.exists():
            raise OSError(failed.read_text())
        from torch.utils import cpp_extension

        paths = cpp_extension.library_paths()
        command = [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-w", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                   *(f"-I{path}" for path in [*include_dirs, *cpp_extension.include_paths()]), str(source),
                   "-o", f"{target}.tmp", *(f"-L{path}" for path in paths), "-ltorch_cpu", "-lc10",
                   *(["-ltorch_python"] if python else []),
                   *(f"-Wl,-rpath,{path}" for path in paths)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            failed.write_text(f"building {source.name} failed ({' '.join(command)}): {done.stderr[-1500:]}")
            raise subprocess.SubprocessError(failed.read_text())
        os.replace(f"{target}.tmp", target)
    return target

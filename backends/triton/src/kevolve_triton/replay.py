"""A Triton kernel file as the op's kernel, with its launches replayed from C on CUDA.

Triton launches from Python: the file's launcher computes grids and arguments, Triton's JIT binds and
specialises them, and its C launcher parses them again; tens of microseconds of host time per call, more than
many kernels take on the device. For one input signature those launches never change but for the pointers, so
``replay.cpp`` learns them over a signature's first calls (recorded here, from the ``CompiledKernel`` objects
Triton launches) and replays them with ``cuLaunchKernel`` from the op's native per-call path. What is recorded
is checked before it is trusted: two calls must record the same launches, a call must not read the device from
the host or compute with torch, every pointer must lie in a tensor the op owns (its inputs, outputs, scratch
buffers and the temporaries its launcher allocates, which a replay allocates afresh), and one replay into fresh
outputs must write what the file's launcher wrote. Anything else keeps the signature on the file's own launcher.

This file needs torch and triton only: saved packages carry it (with ``replay.cpp``) so that an installed op
replays as it does in kevolve.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: ``allocate(requests, device) -> buffers`` for a file that asks for scratch memory (kevolve.backend.scratch)
Allocate = Callable[[list[tuple[str, Any]], torch.device], list[torch.Tensor]]
INPUT, OUTPUT, SCRATCH = 1, 2, 3
_RECORDING = threading.Lock()
_INT_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u1": 8, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
_FLOAT_FORMATS = {"fp16": ("<e", "<H"), "fp32": ("<f", "<I"), "f32": ("<f", "<I"), "fp64": ("<d", "<Q")}


class NotReplayable(Exception):
    """Why a call's launches cannot be replayed from C."""


class ReplayKernel:
    """``kernel(inputs, outputs)`` of a Triton kernel file (with the scratch buffers it asks for), which the op's
    native path launches from C once a signature is learnt (:meth:`native_launch`)."""

    def __init__(self, module: ModuleType, allocate: Allocate) -> None:
        self.launcher = module.kernel
        request = getattr(module, "scratch", None)
        self.request = request if callable(request) else None
        self.allocate = allocate
        #: why signatures stay on the Python launcher: reason -> how many
        self.declined: Counter[str] = Counter()
        self._constants: dict[tuple, torch.Tensor] = {}
        self._library: Any = None
        self._state: int | None = None

    def __call__(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        if self._state is None or not self._library.kevolve_triton_learning(self._state):
            self._run(inputs, outputs)
            return
        if torch.cuda.is_current_stream_capturing():  # a graph records the launches itself; nothing to learn
            self._library.kevolve_triton_offer(self._state, None, -2)
            self._run(inputs, outputs)
            return
        launches: list[tuple] = []
        try:
            with recording(launches) as seen:
                buffers, fresh = self._run(inputs, outputs)
        except NotReplayable as exc:  # raised before the launcher ran
            self._decline(str(exc))
            self._run(inputs, outputs)
            return
        try:
            if seen.host_reads:
                raise NotReplayable(f"reads the device from the host ({seen.host_reads[0]})")
            if seen.torch_ops:
                raise NotReplayable(f"its launcher computes with torch ({', '.join(sorted(seen.torch_ops))})")
            record = encode(launches, inputs, outputs, [buffers[i] for i in fresh] + seen.allocated)
        except NotReplayable as exc:
            self._decline(str(exc))
            return
        array = (ctypes.c_int64 * len(record))(*record)
        if self._library.kevolve_triton_offer(self._state, array, len(record)) == 1:
            self._verify(inputs, outputs)

    def native_launch(self, build_library: Callable[..., Path], value_dependent: bool = False
                      ) -> tuple[int, int] | None:
        """``kevolve_triton_launch`` and its state (``replay.cpp``), for the op's native per-call path; OSError
        where launches cannot be replayed here (the op then stays on this launcher). None where output sizes
        depend on input values (``value_dependent``): the launches may depend on them too, so every call runs the
        file's launcher, and the op's Python path reaches it in one trip into Python where the native path takes
        two (its shapes, then the launch: 5-15 us more a call for jagged_truncate on a lent H200)."""
        if value_dependent:
            self.native_per_call = ("Python: shape lookup, allocation and the kernel file's launcher every call "
                                    "(output sizes depend on input values, so its launches may too)")
            return None
        if torch.version.hip is not None or not torch.cuda.is_available():
            raise OSError("Triton launches are replayed on CUDA only; this op launches from Python")
        library = ctypes.CDLL(str(build_library(Path(__file__).with_name("replay.cpp"))))
        library.kevolve_triton_state.restype = ctypes.c_void_p
        library.kevolve_triton_state.argtypes = []
        library.kevolve_triton_learning.argtypes = [ctypes.c_void_p]
        library.kevolve_triton_offer.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
        library.kevolve_triton_verify.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int64,
                                                  ctypes.POINTER(ctypes.c_uint64), ctypes.c_int64, ctypes.c_int64,
                                                  ctypes.c_char_p, ctypes.c_int]
        library.kevolve_triton_commit.argtypes = [ctypes.c_void_p, ctypes.c_int]
        library.kevolve_triton_counts.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]
        self._library, self._state = library, library.kevolve_triton_state()
        self.native_per_call = ("native: shape lookup and allocation in C++, each input signature's Triton launches "
                                "learnt over its first three calls (run by the kernel file's launcher) and then "
                                "replayed with cuLaunchKernel")
        return ctypes.cast(library.kevolve_triton_launch, ctypes.c_void_p).value, self._state

    def constant_buffers(self) -> list[torch.Tensor]:
        """The scratch buffers it keeps from call to call (a file's constant requests): memory its calls own."""
        return list(self._constants.values())

    def signatures(self) -> dict[str, int]:
        """How many input signatures are replayed, still learning, and left to the Python launcher."""
        if self._state is None:
            return {"replayed": 0, "learning": 0, "python": 0}
        counts = (ctypes.c_int64 * 3)()
        self._library.kevolve_triton_counts(self._state, counts)
        return dict(zip(("replayed", "learning", "python"), counts))

    def _run(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[int]]:
        """The file's launcher; returns the scratch buffers it was given and which of them are uninitialised."""
        if self.request is None:
            self.launcher(inputs, outputs)
            return [], []
        device = (outputs or inputs)[0].device
        buffers, fresh = [], []
        for dtype_name, size in self.request(inputs, outputs):
            if isinstance(size, (list, tuple)):  # a constant: the same buffer on every call
                key = (str(dtype_name), tuple(size), device)
                if key not in self._constants:
                    self._constants[key] = self.allocate([(dtype_name, list(size))], device)[0]
                buffers.append(self._constants[key])
            else:
                fresh.append(len(buffers))
                buffers.extend(self.allocate([(dtype_name, size)], device))
        self.launcher(inputs, outputs, buffers)
        return buffers, fresh

    def _verify(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        """Replay the agreed record once into fresh outputs; it must write what the launcher wrote."""
        fresh = [torch.empty_like(o) for o in outputs]
        for tensor in fresh:  # poisoned: a replay that writes nothing must not pass for one that does
            tensor.view(-1).view(torch.uint8).fill_(0xA5)
        pointers = lambda ts: (ctypes.c_uint64 * max(1, len(ts)))(*[t.data_ptr() for t in ts])
        error = ctypes.create_string_buffer(1024)
        device = (outputs or inputs)[0].device
        failed = self._library.kevolve_triton_verify(self._state, pointers(inputs), len(inputs), pointers(fresh),
                                                     len(fresh), device.index or 0, error, len(error))
        torch.cuda.synchronize(device)
        why = error.value.decode(errors="replace").splitlines()[0][:200] if failed else \
            next((f"output {i} differs from the launcher's" for i, (a, b) in enumerate(zip(outputs, fresh))
                  if not _same(a, b)), "")
        self._library.kevolve_triton_commit(self._state, int(not why))
        if why:
            self.declined[f"replay check: {why}"] += 1

    def _decline(self, reason: str) -> None:
        self._library.kevolve_triton_offer(self._state, None, -1)
        self.declined[reason] += 1


class Seen(TorchDispatchMode):
    """What a launcher did with torch while recorded: the uninitialised tensors it allocated (temporaries the
    replay allocates afresh each call), the ops it ran that compute (which a replay of its launches alone would
    not repeat), and any read of the device from the host (torch's sync debug mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.allocated: list[torch.Tensor] = []
        self.torch_ops: set[str] = set()
        self.host_reads: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        result = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__ in _ALLOCATIONS:
            self.allocated.append(result)
        elif not all(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns):
            # a view computes nothing; an in-place op or a new tensor's values are computed
            self.torch_ops.add(str(func.overloadpacket.__name__))
        return result


#: torch ops that allocate without writing (``new_empty`` for a temporary, e.g.)
_ALLOCATIONS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"}


@contextmanager
def recording(launches: list[tuple]) -> Iterator[Seen]:
    """Record this thread's Triton launches into ``launches`` as (compiled kernel, grid x, y, z, arguments,
    stream), and what the launcher did with torch meanwhile."""
    thread = threading.get_ident()

    def recorded(compiled: Any, launch: Callable) -> Callable:
        if threading.get_ident() != thread:
            return launch

        def run(grid_x: int, grid_y: int, grid_z: int, stream: int, function: int, *rest: Any) -> Any:
            # rest: packed metadata, launch metadata, enter and exit hooks, then the kernel's arguments
            launches.append((compiled, grid_x, grid_y, grid_z, rest[4:], stream))
            return launch(grid_x, grid_y, grid_z, stream, function, *rest)

        return run

    with _RECORDING, launches_through(recorded):
        mode = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught, Seen() as seen:
                warnings.simplefilter("always")
                yield seen
            seen.host_reads += [str(w.message).splitlines()[0] for w in caught if "synchroniz" in str(w.message)]
        finally:
            torch.cuda.set_sync_debug_mode(mode)


@contextmanager
def python_launches() -> Iterator[list[int]]:
    """Counts the Triton launches made from Python meanwhile (a replayed one makes none): how a test or a benchmark
    sees that an op replays. Yields a one-item list holding the count."""
    counted = [0]

    def counting(compiled: Any, launch: Callable) -> Callable:
        counted[0] += 1
        return launch

    with launches_through(counting):
        yield counted


@contextmanager
def launches_through(wrap: Callable[[Any, Callable], Callable]) -> Iterator[None]:
    """Every Triton launch from Python goes through ``CompiledKernel.run`` (a property giving the compiled
    kernel's launcher, in Triton 3.6 as in 3.9): meanwhile it gives ``wrap(compiled kernel, launcher)`` instead."""
    from triton.compiler.compiler import CompiledKernel

    launcher_of = CompiledKernel.__dict__.get("run")
    if not isinstance(launcher_of, property):
        raise NotReplayable("this Triton's CompiledKernel has no `run` property to record launches from")
    CompiledKernel.run = property(lambda compiled: wrap(compiled, launcher_of.fget(compiled)))
    try:
        yield
    finally:
        CompiledKernel.run = launcher_of


def encode(launches: Sequence[tuple], inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor],
           scratch: Sequence[torch.Tensor]) -> list[int]:
    """The record ``replay.cpp`` parses: ``[n launches, n scratch, scratch bytes..., then per launch: function,
    grid x, y, z, block threads, shared bytes, n params, then per param: kind, index, value, 16-byte aligned]``.
    A pointer becomes (input, output or scratch buffer, index, byte offset); any other argument its bits."""
    regions = [(kind, index, t.data_ptr(), t.numel() * t.element_size())
               for kind, tensors in ((INPUT, inputs), (OUTPUT, outputs), (SCRATCH, scratch))
               for index, t in enumerate(tensors) if t.numel()]
    record = [len(launches), len(scratch), *(t.numel() * t.element_size() for t in scratch)]
    for compiled, grid_x, grid_y, grid_z, args, _ in launches:  # replayed on the caller's stream
        metadata = compiled.metadata
        for attribute in ("launch_pdl", "launch_cooperative_grid", "global_scratch_size", "profile_scratch_size",
                          "tensordesc_meta"):
            if getattr(metadata, attribute, None):
                raise NotReplayable(f"{compiled.name}: {attribute} is set (its launch needs more than "
                                    "cuLaunchKernel)")
        if getattr(metadata, "num_ctas", 1) != 1:
            raise NotReplayable(f"{compiled.name}: launches clusters of {metadata.num_ctas} CTAs")
        types = list(compiled.src.signature.values())
        if len(types) != len(args):
            raise NotReplayable(f"{compiled.name}: {len(args)} arguments for a signature of {len(types)}")
        params = []
        for position, (kind, arg) in enumerate(zip(types, args)):
            if kind == "constexpr":
                continue
            if not isinstance(kind, str) or kind.startswith("tensordesc") or kind == "nvTmaDesc":
                raise NotReplayable(f"{compiled.name}: argument {position} is a {kind}")
            if kind.startswith("*"):
                pointer = arg.data_ptr() if hasattr(arg, "data_ptr") else int(arg)
                params += [*_locate(pointer, regions, compiled.name, position), int(pointer % 16 == 0)]
                continue
            bits = scalar_bits(kind, arg)
            if kind in ("i64", "u64") and any(base <= bits < base + size for _, _, base, size in regions):
                raise NotReplayable(f"{compiled.name}: argument {position} passes an address as an integer")
            params += [0, 0, bits, 0]
        warp = getattr(metadata, "warp_size", 32)
        record += [compiled.function, grid_x, grid_y, grid_z, metadata.num_warps * warp, metadata.shared,
                   len(params) // 4, *params]
    return record


def _locate(pointer: int, regions: list[tuple[int, int, int, int]], name: str, position: int) -> tuple[int, int, int]:
    for kind, index, base, size in regions:
        if base <= pointer < base + size:
            return kind, index, pointer - base
    if pointer == 0:
        return 0, 0, 0
    raise NotReplayable(f"{name}: argument {position} points into memory the op does not own")


def scalar_bits(kind: str, value: Any) -> int:
    """A scalar argument as Triton's launcher passes it: its bits, in the low bytes of a signed 64-bit slot."""
    if kind in _INT_BITS:
        bits = int(value) & ((1 << _INT_BITS[kind]) - 1)
    elif kind == "bf16":  # Triton truncates a float32 to bfloat16
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0] >> 16
    elif kind in _FLOAT_FORMATS:
        pack, unpack = _FLOAT_FORMATS[kind]
        bits = struct.unpack(unpack, struct.pack(pack, float(value)))[0]
    else:
        raise NotReplayable(f"an argument of type {kind}")
    return bits - (1 << 64) if bits >= 1 << 63 else bits


def _same(launched: torch.Tensor, replayed: torch.Tensor) -> bool:
    if launched.is_floating_point():
        return torch.allclose(launched.float(), replayed.float(), rtol=1e-3, atol=1e-5, equal_nan=True)
    return torch.equal(launched, replayed)

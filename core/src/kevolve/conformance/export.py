"""``kevolve export --format backendbench DIR``: the passing conformance kernels in BackendBench's layout.

``DIR/<op>__<overload>/<op>__<overload>_implementation_v1.py`` defines ``<op>__<overload>_kernel_impl(*args,
**kwargs)`` for one ATen overload (e.g. ``relu__default``, ``_softmax__default``, ``convolution__default``).
Beside it, one standalone package per kernel (one per set of constant arguments seen in the samples), written by
the target's backend as ``OptimizeResult.save`` writes one: the kernel's source, its support files and a loader
that builds it on first use. The file carries :mod:`~kevolve.conformance.portable` (binding the ATen call's
arguments the way the conformance run did, allocating the outputs, loading the packages) and, per operator it
binds, the operator's host-side ``prepare`` step and ATen adapter (:mod:`~kevolve.conformance.bundle`), so it
runs with torch and the kernel's runtime only, no kevolve. Calls no kernel was generated for raise
``NotImplementedError``.

An overload is served by the operators whose kernels compute its calls: the operator of its name, and those
whose table maps the overload onto their own call (:attr:`~kevolve.conformance.spec.OpSpec.aten`, e.g. softmax
for ``aten._softmax``, relu6 for ``aten.hardtanh(x, 0, 6)``); the file tries them in that order. Only what is
verified is written: every ATen call an operator's OpInfo samples made to an overload it serves is replayed
through the file and must match PyTorch's answer to that call. Calls to the overload from the samples of every
other OpInfo op (``torch.norm``'s to ``linalg_vector_norm``: BackendBench tests an overload on all of them) get
kernels for their constants too, each judged by the replay of those calls. An operator is covered when every
computing ATen call of its samples (views, copies and allocations aside, and calls in another floating-point
dtype than the one it was judged in, after a ``dtype=`` conversion) is answered right by the export, through its
own kernel or another's (``outer`` by ``mul``'s); :attr:`Export.uncovered` says why the others are not.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kevolve.conformance import bundle, portable
from kevolve.conformance import samples as sm
from kevolve.conformance.table import OPS

#: ATen calls that move, view or allocate memory: no operator's kernel, and left to PyTorch by an export
DATA_MOVEMENT = {"aten.view.default", "aten.detach.default", "aten.alias.default", "aten._reshape_alias.default",
                 "aten.expand.default", "aten.reshape.default", "aten._unsafe_view.default",
                 "aten.unsqueeze.default", "aten.squeeze.dim",
                 "aten.squeeze_.dim", "aten.squeeze.dims", "aten.t.default", "aten.transpose.int",
                 "aten.permute.default", "aten.slice.Tensor", "aten.select.int", "aten.as_strided.default",
                 "aten._to_copy.default", "aten.clone.default", "aten.copy_.default", "aten.empty.memory_format",
                 "aten.new_empty.default", "aten.empty_like.default", "aten.ones.default", "aten.zeros.default",
                 "aten.full.default", "aten.scalar_tensor.default", "aten.lift_fresh.default"}


@dataclass
class Call:
    """One ATen call an OpInfo sample made: its arguments and PyTorch's answer, both copied when it ran."""

    func: str
    args: tuple
    kwargs: dict
    expected: Any


@dataclass
class Export:
    """What an export wrote: the overload directories, the operators each serves, and why any op is not covered."""

    written: list[str] = field(default_factory=list)
    served_by: dict[str, list[str]] = field(default_factory=dict)
    covered: list[str] = field(default_factory=list)
    uncovered: dict[str, str] = field(default_factory=dict)


def _copied(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return value


def _aten_calls(entry: Any, sample: Any, dtype: torch.dtype, funcs: set[str] | None = None) -> list[Call]:
    """The computing ATen calls of one sample (to ``funcs`` only, where given), each with copies of its arguments
    and answer; calls on floating-point tensors of another dtype than ``dtype`` (after a ``dtype=`` conversion)
    are not a kernel's of that dtype and are left out."""
    from torch.utils._python_dispatch import TorchDispatchMode

    calls: list[Call] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name, kwargs = str(func), dict(kwargs or {})
            kept = name not in DATA_MOVEMENT and (funcs is None or name in funcs)
            before = (_copied(args), _copied(kwargs)) if kept else None
            out = func(*args, **kwargs)
            if before is not None:
                calls.append(Call(name, *before, _copied(out)))
            return out

    with Recorder(), warnings.catch_warnings():  # OpInfo's samples run deprecated ops: not the export's warnings
        warnings.simplefilter("ignore")
        entry.op(sample.input, *sample.args, **sample.kwargs)
    return [c for c in calls if _floats_in(c.args, dtype)]


def _own(op: str, func: str) -> bool:
    """Whether ``func`` (``aten.<packet>.<overload>``) is the op's own ATen operator, or its in-place form."""
    base = op.removeprefix("nn.functional.").replace(".", "_")
    return func.split(".")[1] in (base, base + "_")


def _spec_for(op: str, func: str) -> Any:
    """The table entry that binds the op's calls of ``func``: a variant's where it maps ``func`` (interpolate's
    ``area`` for ``_adaptive_avg_pool3d``), else the op's."""
    spec = OPS[op]
    return next((v for v in (spec.variants or {}).values() if func in (v.aten or {})), spec)


def _serves(op: str, func: str) -> bool:
    return _own(op, func) or func in (_spec_for(op, func).aten or {})


def _portable_args(spec: Any) -> tuple[list[dict[str, Any]] | None, str]:
    """The op's signature as the data :mod:`~kevolve.conformance.portable` binds with, or None and why it cannot
    be bound without kevolve (literals Python cannot write back)."""
    from kevolve.conformance.samples import spec_arguments

    args = spec_arguments(spec)
    for described in args:
        try:
            if ast.literal_eval(repr(described)) != described:
                raise ValueError
        except (ValueError, SyntaxError):
            return None, f"argument {described['name']}'s default or accepted values are not Python literals"
    return args, ""


def _binding_source(spec: Any) -> str:
    """The op's ``prepare`` step as source defining ``PREPARE`` (None where it has none)."""
    return bundle.source_of(spec.prepare, "PREPARE") if spec.prepare is not None else "PREPARE = None\n"


_HEADER = """# kevolve conformance kernels for {aten}, target {target} ({language}), from the OpInfo ops {ops}.
#
# Generated by `kevolve export --format backendbench` from kernels that passed every OpInfo sample; each op's
# ATen calls were replayed through this file and matched PyTorch. Needs torch and the kernel's runtime, not
# kevolve: the code below binds the arguments on the host (each op's binding is tried in turn); the kernels are
# the standalone packages {folders} next to this file (each key below names one), built on first use.
"""

_BINDING = """
BINDING_{i} = dict(op={op!r}, layout={layout!r}, list_input={list_input!r}, args={args!r}, kernels={kernels},
                 code={code})
"""


def _literal(code: str) -> str:
    """``code`` as a Python string literal that reads as the code (a raw triple-quoted string where it can be)."""
    return f"r'''\n{code}'''" if "'''" not in code else repr(code)


def _write_file(folder: Path, name: str, func: str, target: str, bound: list[_Bound]) -> Path:
    """The overload's file, binding each op in turn, and beside it one standalone package per kernel (the
    backend's own writer)."""
    from kevolve.plugins import get_manager

    registered = get_manager().target(target)
    blocks, folders = [], []
    for i, b in enumerate(bound):
        kernels = {}
        for key, source in sorted(b.kernels.items()):
            package = folder / f"kernel_{len(folders)}"
            package.mkdir()
            registered.backend.write_standalone(registered.spec, source, b.language, package)
            kernels[key] = package.name
            folders.append(package.name)
        spec = _spec_for(b.op, func)
        adapter = (spec.aten or {}).get(func)
        code = ("from __future__ import annotations\n\n" + _binding_source(spec)
                + (bundle.source_of(adapter, "ADAPT") if adapter else "ADAPT = None\n"))
        table = "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in kernels.items()) + "}"
        blocks.append(_BINDING.format(i=i, op=b.op, layout=spec.layout, list_input=spec.list_input, args=b.args,
                                      kernels=table, code=_literal(code)))
    header = _HEADER.format(aten=func, target=target, language=bound[0].language,
                            ops=", ".join(b.op for b in bound), folders=", ".join(folders))
    bindings = ", ".join(f"BINDING_{i}" for i in range(len(bound)))
    footer = f"\n{name}_kernel_impl = make_impl({func!r}, [{bindings}], __file__)\n"
    path = folder / f"{name}_implementation_v1.py"
    path.write_text(header + "\n" + inspect.getsource(portable) + "".join(blocks) + footer)
    return path


@dataclass(eq=False)
class _Bound:
    """One op's binding of an overload while the export builds it: its kernels by key (the conformance run's, and
    those generated for the constants of other calls, ``generated``)."""

    op: str
    language: str
    args: list[dict]
    kernels: dict[str, str]
    generated: set[str] = field(default_factory=set)

    def binding(self, func: str) -> dict:
        """The binding as :func:`kevolve.conformance.portable.prepared_call` takes it, with kevolve's own
        functions (no file)."""
        spec = _spec_for(self.op, func)
        return {"op": self.op, "layout": spec.layout, "list_input": spec.list_input, "args": self.args,
                "kernels": self.kernels, "prepare": spec.prepare, "adapt": (spec.aten or {}).get(func)}


def _taker(call: Call, bound: list[_Bound]) -> tuple[_Bound, str, sm.Case] | None:
    """The first binding that computes ``call``, the kernel key it needs and the call as a conformance case;
    None when none does."""
    for b in bound:
        try:
            inputs, attrs, outputs, written = portable.prepared_call(b.binding(call.func), call.func,
                                                                     _copied(call.args), _copied(call.kwargs))
        except NotImplementedError:  # sm.Declined included
            continue
        spec = _spec_for(b.op, call.func)
        case = sm.Case("export", inputs, outputs[:written], attrs, spec=spec)
        return b, portable.kernel_key(inputs, attrs, spec.layout), case
    return None


def _generate(calls: list[Call], bound: list[_Bound], registered: Any) -> list[tuple[Call, _Bound, str]]:
    """Kernels for the constants of ``calls`` that no conformance kernel was generated for (``add(x, 1.0)`` made
    by softsign, ``pow(x, 2)`` made by square), written by the target's recipe as the conformance run writes
    them; (call, binding, key) of every call a generated kernel takes, whose replay then judges it."""
    from kevolve.conformance.kernel import kernel_spec
    from kevolve.conformance.run import synthesize

    taken = [(call, t) for call in calls if (t := _taker(call, bound)) is not None]
    for _, (b, key, case) in taken:
        if key in b.kernels:
            continue
        try:
            source, language, why = synthesize(registered, kernel_spec(case))
        except Exception:  # noqa: BLE001, S112 - an expression the table cannot build for these constants
            continue
        if not why and language == b.language:
            b.kernels[key] = source
            b.generated.add(key)
    return [(call, b, key) for call, (b, key, _) in taken if key in b.generated]


def _load(path: Path, name: str) -> Callable[..., Any]:
    module_spec = importlib.util.spec_from_file_location(f"kevolve_bb_{name}_{id(path)}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, f"{name}_kernel_impl")


def _verify(impl: Callable[..., Any], calls: list[Call]) -> str:
    """Replay ATen-level calls; '' when every output matches PyTorch's."""
    from kevolve.harness import checks
    from kevolve.problems.problem import Tolerance

    for call in calls:
        try:
            got = impl(*_copied(call.args), **_copied(call.kwargs))
        except NotImplementedError as exc:
            return f"declines a call: {exc}"
        expected = call.expected
        pairs = list(zip(got, expected)) if isinstance(expected, (tuple, list)) else [(got, expected)]
        if isinstance(expected, (tuple, list)) and (not isinstance(got, (tuple, list)) or len(got) != len(expected)):
            return f"returns {portable.describe(got)} where ATen returns {portable.describe(expected)}"
        for out, ref in pairs:
            if not isinstance(ref, torch.Tensor):
                continue
            bad = checks.compare(out, ref, Tolerance.for_dtype(ref.dtype), 0)
            if bad is not None:
                return f"differs from ATen: {bad['reason']}"
    return ""


def _unfit(op: str, result: Any) -> str:
    """Why the op's kernels cannot be exported ('' when they can)."""
    if not result.ok:
        return f"did not pass conformance ({result.passed}/{result.total})"
    if op not in OPS:
        return "no conformance table entry"
    args, why = _portable_args(OPS[op])
    if args is None:
        return why
    try:
        for spec in (OPS[op], *(OPS[op].variants or {}).values()):
            _binding_source(spec)
            for adapter in (spec.aten or {}).values():
                bundle.source_of(adapter, "ADAPT")
    except bundle.Unbundleable as exc:
        return f"its host-side steps cannot be written without kevolve: {exc}"
    return ""


def _calls_of(op: str, result: Any, db: list[Any]) -> list[Call]:
    """The computing ATen calls of every sample of the op's passing OpInfo entries, in the conformance dtype; calls
    on floating-point tensors of another dtype (after a ``dtype=`` conversion) are not the kernel's."""
    dtype = getattr(torch, result.dtype.split("+")[0])
    made: list[Call] = []
    for entry in (e for e in db if e.name == op and _entry_ok(e, result)):
        for sample in _samples(entry, dtype):
            made += _aten_calls(entry, sample, dtype)
    return made


def _samples(entry: Any, dtype: torch.dtype) -> list[Any]:
    """An OpInfo entry's samples in ``dtype``, drawn from the suite's seed (quietly: OpInfo's deprecation warnings
    are not the export's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.opinfo_samples(entry, dtype)


def _floats_in(value: Any, dtype: torch.dtype) -> bool:
    """Whether every floating-point tensor in ``value`` is of ``dtype``."""
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() or value.dtype == dtype
    if isinstance(value, (list, tuple)):
        return all(_floats_in(v, dtype) for v in value)
    return True


def _others_calls(db: list[Any], judged: set[str], funcs: set[str]) -> list[Call]:
    """The float32 calls to ``funcs`` made by the OpInfo samples of every op not among ``judged`` (e.g.
    ``torch.norm``'s to ``linalg_vector_norm``, ``adaptive_avg_pool3d``'s): BackendBench's own suite tests an
    overload on every OpInfo op that dispatches it, so the export judges (and builds kernels for) them too."""
    made: list[Call] = []
    for entry in db:
        if entry.name in judged or torch.float32 not in entry.supported_dtypes("cpu"):
            continue
        try:
            samples = _samples(entry, torch.float32)
        except Exception:  # noqa: BLE001, S112 - an OpInfo entry that draws no samples on this build
            continue
        for sample in samples:
            try:
                made += _aten_calls(entry, sample, torch.float32, funcs)
            except Exception:  # noqa: BLE001, S112 - a sample PyTorch itself rejects (error inputs)
                continue
    return made


def export_backendbench(directory: str | Path, target: str = "cpu", *, store: str | Path | None = None,
                        ops: list[str] | None = None) -> Export:
    """Write, for every ATen overload that passing conformance kernels of ``target`` serve, a verified file (and
    ``kevolve_export.json``: what was written, which ops each serves, which ops are covered, why not the rest)."""
    from kevolve.conformance.run import ResultCache
    from kevolve.plugins import get_manager

    registered = get_manager().target(target)
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    results = ResultCache.beside(store).latest(target)
    db = sm.op_db()
    export = Export()
    calls: dict[str, list[Call]] = {}
    for op, result in sorted(results.items()):
        if ops and op not in ops:
            continue
        why = _unfit(op, result)
        if why:
            export.uncovered[op] = why
        else:
            calls[op] = _calls_of(op, result, db)
    # every overload any op calls, served by every op whose kernel computes its calls
    serving = {func: [op for op in calls if _serves(op, func)]
               for func in dict.fromkeys(c.func for made in calls.values() for c in made)}
    impls: dict[str, Callable[..., Any]] = {}
    refused: dict[str, str] = {}
    served = {func for func, ops_here in serving.items() if ops_here}
    others = _others_calls(db, set(results), served) if not ops else []
    for func, ops_here in sorted(serving.items()):
        if not ops_here:
            continue
        ops_here.sort(key=lambda o: (not _own(o, func), o))
        bound = [_Bound(o, results[o].language, _portable_args(OPS[o])[0], dict(results[o].kernels)) for o in ops_here]
        everyone = [c for made in [*calls.values(), others] for c in made if c.func == func]
        impl = _written(root, func, target, bound, calls, _generate(everyone, bound, registered), refused)
        if impl is not None:
            impls[func] = impl
            export.written.append(_folder_name(func))
            export.served_by[_folder_name(func)] = [b.op for b in bound]
    for op, made in calls.items():
        why = _unanswered(op, made, impls, export.served_by, refused.get(op, ""))
        if why:
            export.uncovered[op] = why
        else:
            export.covered.append(op)
    (root / "kevolve_export.json").write_text(json.dumps(
        {"target": target, "written": export.written, "served_by": export.served_by, "covered": export.covered,
         "uncovered": export.uncovered}, indent=1) + "\n")
    return export


def _folder_name(func: str) -> str:
    _, packet, overload = func.split(".")
    return f"{packet}__{overload}"


def _written(root: Path, func: str, target: str, bound: list[_Bound], calls: dict[str, list[Call]],
             on_generated: list[tuple[Call, _Bound, str]], refused: dict[str, str]) -> Callable[..., Any] | None:
    """The overload's file, written and loaded once it answers right: every call of each bound op (an op whose
    calls it answers wrong is left out, with the reason in ``refused``) and every call of any op that a generated
    kernel takes (a generated kernel answering one wrong is left out). None when no op is left."""
    name = _folder_name(func)
    folder = root / name
    while bound:
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir()
        try:
            impl = _load(_write_file(folder, name, func, target, bound), name)
        except NotImplementedError as exc:  # the backend writes no standalone module for this language
            refused.update({b.op: f"{func}: no standalone module: {exc}" for b in bound})
            break
        wrong = {b.op: _verify(impl, [c for c in calls[b.op] if c.func == func]) for b in bound}
        if any(wrong.values()):
            refused.update({op: f"{func}: {why}" for op, why in wrong.items() if why})
            bound[:] = [b for b in bound if not wrong[b.op]]
            continue
        bad = {(b, key) for call, b, key in on_generated if b in bound and key in b.generated and _verify(impl, [call])}
        if not bad:
            return impl
        for b, key in bad:
            del b.kernels[key]
            b.generated.discard(key)
    if folder.exists():
        shutil.rmtree(folder)
    return None


def _unanswered(op: str, made: list[Call], impls: dict[str, Callable[..., Any]], served_by: dict[str, list[str]],
                refused: str) -> str:
    """Why the export does not answer every one of an op's calls ('' when it does). Its calls to an overload
    whose file binds it were replayed when the file was written; those to other ops' files are replayed here."""
    if not made:
        return "its samples make no computing ATen call"
    for func in dict.fromkeys(c.func for c in made):
        if func not in impls:
            return refused or f"calls {func}, which no exported kernel serves"
        if op in served_by[_folder_name(func)]:
            continue
        why = _verify(impls[func], [c for c in made if c.func == func])
        if why:
            return refused or f"{func}: {why}"
    return ""


def _entry_ok(entry: Any, result: Any) -> bool:
    label = entry.name + (f"[{entry.variant_test_name}]" if entry.variant_test_name else "")
    return label in result.entries

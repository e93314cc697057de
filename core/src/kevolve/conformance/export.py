"""``kevolve export --format backendbench DIR``: the passing conformance kernels in BackendBench's layout.

``DIR/<op>__<overload>/<op>__<overload>_implementation_v1.py`` defines ``<op>__<overload>_kernel_impl(*args,
**kwargs)`` for the ATen overload the OpInfo op dispatches (e.g. ``relu__default`` for ``nn.functional.relu``).
Each file holds the kernel sources as generated (one per set of constant arguments seen in the samples), so it
can be audited on its own; at run time :func:`make_impl` binds the ATen call's arguments the way the conformance
run did, builds the matching kernel with the target's toolchain (cached) and runs it. Arguments no kernel was
generated for raise ``NotImplementedError``.

Only what is verified is written: every OpInfo sample of the op is replayed through the exported function with
the arguments the ATen overload itself received, and must match PyTorch. An op that dispatches no single ATen op
of its own name (a composite, e.g. ``softsign``; a helper op, e.g. ``prelu`` -> ``_prelu_kernel``) is skipped with
the reason.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kevolve.conformance import samples as sm
from kevolve.conformance.table import OPS

_VIEW_OPS = {"aten.view.default", "aten.detach.default", "aten.alias.default", "aten._reshape_alias.default",
             "aten.expand.default", "aten.reshape.default"}


def _aten_calls(entry: Any, sample: Any) -> list[tuple[str, tuple, dict]]:
    from torch.utils._python_dispatch import TorchDispatchMode

    calls: list[tuple[str, tuple, dict]] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func) not in _VIEW_OPS:
                calls.append((str(func), args, dict(kwargs or {})))
            return func(*args, **(kwargs or {}))

    with Recorder():
        entry.op(sample.input, *sample.args, **sample.kwargs)
    return calls


def _aten_overload(name: str) -> Any:
    """``aten.sum.dim_IntList`` -> the OpOverload."""
    _, packet, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def _output_like(aten: str, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """Empty outputs shaped as the ATen overload returns them, from a run on meta tensors (shapes and dtypes
    only: nothing is computed)."""
    def meta(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return torch.empty_like(value, device="meta")
        if isinstance(value, (list, tuple)):
            return type(value)(meta(v) for v in value)
        return value

    shapes = _aten_overload(aten)(*meta(args), **{k: meta(v) for k, v in kwargs.items()})
    outs = list(shapes) if isinstance(shapes, (tuple, list)) else [shapes]
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
    return [torch.empty(o.shape, dtype=o.dtype, device=device) for o in outs]


def make_impl(op: str, target: str, sources: dict[str, str], language: str,
              aten: str) -> Callable[..., Any]:
    """The BackendBench entry point for ``op``'s kernels: ``impl(self, *args, **kwargs)`` of the ATen overload
    ``aten``."""
    spec = OPS[op]
    loaded: dict[str, Any] = {}

    def kernel_for(key: str) -> Any:
        if key not in loaded:
            from kevolve.harness.pipeline import HarnessConfig
            from kevolve.plugins import get_manager
            from kevolve.synthesis.base import Candidate

            registered = get_manager().target(target)
            source = sources[key]
            workdir = Path(HarnessConfig().workdir) / registered.spec.name / Candidate(source, language).source_hash
            build = registered.backend.toolchain(registered.spec, language).build(source, workdir, None)
            loaded[key] = registered.backend.runner(registered.spec).load(build)
        return loaded[key]

    def impl(*args: Any, **kwargs: Any) -> Any:
        from torch.testing._internal.opinfo.core import SampleInput

        if not args:
            raise NotImplementedError(f"{op}: no arguments")
        first = args[0]
        dtype = (first[0] if isinstance(first, (list, tuple)) and first else first).dtype
        # a Python number ATen wrapped into a 0-dim tensor of another dtype is a number again
        rest = [a.item() if isinstance(a, torch.Tensor) and a.dim() == 0 and a.dtype != dtype
                and a.dtype != torch.bool else a for a in args[1:]]
        try:
            inputs, attrs = sm.bind(spec, SampleInput(first, args=tuple(rest), kwargs=kwargs), dtype)
        except sm.Declined as why:
            raise NotImplementedError(f"{op}: {why}") from None
        outputs = _output_like(aten, args, kwargs)
        if spec.layout == "broadcast":
            rank = outputs[0].dim()
            inputs = [t.reshape([1] * (rank - t.dim()) + list(t.shape)) for t in inputs]
        key = sm.Case("", inputs, [], attrs, spec=spec).kernel_key()
        if key not in sources:
            raise NotImplementedError(f"{op}: no kernel was generated for {key}")
        kernel_for(key)(inputs, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    impl.__name__ = f"kevolve_{op.replace('.', '_')}"
    return impl


_TEMPLATE = '''"""kevolve conformance kernel for {aten} (OpInfo `{op}`), target {target} ({language}).

Generated by `kevolve export --format backendbench` on {samples} OpInfo samples that all passed (worst error
{worst} of the float32 tolerance). The kernel sources below are the whole computation; kevolve binds the
arguments on the host, builds the source matching the constant arguments with the target's toolchain, and runs it.
"""

from kevolve.conformance.export import make_impl

SOURCES = {sources}

{name}_kernel_impl = make_impl({op!r}, {target!r}, SOURCES, {language!r}, {aten!r})
'''


def _load(path: Path, name: str) -> Callable[..., Any]:
    module_spec = importlib.util.spec_from_file_location(f"kevolve_bb_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, f"{name}_kernel_impl")


def _verify(impl: Callable[..., Any], calls: list[tuple[tuple, dict, Any]]) -> str:
    """Replay the ATen-level calls; '' when every output matches PyTorch's."""
    from kevolve.harness import checks
    from kevolve.problems.problem import Tolerance

    for args, kwargs, expected in calls:
        try:
            got = impl(*args, **kwargs)
        except NotImplementedError as exc:
            return f"declines an ATen-level call: {exc}"
        pairs = list(zip(got, expected)) if isinstance(expected, (tuple, list)) else [(got, expected)]
        for out, ref in pairs:
            bad = checks.compare(out, ref, Tolerance.for_dtype(ref.dtype), 0)
            if bad is not None:
                return f"differs at the ATen level: {bad['reason']}"
    return ""


def export_backendbench(directory: str | Path, target: str = "cpu", *, store: str | Path | None = None,
                        ops: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """Write the passing kernels of the latest conformance run on ``target``; (directories written, op -> why
    skipped)."""
    from kevolve.conformance.run import ResultCache

    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    results = ResultCache.beside(store).latest(target)
    db = sm.op_db()
    written: list[str] = []
    skipped: dict[str, str] = {}
    for op, result in sorted(results.items()):
        if ops and op not in ops:
            continue
        if not result.ok:
            skipped[op] = f"did not pass ({result.passed}/{result.total})"
            continue
        if op not in OPS:
            skipped[op] = "no conformance table entry"
            continue
        entries = [e for e in db if e.name == op and _entry_ok(e, result)]
        by_overload: dict[str, list[tuple[tuple, dict, Any]]] = {}
        problem = ""
        for entry in entries:
            torch.manual_seed(sm.SEED)
            for sample in entry.sample_inputs("cpu", getattr(torch, result.dtype.split("+")[0])):
                calls = _aten_calls(entry, sample)
                if len(calls) != 1:
                    problem = f"dispatches {len(calls)} ATen ops ({', '.join(c[0] for c in calls[:4])})"
                    break
                func, args, kwargs = calls[0]
                by_overload.setdefault(func, []).append((args, kwargs, entry.op(sample.input, *sample.args,
                                                                                **sample.kwargs)))
            if problem:
                break
        base = op.removeprefix("nn.functional.")
        if not problem:
            others = [f for f in by_overload if f.split(".")[1] != base]
            if others:
                problem = f"dispatches {', '.join(others)}, not aten.{base}"
        if problem or not by_overload:
            skipped[op] = problem or "no samples"
            continue
        for func, calls in sorted(by_overload.items()):
            _, packet, overload = func.split(".")
            name = f"{packet}__{overload}"
            folder = root / name
            folder.mkdir(exist_ok=True)
            path = folder / f"{name}_implementation_v1.py"
            sources = "{\n" + "".join(f"    {json.dumps(k)}: r'''{v}''',\n" for k, v in result.kernels.items()) + "}"
            path.write_text(_TEMPLATE.format(aten=func, op=op, target=target, language=result.language,
                                             samples=result.total, worst=f"{result.worst:.3g}", sources=sources,
                                             name=name))
            why = _verify(_load(path, name), calls)
            if why:
                shutil.rmtree(folder)
                skipped[f"{op} ({func})"] = why
            else:
                written.append(name)
    return written, skipped


def _entry_ok(entry: Any, result: Any) -> bool:
    label = entry.name + (f"[{entry.variant_test_name}]" if entry.variant_test_name else "")
    return label in result.entries

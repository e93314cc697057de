"""``kevolve.optimize_model``: a whole model made faster by optimizing its hot regions and swapping in their ops.

The model is profiled by submodule (:mod:`kevolve.model.regions`); the largest regions that can be exported are
optimized one by one with the search (a region solved before comes from the store at once); a region's kernel is
swapped in only where its op, timed inside the model's forward in this process, beats the module it replaces;
then the whole model is checked against the original on fresh inputs, and a region whose swap makes the model
disagree is put back (if the model still disagrees, nothing is returned). Inference only: the model runs in
``torch.no_grad()`` and its weights are frozen into the kernels.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kevolve.errors import KevolveError
from kevolve.harness import checks
from kevolve.harness.pipeline import HarnessConfig
from kevolve.model import regions
from kevolve.model.regions import time_in_forward
from kevolve.model.report import ModelReport, RegionResult, time_interleaved
from kevolve.problems.module import draw_like
from kevolve.problems.problem import Tolerance

Progress = Callable[[dict[str, Any]], None]
#: compounding: a model's outputs pass through several kernels, each within its own tolerance
MODEL_TOLERANCE_SCALE = 4.0


class KernelRegion(torch.nn.Module):
    """A region of the model replaced by its kernel's op (``torch.ops.kevolve.<name>``), returning what the module
    returned (a tensor, a tuple or a list). The kernel was found for the shapes the region saw; a call with other
    shapes or dtypes (a jagged batch of another total) runs the original module instead."""

    def __init__(self, op: Callable, returns: str, module: torch.nn.Module, inputs: list[torch.Tensor]) -> None:
        super().__init__()
        self.op, self.returns, self.module = op, returns, module
        self.signature = [(tuple(t.shape), t.dtype) for t in inputs]

    def forward(self, *args: torch.Tensor) -> Any:
        if [(tuple(t.shape), t.dtype) for t in args] != self.signature:
            return self.module(*args)
        out = self.op(*args)
        if self.returns == "tensor":
            return out
        out = out if isinstance(out, tuple) else (out,)
        return list(out) if self.returns == "list" else out


class OptimizedModel(torch.nn.Module):
    """The model with its swapped regions, used like the original; ``report`` says what was done and measured.
    ``save(DIR)`` writes each region's kernel as a package; ``kevolve.load_model(model, DIR)`` puts them back into
    a freshly built model."""

    def __init__(self, model: torch.nn.Module, report: ModelReport, results: dict[str, Any]) -> None:
        super().__init__()
        self.model, self.report = model, report
        self._results = results  # region path -> OptimizeResult, for save()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            return self.model(*args, **kwargs)

    def save(self, directory: str | Path) -> Path:
        """Write ``kevolve_model.json`` (the regions, the report) and one package per swapped region into
        ``directory``; returned.

        :param directory: where to write (created); each package in it is ``region_<i>``
        """
        import json

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        manifest = []
        for index, row in enumerate(r for r in self.report.regions if r.swapped):
            package = f"region_{index}"
            self._results[row.path].save(directory / package)
            region = self.model.get_submodule(row.path) if row.path else self.model
            manifest.append({"path": row.path, "package": package, "returns": row.returns,
                             "inputs": [[list(shape), str(dtype).removeprefix("torch.")]
                                        for shape, dtype in region.signature]})
        (directory / "kevolve_model.json").write_text(json.dumps({"regions": manifest,
                                                                  "report": self.report.to_json()}, indent=2))
        return directory


def optimize_model(model: torch.nn.Module, example_inputs: list[torch.Tensor] | tuple[torch.Tensor, ...],
                   target: str = "cpu", budget: int = 8, *, time_budget_s: float | None = None,
                   store: Any = None, seed: int = 0, synthesizer: str = "template", max_regions: int = 4,
                   min_share: float = 0.05, fresh_inputs: Callable[[], list[torch.Tensor]] | None = None,
                   compare_compile: bool = True, harness: HarnessConfig | None = None,
                   progress: Progress | None = None) -> OptimizedModel:
    """Optimize ``model``'s hottest regions on ``target`` and return it with their kernels swapped in.

    :param model: the model, on the target's device, in the mode it will run in (``eval()``)
    :param example_inputs: one forward's positional tensors, on the same device
    :param target: a target name or alias (``kevolve targets``)
    :param budget: candidates evaluated per region
    :param time_budget_s: seconds for all regions' searches together (shared out region by region)
    :param store: the store (path, URL or ``Store``); solved regions come from it at once
    :param seed: the searches' seed
    :param synthesizer: who proposes candidates (as in :func:`kevolve.optimize`)
    :param max_regions: how many regions to optimize at most
    :param min_share: regions taking less of the forward's time than this are left alone
    :param fresh_inputs: draws a forward's inputs for the final check (several draws); None draws floats like the
        examples and keeps integer tensors' structure (:func:`kevolve.problems.module.draw_like`)
    :param compare_compile: time ``torch.compile`` of the model (and of the optimized model) in the report
    :param harness: how candidates are checked and timed; None for the defaults
    :param progress: called with one event dict per step (``kind``: profile, region, search events, check, time)
    """
    from kevolve import api
    from kevolve.plugins import get_manager
    from kevolve.problems.exported import ExportedProblem
    from kevolve.program.capture import CaptureError

    say = progress or (lambda event: None)
    registered = get_manager().usable_target(target)
    runner = registered.backend.runner(registered.spec)
    inputs = list(example_inputs)
    _check_devices(model, inputs, runner.device, registered.spec.name)
    say({"kind": "profile"})
    profiles = regions.profile(model, inputs, runner.synchronize)
    report = ModelReport(type(model).__name__, registered.spec.name)
    results: dict[str, Any] = {}
    swaps: dict[str, KernelRegion] = {}
    started, tried = time.monotonic(), 0
    parts = [e for e in profiles if e.path]
    if not any(not e.unfit and e.share >= min_share for e in parts):  # nothing inside: the model is the region
        parts = [e for e in parts if e.unfit] + [e for e in profiles if not e.path]
    for entry in parts:
        if tried >= max_regions:
            break
        if entry.share < min_share:
            continue
        if regions.overlaps(entry.path, list(swaps)):
            continue
        if entry.unfit:
            report.regions.append(RegionResult(entry.path, entry.share, "not a region", entry.unfit))
            continue
        tried += 1
        name = ".".join(p for p in (type(model).__name__, entry.path) if p)
        say({"kind": "region", "path": entry.path, "share": entry.share, "index": tried, "of": max_regions,
             "elapsed_s": time.monotonic() - started})
        try:
            problem = ExportedProblem.create(entry.module, entry.inputs, name)
        except CaptureError as exc:
            report.regions.append(RegionResult(entry.path, entry.share, "not captured", str(exc)))
            continue
        left = None if time_budget_s is None else max(1.0, time_budget_s - (time.monotonic() - started))
        try:
            result = api.optimize(problem, target, budget, seed, store, synthesizer=synthesizer,
                                  time_budget_s=None if left is None else left / (max_regions - tried + 1),
                                  harness=harness, progress=progress)
        except KevolveError as exc:  # e.g. no recipe covers one of its operators: the next region may do
            report.regions.append(RegionResult(entry.path, entry.share, "not optimized", str(exc)))
            continue
        row = RegionResult(entry.path, entry.share, "", session=result.session, returns=entry.returns)
        report.regions.append(row)
        if not result.correct:
            failures = "; ".join(sorted({f"{n.evaluation.status}: {n.evaluation.reason[:160]}" for n in result.nodes}))
            row.status, row.reason = "no correct kernel", f"the search found none ({result.stop_reason}; {failures})"
            continue
        op = result.as_torch_op()
        swap = KernelRegion(op, row.returns, entry.module, entry.inputs)
        before, after = time_in_forward(model, entry.path, {"module": entry.module, "kernel": swap}, inputs,
                                        runner.synchronize)
        row.before, row.after, row.op, row.searched = before, after, str(op), result.speedup
        if after.median >= before.median:
            row.status, row.reason = "kept", "its kernel's op is not faster than the module here"
            continue
        row.status, results[entry.path], swaps[entry.path] = "swapped", result, swap
    say({"kind": "check"})
    optimized = _checked(model, swaps, inputs, fresh_inputs, report)
    say({"kind": "time"})
    compiled = torch.compile(model) if compare_compile else None
    optimized = _paying(model, swaps, optimized, inputs, report, compiled, runner.synchronize)
    return OptimizedModel(optimized, report, results)


def load_model(model: torch.nn.Module, directory: str | Path) -> OptimizedModel:
    """``model`` (built afresh, as the one optimized was) with the region kernels saved by
    :meth:`OptimizedModel.save` swapped in.

    :param model: the model the kernels were found for, its weights as they were then
    :param directory: a directory written by :meth:`OptimizedModel.save`
    """
    import json

    from kevolve.delivery.load import load

    manifest_file = Path(directory) / "kevolve_model.json"
    if not manifest_file.is_file():
        raise KevolveError(f"{directory} holds no kevolve_model.json; write one with OptimizedModel.save(DIR)")
    manifest = json.loads(manifest_file.read_text())
    swaps = {}
    for region in manifest["regions"]:
        examples = [torch.empty(shape, dtype=getattr(torch, dtype), device="meta") for shape, dtype in region["inputs"]]
        original = model.get_submodule(region["path"]) if region["path"] else model
        swaps[region["path"]] = KernelRegion(load(Path(directory) / region["package"]), region["returns"], original,
                                             examples)
    return OptimizedModel(_swapped(model, swaps), ModelReport.from_json(manifest["report"]), {})


def _check_devices(model: torch.nn.Module, inputs: list[torch.Tensor], device: str, target: str) -> None:
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise KevolveError("example_inputs must be one forward's positional arguments, all tensors")
    kind = torch.device(device).type
    wrong = [t.device.type for t in [*inputs, *model.parameters(), *model.buffers()] if t.device.type != kind]
    if wrong:
        raise KevolveError(f"{target} runs on {kind} but the model or its inputs are on {wrong[0]}: move both there "
                           f"first (model.to('{kind}'), [t.to('{kind}') for t in inputs])")


def _swapped(model: torch.nn.Module, swaps: dict[str, torch.nn.Module]) -> torch.nn.Module:
    """A copy of ``model`` with each swapped path's submodule replaced (the original is left as it was)."""
    if "" in swaps:
        return swaps[""]
    copied = copy.deepcopy(model)
    for path, swap in swaps.items():
        parent, _, leaf = path.rpartition(".")
        setattr(copied.get_submodule(parent) if parent else copied, leaf, swap)
    return copied


def _checked(model: torch.nn.Module, swaps: dict[str, KernelRegion], inputs: list[torch.Tensor],
             fresh_inputs: Callable[[], list[torch.Tensor]] | None, report: ModelReport,
             draws: int = 3) -> torch.nn.Module:
    """The model with the swaps, checked against the original on the examples and fresh draws; a swap that makes
    it disagree is put back (found by trying each alone); if the model still disagrees, raise."""
    gen = torch.Generator().manual_seed(1)
    trials = [inputs] + [list(fresh_inputs()) if fresh_inputs else
                         [t.to(inputs[i].device) for i, t in enumerate(draw_like([x.cpu() for x in inputs], gen))]
                         for _ in range(draws)]

    def disagreement(candidate: torch.nn.Module) -> str:
        for trial in trials:
            with torch.no_grad():
                want = _flat(model(*trial))
                try:
                    got = _flat(candidate(*trial))
                except Exception as exc:  # a kernel that declines or fails on the model's own values
                    return f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            for index, (w, g) in enumerate(zip(want, got)):
                tol = Tolerance.for_dtype(w.dtype, MODEL_TOLERANCE_SCALE)
                bad = checks.compare(g, w, tol, 0)
                if bad is not None:
                    return f"output {index}: {bad['reason']}"
        return ""

    optimized = _swapped(model, swaps)
    if not swaps or not disagreement(optimized):
        return optimized
    for path in list(swaps):
        alone = disagreement(_swapped(model, {path: swaps[path]}))
        if alone:
            row = next(r for r in report.regions if r.path == path)
            row.status, row.reason = "put back", f"the model's outputs disagree with it swapped in: {alone}"
            del swaps[path]
    optimized = _swapped(model, swaps)
    why = disagreement(optimized) if swaps else ""
    if why:
        raise KevolveError(f"the optimized model's outputs disagree with the original's ({why}) although each "
                           f"region alone agrees; swapped regions: {', '.join(swaps)}. Nothing is returned")
    return optimized


def _flat(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _flat(out[k])]
    return []


def _paying(model: torch.nn.Module, swaps: dict[str, KernelRegion], optimized: torch.nn.Module,
            inputs: list[torch.Tensor], report: ModelReport, compiled: torch.nn.Module | None,
            sync: Callable[[], None]) -> torch.nn.Module:
    """The model keeping only swaps under which its whole forward is faster than the original's, and the report's
    end-to-end times of the model returned. A region faster alone can still slow the forward (the caches it
    leaves to the modules after it, a module that was cheaper beside its neighbours): while the forward with the
    swaps is not faster, the swap that gained least alone is put back, with both forwards' times as the reason,
    and the forwards are timed again. The times reported are the ones the decision was made on."""
    rows = {r.path: r for r in report.regions}
    while True:
        report.end_to_end = _end_to_end(model, optimized if swaps else None, inputs, compiled, sync)
        eager, kevolve = report.end_to_end["eager"], report.end_to_end.get("kevolve")
        if kevolve is None or kevolve.median < eager.median:
            return optimized
        path = max(swaps, key=lambda p: rows[p].after.median / rows[p].before.median)
        rows[path].status = "put back"
        rows[path].reason = (f"the forward was slower with it swapped in: {kevolve.median * 1e3:.3f} ms against "
                             f"{eager.median * 1e3:.3f} ms without kevolve's kernels")
        del swaps[path]
        optimized = _swapped(model, swaps)


def _end_to_end(model: torch.nn.Module, optimized: torch.nn.Module | None, inputs: list[torch.Tensor],
                compiled: torch.nn.Module | None, sync: Callable[[], None]) -> dict[str, Any]:
    """Seconds per forward: eager, and ``compiled`` (torch.compile of the model) where given; kevolve's model
    (alone, and compiled where ``compiled`` is given) where anything is swapped."""
    contenders: dict[str, Callable[[], Any]] = {"eager": lambda: model(*inputs)}
    if compiled is not None:
        contenders["torch.compile"] = lambda: compiled(*inputs)
    if optimized is not None:
        contenders["kevolve"] = lambda: optimized(*inputs)
        if compiled is not None:
            both = torch.compile(optimized)
            contenders["kevolve in torch.compile"] = lambda: both(*inputs)
    timings = time_interleaved(contenders, sync)
    return dict(zip(contenders, timings))

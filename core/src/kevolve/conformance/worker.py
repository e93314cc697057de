"""Inside the isolated worker: load an operator's kernels and run every sample through them.

The same rules as the search's correctness check: outputs poisoned before each call (alternating poisons),
inputs compared bit for bit afterwards, ATen ops dispatched while the kernel runs recorded (a kernel must not
hand its work to PyTorch), the reference compared under the dtype's tolerance policy with NaN/Inf positions
matched. Each sample's outcome: passed, failed (with the evidence) or declined (the kernel refused the
arguments).
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable
from typing import Any

import torch

from kevolve.harness import checks
from kevolve.harness.worker import call_watched, outside_launcher_reason, torch_calls_reason
from kevolve.problems.problem import Tolerance

PASSED, FAILED, DECLINED = "passed", "failed", "declined"


def error_ratio(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> float:
    """Worst |out - ref| / bound over the elements, with the bound of :func:`kevolve.harness.checks.compare`;
    a special value (NaN/Inf) in the wrong place counts as infinite. 0 for exact or non-float outputs."""
    if out.numel() == 0 or out.shape != ref.shape:
        return 0.0 if out.shape == ref.shape else math.inf
    if not ref.dtype.is_floating_point:
        return 0.0 if bool((out == ref).all()) else math.inf
    o, r = out.double(), ref.double()
    finite = torch.isfinite(r)
    finite_values = torch.where(finite, r, torch.zeros((), dtype=r.dtype))
    rms = float(torch.linalg.vector_norm(finite_values)) / max(1, int(finite.sum())) ** 0.5
    bound = tol.atol * max(1.0, rms) + tol.rtol * r.abs()
    err = (o - r).abs()
    special_ok = (o == r) | (torch.isnan(o) & torch.isnan(r))
    if bool((~finite & ~special_ok).any()) or bool((finite & ~torch.isfinite(o)).any()):
        return math.inf
    if not bool(finite.any()):
        return 0.0
    return float((err / bound.clamp_min(1e-30))[finite].max())


def run(task: dict[str, Any], report: Callable[[str], None]) -> dict[str, Any]:
    """Task: ``target``, ``bootstrap``, ``builds`` (kernel key -> BuildResult fields), ``cases`` (``kernel``,
    ``inputs``, ``expected``, ``alternatives``). Result: ``outcomes``, one per case."""
    from kevolve.backend.toolchain import BuildResult
    from kevolve.plugins import adopt_bootstrap

    manager = adopt_bootstrap(task["bootstrap"])
    registered = manager.target(task["target"])
    runner = registered.backend.runner(registered.spec)
    kernels: dict[str, Any] = {}
    load_errors: dict[str, str] = {}
    for key, build in task["builds"].items():
        report(f"load {key}")
        try:
            kernels[key] = runner.load(BuildResult(**build))
        except Exception as exc:  # noqa: BLE001
            load_errors[key] = f"could not load the kernel: {type(exc).__name__}: {exc}"
    outcomes = []
    for index, case in enumerate(task["cases"]):
        report(f"sample {index}")
        key = case["kernel"]
        if key not in kernels:
            outcomes.append({"status": FAILED, "reason": load_errors.get(key, "no kernel"), "worst": math.inf})
            continue
        outcomes.append(_run_case(kernels[key], runner, case, index))
    return {"status": "ok", "stage": "done", "outcomes": outcomes}


def _run_case(kernel: Callable, runner: Any, case: dict[str, Any], round_: int) -> dict[str, Any]:
    pristine = case["inputs"]
    inputs = [t.clone().to(runner.device) for t in pristine]
    expected = case["expected"]
    outputs = checks.allocate_poisoned(expected, round_, runner.device)
    try:
        torch_ops, calls = call_watched(kernel, runner, inputs, outputs)
    except Exception as exc:  # noqa: BLE001
        text = f"{type(exc).__name__}: {exc}"
        if "declined" in str(exc):
            return {"status": DECLINED, "reason": f"the kernel declined these arguments ({exc})", "worst": math.inf}
        return {"status": FAILED, "reason": f"kernel raised {text}", "worst": math.inf,
                "traceback": traceback.format_exc()[-2000:]}
    if calls:
        return {"status": FAILED, "reason": outside_launcher_reason(calls), "worst": math.inf}
    if torch_ops:
        return {"status": FAILED, "reason": torch_calls_reason(torch_ops), "worst": math.inf}
    outputs = [o.cpu() for o in outputs]
    modified = checks.changed_inputs(pristine, [t.cpu() for t in inputs], [])
    if modified:
        return {"status": FAILED, "reason": f"modifies its input: {modified}", "worst": math.inf}
    verdict = _judge(outputs, expected, round_)
    for reason, alternative in case.get("alternatives", ()) if verdict["status"] == FAILED else ():
        other = _judge(outputs, alternative, round_)
        if other["status"] == PASSED:
            return {**other, "reason": reason}
    return verdict


def _judge(outputs: list[torch.Tensor], expected: list[torch.Tensor], round_: int) -> dict[str, Any]:
    worst = 0.0
    for i, (out, ref) in enumerate(zip(outputs, expected)):
        tol = Tolerance.for_dtype(ref.dtype)
        bad = checks.compare(out, ref, tol, round_)
        ratio = error_ratio(out, ref, tol)
        worst = max(worst, ratio)
        if bad is not None:
            # the worst ratio over the elements where a ratio means something (compare's own puts inf at every
            # special value, matched or not)
            first = bad["first_mismatch"]
            where = f"first at {list(first['index'])}: got {first['got']!r}, expected {first['expected']!r}"
            return {"status": FAILED, "reason": f"output {i}: {bad['reason']} ({where})", "worst": max(worst, 1.0),
                    "evidence": {k: v for k, v in bad.items() if k != "reason"}}
    return {"status": PASSED, "reason": "", "worst": worst}

"""The program bench's problem set (bench/problems): every file is a KernelBench problem kevolve reads, its model
runs at its CPU-test sizes, its own sizes are consistent (checked on meta tensors, nothing allocated), and the set
holds enough of each kind. Counting and loading only: the bench's timings are bench/programs.py's business."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
import torch

from kevolve.problems.kernelbench import KernelBenchProblem

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
problem_set = pytest.importorskip("problem_set")
programs = pytest.importorskip("programs")

FILES = problem_set.problem_files()


def test_the_set_has_forty_of_each_kind():
    kinds = [problem_set.kind_of(p) for p in FILES]
    assert kinds.count("single") >= 40 and kinds.count("fused") >= 40, kinds
    assert len({p.stem for p in FILES}) == len(FILES), "two problems share a name"


def _constants(tree: ast.Module) -> dict[str, object]:
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.isupper() and node.targets[0].id != "SMALL"}


@pytest.mark.parametrize("path", FILES, ids=problem_set.label)
def test_problem_loads_and_runs_small(path, tmp_path):
    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree)
    assert doc and "\n" not in doc.strip(), "each problem says what it is in a one-line docstring"
    small = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SMALL")
    constants = _constants(tree)
    assert small and set(small) <= set(constants), f"SMALL names constants it lacks: {set(small) - set(constants)}"
    assert any(small[k] < constants[k] for k in small), "SMALL shrinks nothing"

    problem = KernelBenchProblem(problem_set.small_copy(path, tmp_path))
    problem.check_forward()
    outputs = problem.reference(problem.make_inputs(problem.dims, torch.Generator().manual_seed(1)))
    assert all(torch.isfinite(o.float()).all() for o in outputs if o.is_floating_point())

    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # the file's own sizes, on meta tensors
    with torch.device("meta"), torch.no_grad():
        full = namespace["Model"](*namespace["get_init_inputs"]()).eval()(*namespace["get_inputs"]())
    full = full if isinstance(full, (tuple, list)) else [full]
    assert sum(o.numel() for o in full) >= sum(o.numel() for o in outputs)


def _row(problem: str, correct: bool, eager: float | None = None, disturbed: bool = False) -> dict:
    speedup = {"median": eager, "low": eager, "high": eager} if eager else None
    return {"problem": problem, "kind": problem.split("/")[0], "correct": correct, "vs_eager": speedup,
            "vs_compile": None, "disturbed": disturbed, "seconds": 1.0}


def test_summary_counts_unrun_problems_as_not_correct_and_skips_disturbed_timings():
    rows = [_row("single/a", True, 2.0), _row("single/b", True, 0.5), _row("single/c", True, 100.0, disturbed=True),
            _row("fused/d", False)]
    s = programs.summary(rows, {"single": 4, "fused": 2})
    assert s["single"]["correct"] == 3 and s["single"]["problems"] == 4 and s["single"]["run"] == 3
    assert s["single"]["timed_vs_eager"] == 2 and s["single"]["faster_than_eager"] == 1
    assert s["single"]["geomean_vs_eager"] == pytest.approx(1.0)
    assert s["fused"]["correct"] == 0 and s["fused"]["geomean_vs_eager"] is None


def test_a_merged_re_run_replaces_the_tables_rows_of_its_problems(tmp_path):
    settings = {"target": "cpu", "budget": 1, "small": True, "baselines": ["eager"], "time_budget_s": None}
    table = tmp_path / "cpu" / "programs.json"
    table.parent.mkdir()
    table.write_text(json.dumps({**settings, "date": "d", "command": "first", "rows": [
        _row("single/relu", True, 0.05), _row("single/silu", True, 0.14)]}))
    rerun = tmp_path / "rerun.json"
    rerun.write_text(json.dumps({**settings, "date": "d", "command": "rerun", "rows": [_row("single/relu", True, 2.8)]}))
    argv = ["--target", "cpu", "--small", "--budget", "1", "--baselines", "eager", "--out", str(tmp_path),
            "--only", "single/relu,single/silu", "--merge", str(rerun)]
    assert programs.main(argv) == 0
    rows = {r["problem"]: r for r in json.loads(table.read_text())["rows"]}
    assert rows["single/relu"]["vs_eager"]["median"] == 2.8 and rows["single/silu"]["vs_eager"]["median"] == 0.14

"""The whole loop on the CPU target, through the CLI and the Python API."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import kevolve
from kevolve.errors import KernelFileError, StoreError
from kevolve.store import Store

KERNELS = Path(__file__).parent / "kernels"


def cli(*args, store):
    done = subprocess.run([sys.executable, "-m", "kevolve.cli", *args, "--store", str(store)], capture_output=True,
                          text=True, timeout=900, env={**os.environ})
    return done


def test_cli_optimize_json_then_store_hit_then_show(store_path):
    done = cli("optimize", "softmax", "--target", "cpu", "--shape", "rows=512", "--budget", "3", "--json", "--quiet",
               store=store_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for key in ("problem", "target", "correct", "speedup", "baselines", "best", "diagnosis", "session"):
        assert key in data
    assert data["correct"] is True and data["speedup"] > 0 and data["baselines"]["eager"] > 0
    assert data["best"]["language"] in ("cpp", "numba") and "kevolve_kernel" in data["best"]["source"]
    assert data["diagnosis"]["kind"] in ("memory-bound", "compute-bound", "occupancy-limited", "latency-bound")
    assert data["candidates"] == 3

    started = time.perf_counter()
    again = json.loads(cli("optimize", "softmax", "--target", "cpu", "--shape", "rows=512", "--json", "--quiet",
                           store=store_path).stdout)
    assert again["from_store"] is True and again["session"] == data["session"]
    assert time.perf_counter() - started < 30  # no search: only start-up

    shown = json.loads(cli("show", data["session"], "--json", store=store_path).stdout)
    assert shown["session"] == data["session"] and len(shown["tree"]) == 3


def test_cli_evaluate_reports_rejection(store_path):
    done = cli("evaluate", str(KERNELS / "zeros.cpp"), "--op", "softmax", "--target", "cpu", "--json",
               store=store_path)
    data = json.loads(done.stdout)
    assert done.returncode == 1 and data["correct"] is False and "differ" in data["rejected_reason"]
    done = cli("evaluate", str(KERNELS / "softmax_ok.cpp"), "--op", "softmax", "--target", "cpu", "--json",
               store=store_path)
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["correct"] is True and data["rejected_reason"] is None


def test_cli_evaluate_prints_a_compile_error_verbatim_with_the_command_that_repeats_it(tmp_path, store_path):
    broken = tmp_path / "broken.cpp"
    broken.write_text('#include "kevolve_kernel.h"\nKV_EXPORT int kevolve_kernel( { return 0; }\n')
    done = cli("evaluate", str(broken), "--op", "relu", "--target", "cpu", store=store_path)
    assert done.returncode == 1 and "compile_error" in done.stdout and "error:" in done.stdout
    repro = next(line for line in done.stdout.splitlines() if line.startswith("repro: "))
    again = subprocess.run(repro.removeprefix("repro: "), shell=True, capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "error:" in again.stderr


def test_summary_lists_each_recipe_and_the_saved_package_keeps_the_raw_launcher(tmp_path, fast_harness):
    result = kevolve.optimize("layer_norm", target="cpu", budget=2, harness=fast_harness)
    assert result.correct
    tried = {n.recipe for n in result.nodes}
    prefix = "recipes (times in the search): "
    line = next(line for line in result.summary().splitlines() if line.startswith(prefix))
    assert all(f"{recipe} x" in line for recipe in tried), line
    assert sum(int(part.split(" x")[1].split()[0]) for part in line.removeprefix(prefix).split(", ")) == 2
    fastest = min(n.evaluation.timings["kernel"].median for n in result.nodes if n.evaluation.correct)
    assert f"(fastest {fastest * 1e6:.1f} us)" in line

    module_dir = result.save(tmp_path / "ln_kernel")
    assert json.loads((module_dir / "kevolve.json").read_text())["problem"] == "layer_norm"
    sys.path.insert(0, str(tmp_path))
    try:
        standalone = importlib.import_module("ln_kernel")
        x, w, b = torch.randn(33, 1024), torch.randn(1024), torch.randn(1024)
        out = torch.empty(33, 1024)
        standalone.kernel([x, w, b], [out])
        torch.testing.assert_close(out, torch.nn.functional.layer_norm(x, (1024,), w, b, eps=1e-5),
                                   rtol=1e-4, atol=1e-4)
    finally:
        sys.path.remove(str(tmp_path))


def test_bad_kernel_files_get_clear_errors(tmp_path, fast_harness):
    broken = tmp_path / "broken.cpp"
    broken.write_text('#include "kevolve_kernel.h"\nKV_EXPORT int kevolve_kernel( { return 0; }\n')
    ev = kevolve.evaluate(broken, "relu", target="cpu", harness=fast_harness).evaluation
    assert ev.status == "compile_error" and "g++" in ev.evidence["repro"] and "error" in ev.evidence["log"]
    no_entry = tmp_path / "no_entry.cpp"
    no_entry.write_text("int helper() { return 1; }\n")
    ev = kevolve.evaluate(no_entry, "relu", target="cpu", harness=fast_harness).evaluation
    assert ev.status == "runtime_error" and "kevolve_kernel" in ev.reason
    with pytest.raises(KernelFileError, match="cannot read"):
        kevolve.evaluate(tmp_path / "missing.cpp", "relu", target="cpu")
    (tmp_path / "kernel.txt").write_text("x")
    with pytest.raises(KernelFileError, match="--language"):
        kevolve.evaluate(tmp_path / "kernel.txt", "relu", target="cpu")


def test_corrupt_store_is_reported_and_left_untouched(tmp_path):
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="left untouched"):
        Store(path)
    assert path.read_bytes() == before


def test_callable_problem_is_rebuilt_in_the_worker(fast_harness):
    import problem_fns

    problem = kevolve.problem_from_callable(problem_fns.twice_tanh, [torch.randn(64, 300)])
    ev = kevolve.evaluate(KERNELS / "twice_tanh.cpp", problem, target="cpu", harness=fast_harness).evaluation
    assert ev.status == "ok", ev.reason
    ev = kevolve.evaluate(KERNELS / "zeros.cpp", problem, target="cpu", harness=fast_harness).evaluation
    assert ev.status == "wrong_result"
    with pytest.raises(kevolve.KevolveError, match="importable"):
        kevolve.problem_from_callable(lambda x: x, [torch.randn(3)])

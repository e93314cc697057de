"""The GPU table's arithmetic, on hand-made runs: the committed H100 table is built by ``gpu_bench --combine``
from several re-timing runs, so which runs count for a row, the same-bytes copy column and the rows without a
torch.compile timing are checked here, where no GPU is needed; so are the rows a re-timing starts from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kevolve import diagnosis as d

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
gpu_bench = pytest.importorskip("gpu_bench")

INFO = {"target": "nvidia_h100", "gpu": "test GPU", "sms": 132, "memory_gib": 80.0, "python": "3.12",
        "torch": "2.11", "triton": "3.6", "cuda": "13.0", "date": "2026-11-25 09:00 UTC"}
COPY_BPS = 3e12


def timing(seconds: float) -> dict:
    return {"median": seconds, "p10": seconds * 0.98, "p90": seconds * 1.02}


def row(op: str, kernel_s: float, compile_s: float | None, copy_s: float, *, failed: bool = False) -> dict:
    nbytes = 64e6
    timings = {"kernel": timing(kernel_s), "eager": timing(2 * kernel_s), "copy": timing(copy_s)}
    speedups = {"eager": {"median": 2.0, "low": 1.9, "high": 2.1}}
    if compile_s is not None:
        timings["compile"] = timing(compile_s)
        speedups["compile"] = {"median": compile_s / kernel_s, "low": 0.9, "high": 1.1}
    made = {"op": op, "shape": {"n": 1 << 24}, "dtype": "float32", "timings": timings, "speedups": speedups,
            "metrics": {d.ACHIEVED_BANDWIDTH: nbytes / kernel_s}, "diagnosis_kind": d.MEMORY_BOUND,
            "recipe": "triton.pointwise", "parameters": {"BLOCK": 1024}, "bytes": nbytes, "timed": "quiet",
            "device_s": {"kernel": kernel_s * 0.9, "eager": kernel_s * 1.8}}
    if failed:
        made["retime_error"] = "RuntimeError: the re-timing failed"
    return made


def write_run(path: Path, rows: list[dict], date: str, *, before_layout: bool = False) -> Path:
    """A run directory as gpu_bench writes it (its table in ``nvidia_h100/kernels.json``), or as runs made before
    the per-target layout did (``nvidia_h100.json``): ``load_part`` reads both."""
    table = path / "nvidia_h100.json" if before_layout else path / "nvidia_h100" / "kernels.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps({"device": {**INFO, "date": date}, "copy_bytes_per_s": COPY_BPS, "rows": rows,
                                 "verdicts": []}))
    return path


def test_combine_takes_the_median_run_and_skips_failed_retimings(tmp_path, capsys):
    """A row whose re-timing failed carries the search's numbers, not that run's: it must not be one of the
    runs the median is taken over (here it would be the median and read 3.0x)."""
    runs = [write_run(tmp_path / "a", [row("exp", 100e-6, 100e-6, 98e-6), row("relu", 100e-6, 110e-6, 99e-6)],
                      "2026-11-25 09:00 UTC"),
            write_run(tmp_path / "b", [row("exp", 100e-6, 300e-6, 98e-6, failed=True),
                                       row("relu", 100e-6, 120e-6, 99e-6)], "2026-11-25 09:05 UTC", before_layout=True),
            write_run(tmp_path / "c", [row("exp", 100e-6, 104e-6, 98e-6), row("relu", 100e-6, 130e-6, 99e-6)],
                      "2026-11-25 09:10 UTC")]
    out = tmp_path / "out"
    out.mkdir()
    assert gpu_bench.combine(runs, out, "nvidia_h100") == 0
    capsys.readouterr()
    combined = json.loads((out / "nvidia_h100" / "kernels.json").read_text())
    by_op = {r["op"]: r for r in combined["rows"]}
    assert by_op["exp"]["runs_vs_compile"] == pytest.approx([1.0, 1.04])
    assert by_op["exp"]["speedups"]["compile"]["median"] == pytest.approx(1.0)  # lower middle of two runs
    assert by_op["relu"]["speedups"]["compile"]["median"] == pytest.approx(1.2)
    text = (out / "nvidia_h100" / "kernels.md").read_text()
    assert "- exp n=16777216 float32: 1.00x, 1.04x\n" in text


def test_same_bytes_copy_column_and_the_rows_at_copy_speed():
    """The column is the copy's time over the kernel's; a row is listed as torch.compile at copy speed only
    when compile is within 5% of that row's copy (or faster)."""
    rows = [row("exp", 100e-6, 102e-6, 98e-6), row("relu", 100e-6, 110e-6, 99e-6), row("gelu", 50e-6, 40e-6, 45e-6)]
    text = gpu_bench.table(rows, INFO, COPY_BPS, {})
    lines = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "| copy, same bytes |" in text
    assert " | 98% | " in lines["exp"] and " | 90% | " in lines["gelu"]
    listed = next(line for line in text.splitlines() if line.startswith("torch.compile within 5%"))
    assert "(2 rows;" in listed and "exp float32" in listed and "gelu float32" in listed
    assert "relu" not in listed


def test_rows_without_a_compile_timing_say_so_and_stay_out_of_its_mean():
    rows = [row("exp", 100e-6, 150e-6, 98e-6), row("relu", 100e-6, None, 99e-6)]
    text = gpu_bench.table(rows, INFO, COPY_BPS, {})
    relu = next(line for line in text.splitlines() if line.startswith("| relu |"))
    assert relu.count("not timed") == 2
    assert "Geometric mean over 2 rows: 1.50x vs torch.compile (over the 1 where it was timed), 2.00x vs eager." in text


def test_recipe_defaults_join_the_finalists_of_the_rows_they_support(monkeypatch):
    """An earlier run's rows re-timed against CUDA C++ defaults: the row keeps its own finalists, gains the
    default point of each named recipe that supports it, and a recipe the target does not offer is an error."""
    pytest.importorskip("cupy")
    from kevolve.plugins import get_manager

    registered = get_manager().target("nvidia_h100")
    monkeypatch.setattr(type(registered.backend), "gpu_here", lambda self: "sm_90")  # CUDA recipes need a GPU
    searched = {"recipe": "triton.row_softmax", "parameters": {"ROWS": 1}, "source": "searched"}
    rows = [{"op": "softmax", "shape": {"rows": 64, "cols": 4096}, "dtype": "bfloat16", **searched},
            {"op": "relu", "shape": {"n": 4096}, "dtype": "float32", **searched, "finalists": [searched] * 2}]
    gpu_bench.add_finalists(rows, "nvidia_h100", ["cuda.rows"])
    assert rows[0]["finalists"][0] == searched and len(rows[0]["finalists"]) == 2
    added = rows[0]["finalists"][1]
    assert added["recipe"] == "cuda.rows" and added["parameters"]["VEC"] == 8 and "kv_softmax" in added["source"]
    assert gpu_bench.default_rows([["softmax", {"rows": 64, "cols": 4096}, "bfloat16", "cuda.rows"]],
                                  "nvidia_h100")[0]["finalists"] == [added]
    assert rows[1]["finalists"] == [searched] * 2  # no row recipe for relu
    with pytest.raises(SystemExit, match="no recipe cuda.nothing on nvidia_h100"):
        gpu_bench.add_finalists(rows, "nvidia_h100", ["cuda.nothing"])


def test_a_committed_table_is_re_timed_from_its_file_with_sources_rendered_again(tmp_path):
    """``--retime-from FILE.json#TABLE`` starts from one table of a file that keeps several, and a finalist that
    a --combine kept without its source gets today's rendering of its recipe and parameters."""
    import kevolve

    searched = {"recipe": "triton.row_norm", "parameters": {"ROWS": 8, "MAX_BLOCK": 64, "TILE": 128, "PROGRAMS": 0,
                                                           "num_warps": 2}}
    table = {"rows": [{"op": "rms_norm", "shape": {"rows": 4096, "cols": 64}, "dtype": "float32",
                       "finalists": [dict(searched)]}]}
    joined = tmp_path / "joined.json"
    joined.write_text(json.dumps({"narrow": table, "other": {"rows": []}}))
    assert gpu_bench.load_part(Path(f"{joined}#narrow"), "nvidia_h100") == table
    assert gpu_bench.load_part(joined, "nvidia_h100")["other"] == {"rows": []}
    with pytest.raises(SystemExit, match="has no table 'wide'; it has: narrow, other"):
        gpu_bench.load_part(Path(f"{joined}#wide"), "nvidia_h100")
    problem = kevolve.api.resolve_problem("rms_norm", {"rows": 4096, "cols": 64}, "float32", None)
    finalist = gpu_bench.with_source(dict(searched), problem, "nvidia_h100")
    assert "ROWS=8" in finalist["source"] and "@triton.jit" in finalist["source"]
    kept = {**searched, "source": "as searched"}
    assert gpu_bench.with_source(kept, problem, "nvidia_h100")["source"] == "as searched"
    with pytest.raises(SystemExit, match="no recipe triton.nothing for"):
        gpu_bench.with_source({"recipe": "triton.nothing", "parameters": {}}, problem, "nvidia_h100")


def test_the_same_bytes_copy_is_whole_granules_of_half_the_rows_bytes():
    """A copy of a length that is not a multiple of 4 KiB took a slower path on the H100 (up to 40%), which made
    rows of such byte counts look faster than a copy of their bytes: the copy rounds half the bytes up."""
    granule = gpu_bench.COPY_GRANULE
    assert gpu_bench.copy_length(33980136) == 16990208 == 4148 * granule  # keyed_feature_hash at 2M ids
    assert gpu_bench.copy_length(2 * granule * 5) == granule * 5  # whole granules stay as they are
    assert gpu_bench.copy_length(2 * granule * 5 + 2) == granule * 6
    assert gpu_bench.copy_length(1) == 1


def test_traffic_table_gives_each_kernel_its_dram_share_and_says_what_failed():
    """The traffic phase's table: DRAM share of peak and counted bytes over duration, for the row's kernel and
    torch.compile's; a profile that failed says so; rows that were not profiled are left out."""
    rows = [row("exp", 100e-6, 100e-6, 98e-6), row("relu", 100e-6, 100e-6, 99e-6), row("gelu", 1e-4, 1e-4, 1e-4)]
    rows[1]["shape"] = {"n": 1 << 20}
    profiled = lambda s, frac, nbytes: {"duration_s": s, "dram_fraction": frac, "dram_bytes": nbytes}  # noqa: E731
    measured = {"copy": profiled(750e-6, 0.92, 2.0 * 2**30),
                json.dumps(gpu_bench._case(rows[0])): {**profiled(100e-6, 0.9, 280e6),
                                                       "compile": profiled(104e-6, 0.87, 280e6)},
                json.dumps(gpu_bench._case(rows[1])): {**profiled(10e-6, 0.4, 16e6),
                                                       "compile": {"error": "ncu failed, roofline only: timeout"}}}
    text = gpu_bench.traffic_table(measured, rows, INFO)
    assert "Copy kernel, 1 GiB read and written: 750.0 us, DRAM 92%, 2.86 TB/s." in text
    lines = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert lines["exp"].endswith("| 100.0 us | 90%, 2.80 TB/s | 104.0 us | 87%, 2.69 TB/s |")
    assert lines["relu"].endswith("| 10.0 us | 40%, 1.60 TB/s | failed | ncu failed, roofline only: timeout |")
    assert "gelu" not in lines


def test_the_compile_yardstick_file_runs_torch_compile_of_the_rows_op(tmp_path):
    """The file ncu profiles for torch.compile's kernels: the row's op under torch.compile, called as a kernel
    file is (inputs, outputs), run here on the CPU."""
    import torch
    from torch._dynamo.utils import counters

    import kevolve
    from kevolve.backend.runner import load_kernel_module

    path = tmp_path / "kernel.py"
    path.write_text(gpu_bench.COMPILE_FILE.format(op="relu", shape={"n": 256}, dtype="float32"))
    _, kernel = load_kernel_module(str(path))
    problem = kevolve.api.resolve_problem("relu", {"n": 256}, "float32", None)
    inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    counters.clear()
    kernel(inputs, [torch.empty(256)])
    assert counters["stats"]["unique_graphs"] == 1


def test_merge_with_keep_cases_replaces_rows_and_keeps_each_rows_own_copy(tmp_path, capsys):
    """The committed table is a combined re-timing with one row replaced by a later re-search that also searched
    other cases: only the shared case is replaced, the combined rows keep the copy bandwidth of the run they came
    from (not the last run's), and every run's ratio stays listed."""
    slow_copy = {**row("exp", 100e-6, 104e-6, 98e-6), "copy_bytes_per_s": 2e12, "runs_vs_compile": [1.04, 1.0]}
    combined = write_run(tmp_path / "combined", [slow_copy, row("relu", 100e-6, 110e-6, 99e-6)],
                         "2026-11-25 09:00 UTC")
    research = write_run(tmp_path / "research", [row("relu", 80e-6, 110e-6, 79e-6), row("gelu", 1e-4, 1e-4, 1e-4)],
                         "2026-11-25 10:00 UTC")
    out = tmp_path / "out"
    out.mkdir()
    assert gpu_bench.merge([combined, research], out, "nvidia_h100", keep_cases=True) == 0
    capsys.readouterr()
    merged = {r["op"]: r for r in json.loads((out / "nvidia_h100" / "kernels.json").read_text())["rows"]}
    assert sorted(merged) == ["exp", "relu"]
    assert merged["relu"]["timings"]["kernel"]["median"] == pytest.approx(80e-6)
    assert merged["exp"]["copy_bytes_per_s"] == 2e12 and merged["relu"]["copy_bytes_per_s"] == COPY_BPS
    text = (out / "nvidia_h100" / "kernels.md").read_text()
    assert "- exp n=16777216 float32: 1.04x, 1.00x\n" in text
    assert "Command: `python bench/gpu_bench.py --merge " in text and "--keep-cases`" in text
    assert "2026-11-25 10:00 UTC: 1 row, copy" in text and "2026-11-25 09:00 UTC: 2 rows, copy" in text
    assert gpu_bench.merge([combined, research], out, "nvidia_h100") == 0
    capsys.readouterr()
    assert "gelu" in {r["op"] for r in json.loads((out / "nvidia_h100" / "kernels.json").read_text())["rows"]}


def test_rows_just_under_the_bandwidth_goal_do_not_round_up_to_it():
    """64e6 bytes at 80.2 us against a 1 TB/s copy is 79.8%: listed as below, and not as 80%, beside what the
    row's same-bytes copy reached (whole 4 KiB granules of 32e6 bytes, read and written, in 79 us: 81.0%)."""
    text = gpu_bench.table([row("exp", 80.2e-6, 90e-6, 79e-6)], INFO, 1e12, {})
    assert ("at >= 80% of the copy bandwidth, per call (`BW`): 0 of 1; below: exp float32 16777216 (79.8%; "
            "a `copy_` of its bytes 81.0%).") in text


def test_finalists_with_the_same_parameters_keep_their_own_times():
    """--add-finalists can add a point a search already timed, rendered by today's recipe: both stay named."""
    finalists = [{"parameters": {"BLOCK": 512}}, {"parameters": {"BLOCK": 1024}}, {"parameters": {"BLOCK": 512}}]
    assert gpu_bench.finalist_keys(finalists) == ["{'BLOCK': 512} (finalist 0)", "{'BLOCK': 1024}",
                                                  "{'BLOCK': 512} (finalist 2)"]


@pytest.mark.parametrize("op,dims", [("jagged_truncate", {"batch": 64, "max_len": 40}),
                                     ("keyed_feature_hash", {"features": 4, "batch": 8, "pool": 5})])
def test_each_graph_set_has_outputs_sized_for_its_own_inputs(op, dims):
    """A jagged op's output length follows its inputs' values: every set's outputs are what the reference makes
    of that set's inputs (outputs copied from the first set's shapes let a kernel write past their end)."""
    import torch
    from kevolve.api import resolve_problem

    problem = resolve_problem(op, dims, "float32" if op == "jagged_truncate" else "int64", None)
    gen = torch.Generator().manual_seed(3)
    inputs = problem.make_inputs(problem.dims, gen)
    in_sets, out_sets = gpu_bench.graph_sets(problem, inputs, gen, 4, device="cpu")
    assert in_sets[0] is inputs and len(in_sets) == len(out_sets) == 4
    shapes = [[tuple(o.shape) for o in outs] for outs in out_sets]
    assert shapes == [[tuple(r.shape) for r in problem.reference(each)] for each in in_sets]
    assert len({s[0] for s in shapes}) > 1  # the draws differ in length, so the first set's sizes would not do

"""One candidate, one file, correct offline: every program under problems/ optimized on cpu by the template
synthesizer alone; the issue's command; a kernel file that asks the harness for scratch."""

from __future__ import annotations

import pytest
from program_problems import PROBLEMS

import kevolve
from kevolve.cli import main

PROGRAMS = sorted(p.stem for p in PROBLEMS.glob("*.py") if p.stem != "data_dependent")
#: the programs one catalog op computes: its recipe is tried beside the program (tests/program/test_catalog_twin.py)
TWINS = {"relu_model": "cpp.pointwise"}


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_is_correct_offline_on_cpu(name, check_only):
    result = kevolve.optimize(str(PROBLEMS / f"{name}.py"), target="cpu", budget=2, harness=check_only)
    evaluations = [n.evaluation for n in result.nodes]
    assert evaluations and all(e.correct for e in evaluations), [(e.status, e.reason[:300]) for e in evaluations]
    programs = [n for n in result.nodes if n.recipe == "program.cpp"]
    assert programs and {n.recipe for n in result.nodes} <= {"program.cpp", TWINS.get(name)}, \
        [n.recipe for n in result.nodes]
    code = [line for line in programs[0].source.splitlines() if not line.lstrip().startswith("//")]
    assert "namespace kv_step0" in "\n".join(code) and not any("torch" in line for line in code)


def test_the_issue_command_finds_a_correct_kernel(capsys, tmp_path):
    (tmp_path / "relu_model.py").write_text((PROBLEMS / "relu_model.py").read_text())
    code = main(["optimize", str(tmp_path / "relu_model.py"), "--target", "cpu", "--budget", "2", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert '"correct": true' in out and "program.cpp" in out


SCRATCH_KERNEL = r"""
#include "kevolve_kernel.h"
KV_EXPORT int64_t kevolve_scratch_bytes(const kv_tensor* in, int64_t n_in, const kv_tensor* out, int64_t n_out) {
    return kv_numel(&in[0]) * (int64_t)sizeof(float);
}
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const kv_tensor* scratch = &out[n_out];
    const int64_t n = kv_numel(&in[0]);
    if (scratch->dtype != KV_UINT8 || scratch->shape[0] != n * (int64_t)sizeof(float)) return 9;
    float* tmp = (float*)scratch->data;
    const float* x = (const float*)in[0].data;
    float* o = (float*)out[0].data;
    for (int64_t i = 0; i < n; ++i) tmp[i] = x[i] > 0.0f ? x[i] : 0.0f;
    for (int64_t i = 0; i < n; ++i) o[i] = tmp[i];
    return 0;
}
"""


def test_a_kernel_gets_the_scratch_it_asks_for(check_only):
    from kevolve.harness.pipeline import evaluate_candidate
    from kevolve.problems.kernelbench import KernelBenchProblem
    from kevolve.synthesis.base import Candidate

    problem = KernelBenchProblem(PROBLEMS / "relu_model.py")
    evaluation = evaluate_candidate(Candidate(SCRATCH_KERNEL, "cpp"), problem, "cpu", check_only)
    assert evaluation.correct, evaluation.reason
    wrong_size = SCRATCH_KERNEL.replace("return kv_numel(&in[0]) * (int64_t)sizeof(float);", "return 8;")
    evaluation = evaluate_candidate(Candidate(wrong_size, "cpp"), problem, "cpu", check_only)
    assert not evaluation.correct and "returned 9" in evaluation.reason


def test_a_program_with_scratch_runs_as_a_torch_op_through_the_native_path(fast_harness):
    import torch

    from kevolve.problems.kernelbench import KernelBenchProblem

    path = PROBLEMS / "linear_gelu_layernorm.py"
    result = kevolve.optimize(str(path), target="cpu", budget=1, harness=fast_harness)
    assert result.correct and "kevolve_scratch_bytes" in result.source
    op = result.as_torch_op()
    assert "per call: native" in op.__doc__  # kv_launch.cpp asked the kernel for scratch and allocated it
    x = torch.randn(24, 48)
    torch.testing.assert_close(op(x), KernelBenchProblem(path).model(x), rtol=1e-4, atol=1e-5)


def test_a_kernel_loading_through_an_index_is_correct_and_fails_on_one_out_of_its_table(fast_harness):
    """Salts gathered from a small table and mixed into the ids: with the gather loaded through its index (the
    default), the gather's kernel is gone from the file, the op matches eager, and a call whose index falls
    outside the table fails, as eager's index_select raises."""
    import torch
    from kevolve.problems.kernelbench import KernelBenchProblem

    path = PROBLEMS / "salted_ids.py"
    result = kevolve.optimize(str(path), target="cpu", budget=1, harness=fast_harness)
    node = result.nodes[0]
    assert node.evaluation.correct and node.parameters.get("gather.index_select") is True, node.evaluation.reason
    assert "kv_gathered(" in node.source and "index_select:" not in node.source
    op, model = result.as_torch_op(), KernelBenchProblem(path).model
    ids, values = torch.randint(0, 7, (1000,)), torch.randint(0, 1 << 40, (1000,))
    torch.testing.assert_close(op(ids, values), model(ids, values))
    ids[500] = 7
    with pytest.raises(IndexError):
        model(ids, values)
    with pytest.raises(Exception, match="2"):
        op(ids, values)

"""A Triton kernel's op replays its launches from C once a signature is learnt (kevolve_triton/replay.cpp): no
Triton launch from Python, right answers on fresh inputs, a new shape learnt in turn, misaligned inputs and
value-sized outputs handled by the file's own launcher, and the replayed op captured in a CUDA graph."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("kevolve_nvidia")

from kevolve_triton.replay import python_launches
from triton_cases import default_op

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")


def fresh(problem, dims, seed):
    return [t.cuda() for t in problem.make_inputs(dims, torch.Generator().manual_seed(seed))]


def check(problem, op, inputs):
    tol = problem.tolerance(problem.dtype)
    got = op(*inputs)
    for g, e in zip(got if isinstance(got, tuple) else (got,), problem.reference(inputs)):
        torch.testing.assert_close(g, e, rtol=tol.rtol, atol=tol.atol)


def test_a_learnt_signature_is_replayed_without_python_and_stays_right():
    problem, op = default_op("layer_norm", {"rows": 256, "cols": 1024}, "bfloat16")
    assert "replayed with cuLaunchKernel" in op.__doc__, op.__doc__
    for seed in range(3):  # learnt: compiled, then recorded twice and checked
        check(problem, op, fresh(problem, problem.dims, seed))
    with python_launches() as counted:
        for seed in range(3, 8):
            check(problem, op, fresh(problem, problem.dims, seed))
    assert counted[0] == 0
    other = {"rows": 96, "cols": 1024}  # a new signature is learnt, then replayed too
    for seed in range(3):
        check(problem, op, fresh(problem, other, seed))
    with python_launches() as counted:
        check(problem, op, fresh(problem, other, 9))
    assert counted[0] == 0


def test_misaligned_inputs_go_to_the_files_launcher_and_stay_right():
    problem, op = default_op("relu", {"n": 4096}, "float32")
    for seed in range(3):
        check(problem, op, fresh(problem, problem.dims, seed))
    (x,) = fresh(problem, {"n": 4097}, 5)
    shifted = x[1:]  # 4 bytes past an aligned allocation: the compiled code assumed 16-byte alignment
    with python_launches() as counted:
        check(problem, op, [shifted])
    assert counted[0] >= 1


def test_the_replayed_op_is_captured_in_a_cuda_graph():
    problem, op = default_op("softmax", {"rows": 64, "cols": 512}, "float32")
    (x,) = fresh(problem, problem.dims, 0)
    for _ in range(3):
        op(x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = op(x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, dim=-1))


def test_outputs_sized_by_values_stay_on_the_files_launcher_and_right():
    """Output sizes that depend on input values may change the launches too: such an op never replays."""
    problem, op = default_op("jagged_truncate", {"batch": 256, "max_len": 64}, "float32")
    assert "the kernel file's launcher every call" in op.__doc__, op.__doc__
    inputs = fresh(problem, problem.dims, 0)
    for _ in range(3):
        check(problem, op, inputs)
    with python_launches() as counted:
        check(problem, op, inputs)
    assert counted[0] >= 1
    for seed in range(1, 4):
        check(problem, op, fresh(problem, problem.dims, seed))

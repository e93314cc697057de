"""A Triton kernel's op on a GPU: captured in a CUDA graph and under torch.compile's "reduce-overhead" mode where it
can be; an op whose output size is read from the device says it cannot, and still runs compiled."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("kevolve_nvidia")

from triton_cases import default_op

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")


def test_a_capturable_op_replays_from_a_cuda_graph_and_under_reduce_overhead():
    problem, op = default_op("layer_norm", {"rows": 512, "cols": 1024}, "bfloat16")
    assert "CUDA graphs: capturable" in op.__doc__, op.__doc__
    x, w, b = (t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0)))
    op(x, w, b)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = op(x, w, b)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    tol = problem.tolerance(problem.dtype)
    torch.testing.assert_close(y, problem.reference([x, w, b])[0], rtol=tol.rtol, atol=tol.atol)
    compiled = torch.compile(lambda x, w, b: op(x, w, b) * 2, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):  # recorded, then replayed
        out = compiled(x, w, b)
    torch.testing.assert_close(out, problem.reference([x, w, b])[0] * 2, rtol=2 * tol.rtol, atol=2 * tol.atol)


def test_an_op_sized_by_the_device_says_it_cannot_be_captured_and_runs_compiled():
    problem, op = default_op("jagged_truncate", {"batch": 256, "max_len": 64}, "float32")
    assert "CUDA graphs: cannot be captured: its output sizes depend on input values" in op.__doc__
    values, offsets = (t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(1)))
    expected = problem.reference([values, offsets])
    compiled = torch.compile(lambda v, o: op(v, o), mode="reduce-overhead")
    for _ in range(3):
        got = compiled(values, offsets)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)

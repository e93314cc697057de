"""A search's kernel as a real PyTorch operator on the CPU target: torch.compile(fullgraph=True), torch.export and
opcheck trace it; a call runs no reference and, for a shape seen before, no Python; backward refuses; the saved
package installs into a fresh virtualenv without kevolve and registers the same op."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
import torch

import kevolve
from kevolve.delivery import runtime
from kevolve.harness.pipeline import HarnessConfig


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """One short search per op: layer_norm (shapes follow from the inputs' sizes) and jagged_truncate (the
    output's size is read from the offsets on every call)."""
    tmp = tmp_path_factory.mktemp("torch-op")
    harness = HarnessConfig(timeout_s=120, repeats=3, sample_s=0.0005, workdir=str(tmp / "builds"))
    store = str(tmp / "store.sqlite")
    found = {op: kevolve.optimize(op, target="cpu", budget=1, harness=harness, store=store, dims=dims)
             for op, dims in (("layer_norm", {"rows": 64, "cols": 256}), ("jagged_truncate", {"batch": 64}))}
    assert all(r.correct for r in found.values()), {op: r.summary() for op, r in found.items()}
    return found, store


def layer_norm_args(rows: int = 33, cols: int = 256):
    gen = torch.Generator().manual_seed(rows)
    return torch.randn(rows, cols, generator=gen), torch.randn(cols, generator=gen), torch.randn(cols, generator=gen)


def test_the_op_is_registered_and_traced_by_compile_export_and_opcheck(results):
    op = results[0]["layer_norm"].as_torch_op()
    assert isinstance(op, torch._ops.OpOverload) and op.namespace == "kevolve"
    assert getattr(torch.ops.kevolve, op._opname).default is op
    x, w, b = layer_norm_args()
    expected = torch.nn.functional.layer_norm(x, (256,), w, b, eps=1e-5)
    torch.testing.assert_close(op(x, w, b), expected, rtol=1e-4, atol=1e-4)

    compiled = torch.compile(lambda x, w, b: op(x, w, b).relu() * 2, fullgraph=True, dynamic=True)
    for rows in (33, 70):  # a second batch size goes through the symbolic shape function, not a recompile
        x, w, b = layer_norm_args(rows)
        torch.testing.assert_close(compiled(x, w, b), op(x, w, b).relu() * 2)
    torch.library.opcheck(op, layer_norm_args())

    class Model(torch.nn.Module):
        def forward(self, x, w, b):
            return op(x, w, b) + 1

    program = torch.export.export(Model(), layer_norm_args())
    assert any(node.target is op for node in program.graph.nodes)
    torch.testing.assert_close(program.module()(*layer_norm_args()), op(*layer_norm_args()) + 1)


def test_a_call_enters_in_c_and_anything_but_plain_tensors_goes_through_pytorch(results):
    """The op's __call__ is a C function (no Python frame, no conversion of the arguments by the schema) for
    plain tensors; a __torch_function__ mode, keywords or a wrong count take PyTorch's own path."""
    op = results[0]["layer_norm"].as_torch_op()
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():  # built against Python's headers
        assert "entry: OpOverload.__call__ (the C entry was not built" in op.__doc__, op.__doc__
        pytest.skip("this Python has no headers to build the op's C entry against")
    assert "entry: a C function" in op.__doc__, op.__doc__
    assert type(type(op).__dict__["__call__"]).__name__ == "builtin_function_or_method"
    x, w, b = layer_norm_args()
    expected = op(x, w, b)
    seen = []

    class Seeing(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Seeing():
        torch.testing.assert_close(op(x, w, b), expected)
    assert seen and seen[0] is op, seen[:3]
    torch.testing.assert_close(op(x, weight=w, bias=b), expected)
    with pytest.raises(RuntimeError, match="missing value for argument 'bias'"):
        op(x, w)


def test_an_op_whose_output_size_depends_on_values_traces_with_a_symbolic_size(results):
    op = results[0]["jagged_truncate"].as_torch_op()
    values, offsets = torch.randn(90), torch.tensor([0, 40, 40, 90])
    out_values, out_offsets = op(values, offsets)
    torch.testing.assert_close(out_offsets, torch.tensor([0, 32, 32, 64]))
    torch.testing.assert_close(out_values, torch.cat([values[8:40], values[58:90]]))
    compiled = torch.compile(lambda v, o: op(v, o)[0] * 2, fullgraph=True)
    torch.testing.assert_close(compiled(values, offsets), out_values * 2)
    torch.library.opcheck(op, (values, offsets))
    assert torch.Tag.dynamic_output_shape in op.tags
    assert "CUDA graphs: cannot be captured: its output sizes depend on input values" in op.__doc__
    assert "CUDA graphs: cannot be captured" in results[0]["jagged_truncate"].summary()


def test_a_call_runs_no_reference_and_asks_for_shapes_once_per_signature(results, monkeypatch):
    """The mechanism behind the op's overhead (bench/op_overhead.py gives the numbers): the reference never runs
    for a call, and the shape function runs once per input signature (every call where sizes depend on values)."""
    asked = []
    original = runtime.KernelOp.specs
    monkeypatch.setattr(runtime.KernelOp, "specs", lambda self, *a: asked.append(self.qualname) or original(self, *a))
    for name, args, calls in (("layer_norm", layer_norm_args(5), 1), ("jagged_truncate", (torch.randn(9),
                                                                                          torch.tensor([0, 4, 9])), 4)):
        result = results[0][name]
        op = result.as_torch_op()
        monkeypatch.setattr(result.problem, "reference", lambda *a: pytest.fail("the reference ran in an op call"))
        asked.clear()
        for _ in range(4):
            op(*args)
        assert "per call: native" in op.__doc__
        assert len(asked) == calls, (name, asked)


def test_backward_refuses_and_bad_input_says_what_is_wrong(results):
    op = results[0]["layer_norm"].as_torch_op()
    x, w, b = layer_norm_args()
    out = op(x.requires_grad_(), w, b)
    with pytest.raises(RuntimeError, match=f"derivative for kevolve::{op._opname} is not implemented"):
        out.sum().backward()
    with pytest.raises(kevolve.KevolveError, match=r"input 0 \(x\) is torch.float64, the kernel was built for "
                                                   r"torch.float32"):
        op(x.detach().double(), w.double(), b.double())
    with pytest.raises(RuntimeError, match="weight"):
        op(x.detach(), torch.randn(7), b)


def test_load_gives_the_op_back_from_a_session_or_a_saved_package(results, tmp_path):
    found, store = results
    result = found["layer_norm"]
    assert kevolve.load(result.session, store=store) is result.as_torch_op()
    package = result.save(tmp_path / "ln_op")
    assert kevolve.load(package) is result.as_torch_op()  # the same op: the package finds it registered
    with pytest.raises(kevolve.KevolveError, match="neither a saved package directory nor a stored session"):
        kevolve.load("no-such-session", store=store)
    with pytest.raises(kevolve.KevolveError, match="not a package saved by kevolve"):
        kevolve.load(tmp_path)


RUN_PACKAGE = textwrap.dedent("""
    import sys
    sys.modules["kevolve"] = None  # importing kevolve from here on fails
    import torch
    import {package} as package
    op = package.op
    assert op is getattr(torch.ops.kevolve, op._opname).default, op
    gen = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(9, 256, generator=gen), torch.randn(256, generator=gen), torch.randn(256, generator=gen)
    expected = torch.nn.functional.layer_norm(x, (256,), w, b, eps=1e-5)
    torch.testing.assert_close(op(x, w, b), expected, rtol=1e-4, atol=1e-4)
    compiled = torch.compile(lambda x, w, b: op(x, w, b) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(x, w, b), expected * 2, rtol=1e-4, atol=1e-4)
    assert "per call: native" in op.__doc__ and "entry: " in op.__doc__, op.__doc__
    try:
        op(x, torch.randn(128), b)
    except RuntimeError as exc:
        assert "input 1 (weight) dimension 0 must be input 0 (x) dimension 1 = 256, got 128" in str(exc), exc
    else:
        raise AssertionError("a weight of the wrong size was accepted")
    print(op._opname)
""")


def test_the_saved_package_installs_into_a_fresh_venv_without_kevolve(results, tmp_path):
    result = results[0]["layer_norm"]
    package = result.save(tmp_path / "ln_package")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    torch_line = f"torch=={torch.__version__.split('+')[0]}"
    done = subprocess.run([*pip, torch_line], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    done = subprocess.run([*pip, "--no-build-isolation", str(package)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list"], capture_output=True, text=True)
    assert "kevolve " not in listed.stdout and "kevolve-op-ln-package" in listed.stdout, listed.stdout
    done = subprocess.run([str(venv / "bin" / "python"), "-c", RUN_PACKAGE.format(package="ln_package")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path / "venv",
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == result.as_torch_op()._opname

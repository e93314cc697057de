"""The BackendBench export runs without kevolve: the files written for the cpu target are imported and called in a
fresh interpreter where any import of kevolve (or a kevolve backend) raises, and their results are compared with
PyTorch's there: ops with a host-side ``prepare`` step (flip), a list input (cat), an ATen overload of another
name (softmax's ``_softmax``), one overload served by two ops' kernels (``hardtanh`` for hardtanh and relu6) and
an op covered by another's kernel (outer by mul's)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("expecttest")

from kevolve.conformance.export import export_backendbench
from kevolve.conformance.run import run_conformance

OPS = ["neg", "add", "nn.functional.glu", "flip", "cat", "softmax", "nn.functional.hardtanh", "nn.functional.relu6",
       "mul", "outer"]

#: run in the child: block kevolve, load every exported file by path as BackendBench's directory backend does,
#: call it on fresh arguments, compare with the ATen op
CHILD = textwrap.dedent('''
    import importlib.abc, importlib.util, json, sys
    from pathlib import Path

    class NoKevolve(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0].startswith("kevolve"):
                raise ImportError(f"kevolve is blocked here: {name}")

    sys.meta_path.insert(0, NoKevolve())
    import torch

    root = Path(sys.argv[1])
    def load(name):
        path = root / name / f"{name}_implementation_v1.py"
        spec = importlib.util.spec_from_file_location(f"bb_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, f"{name}_kernel_impl")

    torch.manual_seed(1)
    x, y = torch.randn(37, 20), torch.randn(20)
    calls = {
        "neg__default": ((x,), {}, torch.ops.aten.neg.default),
        "add__Tensor": ((x, y), {"alpha": 2}, torch.ops.aten.add.Tensor),
        "glu__default": ((torch.randn(3, 8, 5), 1), {}, torch.ops.aten.glu.default),
        "flip__default": ((torch.randn(3, 4, 5), [0, -1]), {}, torch.ops.aten.flip.default),
        "cat__default": (([torch.randn(2, 3), torch.randn(4, 3)],), {}, torch.ops.aten.cat.default),
        # keywords for positional parameters (as BackendBench passes some): moved into place for the adapter
        "_softmax__default": ((torch.randn(5, 7),), {"dim": 1, "half_to_float": False},
                              torch.ops.aten._softmax.default),
        "hardtanh__default": ((torch.randn(6, 3) * 8, 0.0, 6.0), {}, torch.ops.aten.hardtanh.default),
    }
    report = {"kevolve_loaded": [], "checked": {}}
    for name, (args, kwargs, aten) in calls.items():
        got = load(name)(*args, **kwargs)
        torch.testing.assert_close(got, aten(*args, **kwargs))
        report["checked"][name] = list(got.shape)
    report["kevolve_loaded"] = sorted(m for m in sys.modules if m.startswith("kevolve"))
    print(json.dumps(report))
''')


def test_exported_files_run_with_kevolve_blocked(cpu, store, tmp_path):
    report = run_conformance("cpu", OPS)
    assert report.passed_ops == len(OPS)
    export = export_backendbench(tmp_path / "bb", "cpu", ops=OPS)
    assert export.uncovered == {} and sorted(export.covered) == sorted(OPS)
    assert {"neg__default", "add__Tensor", "glu__default", "flip__default", "cat__default", "_softmax__default",
            "hardtanh__default", "mul__Tensor"} <= set(export.written)
    assert export.served_by["hardtanh__default"] == ["nn.functional.hardtanh", "nn.functional.relu6"]
    assert "outer" not in {op for ops in export.served_by.values() for op in ops}  # mul's kernel answers it
    for name in export.written:
        text = (tmp_path / "bb" / name / f"{name}_implementation_v1.py").read_text()
        assert "import kevolve" not in text and "from kevolve" not in text
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "bb")], capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["kevolve_loaded"] == []
    assert result["checked"] == {"neg__default": [37, 20], "add__Tensor": [37, 20], "glu__default": [3, 4, 5],
                                 "flip__default": [3, 4, 5], "cat__default": [6, 3], "_softmax__default": [5, 7],
                                 "hardtanh__default": [6, 3]}


def test_the_blocker_blocks(tmp_path):
    """The child's guard is real: with it, importing kevolve fails."""
    guard = CHILD.split("import torch")[0] + "import kevolve\n"
    child = subprocess.run([sys.executable, "-c", guard], capture_output=True, text=True, timeout=60)
    assert child.returncode != 0 and "kevolve is blocked here" in child.stderr

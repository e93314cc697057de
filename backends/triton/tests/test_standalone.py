"""Standalone export for the GPU targets: the package runs its kernel with nothing of kevolve importable (here
through the Triton interpreter on CPU tensors, in a fresh process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from kevolve.api import resolve_problem
from kevolve.plugins import get_manager
from kevolve_triton.recipes.pointwise import TritonPointwise

pytest.importorskip("kevolve_nvidia")

RUN = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    sys.modules["kevolve"] = None  # importing kevolve from here on fails
    import torch
    from exported import kernel
    x = torch.randn(3000, generator=torch.Generator().manual_seed(0))
    y = torch.randn(3000, generator=torch.Generator().manual_seed(1))
    out = torch.full_like(x, float("nan"))
    kernel([x, y], [out])
    assert torch.equal(out, x * y), (out - x * y).abs().max()
    print("ok")
""")


@pytest.mark.parametrize("target", ["nvidia_h100", "amd_mi300"])
def test_an_exported_triton_kernel_runs_without_kevolve(target, tmp_path):
    if target.startswith("amd"):
        pytest.importorskip("kevolve_amd")
    registered = get_manager().target(target)
    problem = resolve_problem("mul", {"n": 3000}, "float32", None)
    source = TritonPointwise().render(problem, {"BLOCK": 256, "ITEMS": 2, "num_warps": 4})
    package = tmp_path / "exported"
    package.mkdir()
    files = registered.backend.write_standalone(registered.spec, source, "triton", package)
    # replay.py/.cpp replay its launches from C in an installed op; scratch.py allocates the buffers a file asks for
    assert sorted(files) == ["__init__.py", "kernel.py", "replay.cpp", "replay.py", "scratch.py"]
    assert (package / "kernel.py").read_text() == source
    assert "kevolve" not in (package / "kernel.py").read_text().replace("# kevolve generated kernel", "")
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], capture_output=True, text=True, timeout=300,
                          env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_cuda_kernels_export_with_the_stream_wrapper_and_import_without_kevolve(tmp_path):
    """A CUDA export carries the module that puts each call on PyTorch's stream; the package imports with
    kevolve blocked (running it needs the GPU). Other languages are refused."""
    pytest.importorskip("cupy")
    from kevolve_nvidia.cuda_recipes import CudaPointwise

    registered = get_manager().target("nvidia_h100")
    problem = resolve_problem("relu", {"n": 1024}, "float32", None)
    package = tmp_path / "exported"
    package.mkdir()
    files = registered.backend.write_standalone(registered.spec, CudaPointwise().render(
        problem, {"THREADS": 256, "ITEMS": 1, "VEC": 4}), "cuda", package)
    assert sorted(files) == ["__init__.py", "cuda_stream.py", "kernel.py"]
    assert "cupy-cuda12x" in (package / "__init__.py").read_text()
    check = ("import sys; sys.path.insert(0, sys.argv[1]); sys.modules['kevolve'] = None; "
             "from exported import kernel; print(kernel.__qualname__)")
    done = subprocess.run([sys.executable, "-c", check, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "on_torch_stream.<locals>.kernel", done.stderr[-2000:]
    with pytest.raises(NotImplementedError, match="'cpp'"):
        registered.backend.write_standalone(registered.spec, "", "cpp", tmp_path)

"""Helpers for the AMD tests (a module of its own, not conftest, so that its name is unique on sys.path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.problems.problem import Problem

KERNELS = Path(__file__).parent / "kernels"


def catalog_problem(op: str, dims: dict[str, int] | None = None, dtype: str | None = None) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dims=dims, dtype=dtype)


def kernel_source(name: str, **constants: Any) -> str:
    """A test kernel file's text with module-level constants (``BK = 128``) replaced."""
    lines = (KERNELS / name).read_text().splitlines()
    for key, value in constants.items():
        hits = [i for i, line in enumerate(lines) if line.startswith(f"{key} = ")]
        assert len(hits) == 1, (name, key)
        lines[hits[0]] = f"{key} = {value!r}"
    return "\n".join(lines) + "\n"


def compile_in_process(source: str, problem: Problem, target: str) -> list[dict[str, float]]:
    """What the toolchain's ahead-of-time step does (capture the file's launches at the problem's timing shape,
    compile each for the target, read its resources), in this process: a subprocess per build costs seconds
    of imports, too many for a test over every op."""
    import os
    import tempfile

    import torch
    import triton
    from kevolve.backend.runner import load_kernel_module
    from kevolve_triton.capture import capture_launches
    from kevolve_triton.toolchain import ENV
    from triton.compiler import ASTSource

    os.environ.update(ENV)

    registered = get_manager().target(target)
    backend, spec = registered.backend, registered.spec
    inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in problem.output_specs(inputs)]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(source)
    _, kernel = load_kernel_module(fh.name)
    Path(fh.name).unlink()
    reports = []
    for launch in capture_launches(kernel, inputs, outputs):
        ast = ASTSource(launch.fn, launch.signature, constexprs=launch.constexprs, attrs=launch.attrs)
        compiled = triton.compile(ast, target=backend.gpu_target(spec), options=launch.options)
        assert compiled.metadata.arch == spec.facts.extra["gpu"]["arch"]
        reports.append({"kernel": launch.name, **backend.read_resources(compiled, spec.facts)})
    return reports

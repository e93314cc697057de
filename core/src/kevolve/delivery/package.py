"""``result.save(DIR)``: a pip-installable package that registers the kernel's op on import, with torch and the
kernel's own runtime only (no kevolve).

DIR is both the distribution (``pip install DIR``) and the package itself (``import DIR`` with DIR's parent on
``sys.path``), named after DIR::

    DIR/__init__.py         registers torch.ops.kevolve.<name> on import; exports ``op`` and ``kernel``
    DIR/kevolve_runtime.py  the per-call path (a copy of kevolve/delivery/runtime.py) and native.cpp
    DIR/shapes.py           the shape function (kevolve/delivery/shapes.py wrote it)
    DIR/launch/             the backend's standalone kernel module (``kernel(inputs, outputs)``)
    DIR/kevolve.json        problem, parameters and measured speedups; DIR/extras.pt a module's weights
    DIR/pyproject.toml
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from kevolve.delivery import runtime
from kevolve.delivery.op import Signature, graphs_without_trying, op_name
from kevolve.delivery.shapes import ShapeDerivationError, shape_source
from kevolve.errors import KevolveError
from kevolve.problems.problem import Problem
from kevolve.synthesis.base import Candidate

#: the C++ beside runtime.py that a package builds on first import: the per-call path and the Python entry
NATIVE_SOURCES = ("native.cpp", "entry.cpp")

_INIT = '''"""kevolve kernel op for {describe} on {target} ({language}). Importing this package registers
torch.ops.kevolve.{name}; kevolve is not needed, only torch and the kernel's runtime (launch/__init__.py
says which).

    import {package}
    outputs = {package}.op({args})       # or torch.ops.kevolve.{name}({args})

``kernel(inputs, outputs)`` is the raw launcher (outputs preallocated). kevolve.json holds the problem, the
parameters and the measured speedups.
"""

from pathlib import Path

import torch

from . import kevolve_runtime as _runtime
from .launch import kernel
from .shapes import VALUE_DEPENDENT as _VALUE_DEPENDENT
from .shapes import output_specs as _output_specs

_EXTRAS = Path(__file__).resolve().with_name("extras.pt")

op = _runtime.registered({name!r}) or _runtime.register(
    {name!r},
    _runtime.KernelOp({qualname!r}, kernel, _output_specs, value_dependent=_VALUE_DEPENDENT, arg_names={names!r},
                      input_dtypes=[{dtypes}], device={device!r},
                      extras=torch.load(_EXTRAS, weights_only=True) if _EXTRAS.exists() else ()),
    n_outputs={n_outputs}, doc={doc!r}, capturable={capturable!r})

__all__ = ["kernel", "op"]
'''

_PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{distribution}"
version = "0.1.0"
description = "kevolve kernel op: {describe} on {target} ({language})"
requires-python = ">=3.9"
dependencies = ["torch"]

[tool.setuptools]
package-dir = {{"{package}" = ".", "{package}.launch" = "launch"}}
packages = ["{package}", "{package}.launch"]

[tool.setuptools.package-data]
"*" = ["*.cpp", "*.h", "*.json", "*.pt"]
'''


def package_name(directory: Path) -> str:
    name = directory.resolve().name
    if not name.isidentifier():
        raise KevolveError(f"cannot save into {directory}: its name is the package's import name and must be a Python "
                           f"identifier (letters, digits, underscores), e.g. {name.replace('-', '_') or 'kernel'}_op/")
    return name


def write_package(problem: Problem, target: str, source: str, language: str, directory: Path,
                  info: dict[str, Any]) -> Path:
    """Write the package into ``directory`` (created; files of an earlier save replaced)."""
    from kevolve.plugins import get_manager

    package = package_name(directory)
    registered = get_manager().target(target)
    signature = Signature.of(problem)
    try:
        shapes = shape_source(problem, list(signature.arg_names))
    except ShapeDerivationError as exc:
        raise KevolveError(f"cannot save {problem.describe()} as a package: {exc}. The op still works in this process "
                           "(result.as_torch_op())") from None
    candidate = Candidate(source, language)
    name = op_name(problem, registered.spec.name, candidate.source_hash)
    device = registered.backend.runner(registered.spec).device
    launch = directory / "launch"
    launch.mkdir(parents=True, exist_ok=True)
    files = [f"launch/{f}" for f in registered.backend.write_standalone(registered.spec, source, language, launch)]
    here = Path(runtime.__file__).parent
    shutil.copyfile(here / "runtime.py", directory / "kevolve_runtime.py")
    for source in NATIVE_SOURCES:
        shutil.copyfile(here / source, directory / source)
    (directory / "shapes.py").write_text(shapes)
    extras = problem.extra_inputs()
    if extras:
        torch.save([t.detach().cpu() for t in extras], directory / "extras.pt")
    value_dependent = problem.value_sized
    graphs = graphs_without_trying(value_dependent, device)
    describe = problem.describe()
    (directory / "__init__.py").write_text(_INIT.format(
        describe=describe, target=registered.spec.name, language=language, name=name, package=package,
        qualname=f"{runtime.NAMESPACE}::{name}", args=", ".join(signature.arg_names),
        names=list(signature.arg_names), dtypes=", ".join(str(d) for d in signature.input_dtypes), device=device,
        n_outputs=signature.n_outputs, capturable=not value_dependent,
        doc=f"kevolve kernel for {describe} on {registered.spec.name} ({language}, source "
            f"{candidate.source_hash[:12]}), from a saved package\ninputs: {signature.describe()}\n"
            f"CUDA graphs: {graphs}"))
    (directory / "pyproject.toml").write_text(_PYPROJECT.format(
        distribution=f"kevolve-op-{package.replace('_', '-')}", describe=describe, target=registered.spec.name,
        language=language, package=package))
    files += ["__init__.py", "kevolve_runtime.py", *NATIVE_SOURCES, "shapes.py", "pyproject.toml", "kevolve.json"]
    (directory / "kevolve.json").write_text(json.dumps({**info, "op": f"torch.ops.{runtime.NAMESPACE}.{name}",
                                                        "package": package, "files": files}, indent=2, default=str))
    return directory


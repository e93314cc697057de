"""Problems from an importable PyTorch function plus example inputs.

Fresh inputs are drawn to look like the examples (:func:`kevolve.problems.module.draw_like`). The function must
be importable by ``module:qualname`` so worker processes can rebuild the problem; example inputs are saved under
``$KEVOLVE_HOME/problems``.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import io
from collections.abc import Callable
from typing import Any

import torch

from kevolve.errors import ProblemError
from kevolve.paths import home
from kevolve.problems.module import draw_like
from kevolve.problems.problem import Dims, Problem


def _import(ref: str) -> Callable:
    module_name, _, qualname = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ProblemError(f"cannot import {ref}: {exc}") from None
    return obj


class CallableProblem(Problem):
    family = "custom"

    def __init__(self, ref: str, examples: list[torch.Tensor], examples_file: str, name: str) -> None:
        self.ref, self.fn = ref, _import(ref)
        self.examples, self.examples_file, self.name = examples, examples_file, name
        self._dims = {f"arg{i}_{j}": int(s) for i, t in enumerate(examples) for j, s in enumerate(t.shape)}
        self._dtype = next((t.dtype for t in examples if t.dtype.is_floating_point), torch.float32)

    @classmethod
    def create(cls, fn: Callable, examples: list[torch.Tensor], name: str | None = None) -> CallableProblem:
        module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
        if not module or module == "__main__" or "<" in qualname:
            raise ProblemError("the function must be importable (a module-level def in an importable module, not "
                               "__main__ or a lambda) so isolated workers can rebuild the problem")
        if not examples or not all(isinstance(t, torch.Tensor) for t in examples):
            raise ProblemError("give at least one example input, all torch tensors")
        buffer = io.BytesIO()
        torch.save([t.detach().cpu() for t in examples], buffer)
        digest = hashlib.sha256(buffer.getvalue()).hexdigest()[:16]
        path = home() / "problems" / f"{digest}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_bytes(buffer.getvalue())
        return cls(f"{module}:{qualname}", [t.detach().cpu() for t in examples], str(path), name or fn.__name__)

    def make_inputs(self, dims: Dims, gen: torch.Generator) -> list[torch.Tensor]:
        return draw_like(self.examples, gen)

    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        out = self.fn(*inputs)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def reference_source(self) -> str:
        try:
            return inspect.getsource(self.fn)
        except (OSError, TypeError):
            return ""

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "callable", "ref": self.ref, "examples": self.examples_file, "name": self.name}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CallableProblem:
        try:
            examples = torch.load(spec["examples"])
        except OSError as exc:
            raise ProblemError(f"example inputs {spec['examples']} are gone ({exc}); recreate the problem") from None
        return cls(spec["ref"], examples, spec["examples"], spec["name"])

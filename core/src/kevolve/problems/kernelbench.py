"""Problems from KernelBench-format files: ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``.

The kernel receives the tensors of ``get_inputs()`` followed by the model's parameters and buffers (in
``named_parameters`` then ``named_buffers`` order), so a kernel can compute what the module computes. The
module is built under a fixed seed, so every process (search, workers, ``as_torch_op``) sees the same weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

import torch

from kevolve.errors import ProblemError
from kevolve.problems.module import ModuleProblem
from kevolve.problems.problem import Dims

_ids = itertools.count()
MODEL_SEED = 0


class KernelBenchProblem(ModuleProblem):
    def __init__(self, path: Path) -> None:
        self.path = Path(path).resolve()
        if not self.path.is_file():
            raise ProblemError(f"no such problem file: {self.path}")
        try:
            self.text = self.path.read_text()
        except UnicodeDecodeError as exc:
            raise ProblemError(f"{self.path} is not a text (UTF-8) Python file: {exc.reason} at byte {exc.start}; "
                               "give a KernelBench problem file") from None
        self.name = self.path.stem
        module = self._load()
        for attribute in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(module, attribute):
                raise ProblemError(f"{self.path} is not a KernelBench problem: it defines no {attribute!r} "
                                   "(expected class Model(nn.Module), get_inputs(), get_init_inputs())")
        self.module = module
        with torch.random.fork_rng():
            torch.manual_seed(MODEL_SEED)
            try:
                model = module.Model(*module.get_init_inputs()).eval()
                example = list(module.get_inputs())
            except Exception as exc:
                raise ProblemError(f"{self.path}: building Model(*get_init_inputs()) or get_inputs() failed: "
                                   f"{type(exc).__name__}: {exc}") from None
        if not example or not all(isinstance(t, torch.Tensor) for t in example):
            raise ProblemError(f"{self.path}: get_inputs() must return a list of one or more tensors, returned "
                               f"{example!r:.80}")
        self._adopt(model, example)

    def _load(self):
        spec = importlib.util.spec_from_file_location(f"kevolve_kernelbench_{next(_ids)}", self.path)
        module = importlib.util.module_from_spec(spec)
        # registered as an imported module is: torch.compile (the baselines) finds the forward's globals by name
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        except SystemExit as exc:
            del sys.modules[spec.name]
            raise ProblemError(f"{self.path} calls sys.exit({exc.code!r}) while being imported; a problem file may "
                               "only define Model, get_inputs and get_init_inputs") from None
        except Exception as exc:
            del sys.modules[spec.name]
            raise ProblemError(f"{self.path} failed to import: {type(exc).__name__}: {exc}") from None
        return module

    def check_forward(self) -> None:
        """Run the model once on fresh inputs: a forward that raises or returns something other than tensors is
        the problem file's fault, and is said so before any kernel could be blamed for it."""
        try:
            outputs = self.reference(self.make_inputs(self.dims, torch.Generator().manual_seed(0)))
        except Exception as exc:
            raise ProblemError(f"{self.path}: Model.forward raised {type(exc).__name__}: {exc}") from None
        if not outputs or not all(isinstance(o, torch.Tensor) for o in outputs):
            raise ProblemError(f"{self.path}: Model.forward must return a tensor or a tuple of tensors, returned "
                               f"{outputs!r:.80}")

    def make_inputs(self, dims: Dims, gen: torch.Generator) -> list[torch.Tensor]:
        with torch.random.fork_rng():
            torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen)))
            inputs = list(self.module.get_inputs())
        return inputs + [w.clone() for w in self._weights]

    def reference_source(self) -> str:
        return self.text

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "kernelbench", "path": str(self.path),
                "sha256": hashlib.sha256(self.text.encode()).hexdigest()[:16]}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> KernelBenchProblem:
        problem = cls(Path(spec["path"]))
        if problem.to_spec()["sha256"] != spec["sha256"]:
            raise ProblemError(f"{spec['path']} changed since the session started; start a new session")
        return problem


"""A region of a user's model as a problem: the module exported with ``torch.export`` and saved, with its example
inputs, under ``$KEVOLVE_HOME/problems``, so that worker processes (and later sessions) rebuild it from the files
without importing the user's classes. The file name is a digest of the exported graph, its weights and the
inputs' shapes: the same region of the same model is the same problem, and a solved one comes from the store.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from kevolve.errors import ProblemError
from kevolve.paths import home
from kevolve.problems.module import ModuleProblem, draw_like
from kevolve.problems.problem import Dims


class ExportedProblem(ModuleProblem):
    def __init__(self, path: str, examples_path: str, name: str, device: str = "cpu") -> None:
        try:
            program = torch.export.load(path)
            examples = torch.load(examples_path)
        except (OSError, RuntimeError) as exc:
            raise ProblemError(f"the exported region {name!r} cannot be loaded from {path} ({exc}); optimize the "
                               "model again to export it afresh") from None
        self.path, self.examples_path, self.name, self.examples = path, examples_path, name, examples
        self.device = device
        self._adopt(program.module(), examples)

    @classmethod
    def create(cls, module: torch.nn.Module, examples: list[torch.Tensor], name: str) -> ExportedProblem:
        """Export ``module`` on ``examples`` (a :class:`~kevolve.program.capture.CaptureError` where export cannot
        trace it) and save both where workers find them."""
        from kevolve.program.capture import export

        with torch.no_grad():  # on the module's device; the examples are kept on the host
            program = export(module, [t.detach() for t in examples], name)
        device = str(examples[0].device) if examples else "cpu"
        examples = [t.detach().cpu() for t in examples]
        digest = hashlib.sha256(program.graph_module.code.encode())
        for key, value in sorted(program.state_dict.items()):
            digest.update(key.encode())
            digest.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
        digest.update(repr([(tuple(t.shape), str(t.dtype)) for t in examples]).encode())
        stem = home() / "problems" / f"region_{digest.hexdigest()[:16]}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        path, examples_path = f"{stem}.pt2", f"{stem}.inputs.pt"
        torch.export.save(program, path)
        torch.save(examples, examples_path)
        return cls(path, examples_path, name, device)

    def make_inputs(self, dims: Dims, gen: torch.Generator) -> list[torch.Tensor]:
        return draw_like(self.examples, gen) + [w.clone() for w in self._weights]

    def reference_source(self) -> str:
        return self.model.code if hasattr(self.model, "code") else ""

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "exported", "path": self.path, "examples": self.examples_path, "name": self.name,
                "device": self.device}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> ExportedProblem:
        return cls(spec["path"], spec["examples"], spec["name"], spec.get("device", "cpu"))

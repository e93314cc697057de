"""Problems whose reference is an ``nn.Module``: the kernel receives the caller's tensors followed by the module's
parameters and buffers (``named_parameters`` then ``named_buffers`` order), so it can compute what the module
computes. KernelBench files and model regions (:mod:`kevolve.problems.exported`) are such problems; they differ
only in where the module and its inputs come from.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import torch

from kevolve.problems.problem import Dims, Problem


def draw_like(examples: list[torch.Tensor], gen: torch.Generator) -> list[torch.Tensor]:
    """Fresh tensors shaped like the examples: floats with their mean and spread; integers as the example's values
    in a new random order (an index stays a valid index, lengths keep their total), except a 1-D integer tensor
    sorted in the example (offsets), drawn sorted with its first and last values kept; booleans at random. What a
    caller passes is unknown beyond the examples; this keeps integer inputs' structure."""
    fresh = []
    for t in examples:
        if t.dtype.is_floating_point:
            values = t.float()
            std = float(values.std()) if t.numel() > 1 else 1.0
            draw = torch.randn(t.shape, generator=gen) * (std or 1.0) + (float(values.mean()) if t.numel() else 0.0)
            fresh.append(draw.to(t.dtype))
        elif t.dtype == torch.bool:
            fresh.append(torch.randint(0, 2, t.shape, generator=gen).bool())
        elif t.dim() == 1 and t.numel() >= 2 and bool((t[1:] >= t[:-1]).all()):
            # offsets: drawn sorted between the same ends, so that they still bound the values they index
            draw = torch.randint(int(t[0]), int(t[-1]) + 1, t.shape, generator=gen, dtype=t.dtype).sort().values
            draw[0], draw[-1] = t[0], t[-1]
            fresh.append(draw)
        else:  # the example's values in a new order: in range, and the same sum (lengths still add up)
            order = torch.randperm(t.numel(), generator=gen)
            fresh.append(t.reshape(-1)[order].reshape(t.shape).clone())
    return fresh


class ModuleProblem(Problem):
    """A module (set by the subclass as ``model``, in eval mode), how many of the kernel's inputs are the
    caller's (``n_inputs``) and one example call (``example``)."""

    family = "custom"
    model: torch.nn.Module
    n_inputs: int
    #: where the module's own tensors live and its factory calls put theirs (an exported graph keeps the device
    #: it was traced on): output shapes are traced on stand-ins there, whatever device the inputs come on
    device: str = "cpu"

    def _adopt(self, model: torch.nn.Module, example: list[torch.Tensor]) -> None:
        self.model, self.n_inputs = model, len(example)
        self._weights = [p.detach() for p in itertools.chain(self.model.parameters(), self.model.buffers())]
        self._dims = {f"arg{i}_{j}": int(size) for i, t in enumerate(example) for j, size in enumerate(t.shape)}
        self._dtype = next((t.dtype for t in example if t.dtype.is_floating_point), torch.float32)
        #: where the module's weights are, and its copies moved elsewhere (:meth:`_model_on`)
        self._home = next((w.device for w in self._weights), None)
        self._moved: dict[torch.device, torch.nn.Module] = {}

    def check_dims(self) -> list[Dims]:
        return [self.dims]  # the example knows one shape; fresh values are drawn on every call

    def extra_inputs(self) -> list[torch.Tensor]:
        return list(self._weights)

    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """The module's forward on the device the inputs are on, as a model moved there with ``.to(device)``
        computes it (its weights are the same values as the kernel's extra inputs)."""
        tensors = inputs[: self.n_inputs]
        device = next((t.device for t in tensors if isinstance(t, torch.Tensor)), None)
        with torch.no_grad():
            out = self._model_on(device)(*tensors)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def _model_on(self, device: torch.device | None) -> torch.nn.Module:
        """The module with its weights on ``device``: itself where they already are, else a copy moved there
        once (kept, so a timed reference call pays no copy)."""
        if device is None or self._home is None or device == self._home:
            return self.model
        if device not in self._moved:
            self._moved[device] = copy.deepcopy(self.model).to(device)
        return self._moved[device]

    def output_specs(self, inputs: list[torch.Tensor], read: Any = int) -> list[tuple[tuple[int, ...], torch.dtype]]:
        """Traced on meta tensors, weights included, without touching the real module; a forward that makes
        tensors of its own (``torch.arange(n)``) is traced on fake tensors on the module's device instead (a
        build compiling for a GPU draws its inputs on the host)."""
        try:
            return self._traced(inputs, lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta"))
        except (RuntimeError, AssertionError):  # AssertionError: a GPU device in a torch built without one
            from torch._subclasses.fake_tensor import FakeTensorMode

            with FakeTensorMode():
                return self._traced(inputs, lambda t: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                                                                          device=self.device))

    def _traced(self, inputs: list[torch.Tensor], stand_in: Any) -> list[tuple[tuple[int, ...], torch.dtype]]:
        state = {name: stand_in(t) for name, t in itertools.chain(self.model.named_parameters(),
                                                                  self.model.named_buffers())}
        with torch.no_grad():
            out = torch.func.functional_call(self.model, state,
                                             tuple(stand_in(t) for t in inputs[: self.n_inputs]))
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        return [(tuple(int(s) for s in o.shape), o.dtype) for o in out]

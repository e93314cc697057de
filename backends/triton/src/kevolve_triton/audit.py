"""What one call of a kernel does on the GPU besides its own work, seen before it is timed (issue 32).

Device timers measure the work ordered on the caller's stream between two events; work elsewhere (another
stream, a forked stream never joined back) goes on after the end event, unmeasured, and a kernel that reads memory
it was not given may copy an answer the process computed. Two views catch that:

- **The launches.** Every Triton launch the file makes is recorded as ``replay.py`` records it: it must run on the
  caller's stream and point only into the call's inputs, outputs and what the call itself allocated.
- **The device's own view**, which no launcher can hide from: one call captured in a CUDA graph holds exactly the
  work ordered on the caller's stream (work on an unrelated stream runs at once and is not captured); replayed
  into poisoned outputs, the graph must compute them. A call that cannot be captured at all (it reads the device
  from the host, or leaves a forked stream unjoined) is not rejected for that, but timed by the host's clock,
  which waits for all of the device's work.
"""

from __future__ import annotations

import torch
from kevolve.backend.runner import Audit, Judge, KernelFn
from kevolve.harness.checks import poison_value

from kevolve_triton.replay import NotReplayable, recording


def audit_call(kernel: KernelFn, inputs: list[torch.Tensor], outputs: list[torch.Tensor], judge: Judge) -> Audit:
    """The audit of ``kernel(inputs, outputs)``, called twice (recorded, then captured); ``judge(outputs)`` says
    what is wrong with the outputs of the captured call's replay, or None."""
    violations = _launch_violations(kernel, inputs, outputs)
    if violations:
        return Audit(violations)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            kernel(inputs, outputs)
    except Exception as exc:  # a capture fails in many ways (a host read, an allocation, an unjoined stream)
        _settle()
        return Audit(host_clock=f"its call cannot be captured in a CUDA graph ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0][:160]}), so device timers might miss part of its work")
    for output in outputs:  # what the capture's eager side wrote must not count
        output.fill_(poison_value(output.dtype, 0))
    graph.replay()
    torch.cuda.synchronize()
    wrong = judge(outputs)
    del graph
    if wrong:
        return Audit([f"its work is not ordered on the caller's stream: one call captured in a CUDA graph (the "
                      f"work the caller's stream orders) and replayed into poisoned outputs does not compute them "
                      f"({wrong}); device timers would stop before the rest of its work"])
    return Audit()


def _launch_violations(kernel: KernelFn, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> list[str]:
    launches: list[tuple] = []
    caller = torch.cuda.current_stream().cuda_stream
    try:
        with recording(launches) as seen:
            kernel(inputs, outputs)
    except NotReplayable:  # this Triton cannot be recorded: the device's view still holds
        return []
    torch.cuda.synchronize()
    kept = getattr(kernel, "constant_buffers", list)()
    owned = [(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
             for t in [*inputs, *outputs, *seen.allocated, *kept]]
    found = []
    for compiled, *_, args, stream in launches:
        if stream != caller:
            found.append(f"{compiled.name} was launched on another stream than the caller's ({stream:#x}, not "
                         f"{caller:#x}): device timers on the caller's stream do not wait for its work")
        types = list(compiled.src.signature.values())
        for position, (kind, arg) in enumerate(zip(types, args)):
            if not (isinstance(kind, str) and kind.startswith("*")):
                continue
            pointer = arg.data_ptr() if hasattr(arg, "data_ptr") else int(arg)
            if pointer and not any(base <= pointer < base + size for base, size in owned):
                found.append(f"{compiled.name}'s argument {position} points at memory the call was not given "
                             f"({pointer:#x}; a kernel reads its inputs and writes its outputs and temporaries)")
    return found


def _settle() -> None:
    """After a failed capture: wait for the device and clear the error the failure left, if any."""
    try:
        torch.cuda.synchronize()
    except Exception:
        pass

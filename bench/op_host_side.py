"""Host side of one call of a kernel op on a GPU, piece by piece: tiny inputs, so that a loop of calls is host-bound.

    python bench/op_host_side.py [--target nvidia_h100|cpu]     (results: bench/results/nvidia_h100/op_overhead.md, D;
                                                                  bench/results/cpu/op_host_side.txt)

Each line: microseconds per call, median of 7 samples of 3000 calls back to back (device synchronised once per
sample). `raw` is the Triton launcher with outputs allocated beforehand, `impl` the op's Python implementation
called directly, `op` the registered op through torch.ops, `eager` the reference.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import torch
from kevolve.api import resolve_problem
from kevolve.delivery import runtime
from kevolve.delivery.op import torch_op
from kevolve.plugins import get_manager

TARGET = sys.argv[sys.argv.index("--target") + 1] if "--target" in sys.argv else "nvidia_h100"
DEVICE = get_manager().target(TARGET).backend.runner(get_manager().target(TARGET).spec).device
sync = torch.cuda.synchronize if DEVICE != "cpu" else (lambda: None)


def per_call(f, n=3000):
    for _ in range(50):
        f()
    sync()
    best = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(n):
            f()
        sync()
        best.append((time.perf_counter() - t) / n * 1e6)
    return round(sorted(best)[3], 2)


lib = torch.library.Library("probe", "FRAGMENT")
lib.define("noop(Tensor x) -> Tensor")
lib.impl("noop", lambda x: x, "CUDA" if DEVICE != "cpu" else "CPU")
noop = torch.ops.probe.noop.default
x1 = torch.randn(8, device=DEVICE)
print(f"torch.empty {DEVICE}", per_call(lambda: torch.empty((8,), dtype=torch.float32, device=x1.device)))
print("python-impl custom op (returns input)", per_call(lambda: noop(x1)))
print("torch.relu", per_call(lambda: torch.relu(x1)))
relu = torch.ops.aten.relu.default
print("torch.ops.aten.relu.default", per_call(lambda: relu(x1)))
reg = get_manager().target(TARGET)
for name, dims, dtype in [("relu", {"n": 8}, "float32"), ("layer_norm", {"rows": 2, "cols": 1024}, "bfloat16"),
                          ("dot_interaction", {"batch": 4, "features": 26, "dim": 128}, "bfloat16")]:
    p = resolve_problem(name, dims, dtype, None)
    rec = next(r for r in reg.backend.recipes(reg.spec) if r.supports(p))
    src = rec.render(p, rec.space(p, reg.backend.facts(reg.spec)).default())
    op = torch_op(p, TARGET, src, rec.language)
    impl = [o for o in gc.get_objects() if isinstance(o, runtime.KernelOp) and o.qualname.endswith(op._opname)][0]
    print(op.__doc__.splitlines()[-3])  # which per-call path runs
    xs = [t.to(DEVICE) for t in p.make_inputs(p.dims, torch.Generator().manual_seed(0))]
    outs = [torch.empty(s, dtype=d, device=DEVICE) for s, d in p.output_specs(xs)]
    k = impl.kernel
    print(name, "raw", per_call(lambda: k(xs, outs)), "impl", per_call(lambda: impl(*xs)),
          "op", per_call(lambda: op(*xs)), "eager", per_call(lambda: p.reference(xs)))
    if hasattr(k, "signatures"):  # a Triton kernel: its launches per call, and whether the op replays them
        sys.path.insert(0, str(Path(__file__).parent))
        from op_overhead import python_launches

        print(f"  {python_launches(lambda: k(xs, outs)):g} launches per call; op signatures {k.signatures()}, "
              f"declined {dict(k.declined) or 'none'}")

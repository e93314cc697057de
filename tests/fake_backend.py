"""A tiny in-process backend for contract and search tests.

Kernels are Python files (language "pyfake") computing with numpy. Timing is synthetic and deterministic: a
kernel's module declares ``COST`` (seconds per call) and eager costs 1 s, so fitness = 1 / COST and a search's
tree depends only on its seed. ``fake_tiny`` has absurdly low bandwidth, so every timed kernel is implausible.

For fault injection: a kernel declaring ``SPREAD = s`` gets one timing sample in three (1 + s) times slower (a
disturbed measurement), and ``FAKE_TIMING_DELAY_S`` in the environment makes every timing take that long (a
search slow enough to be interrupted mid-evaluation). ``FAKE_LANE`` names a device of the host's: workers that
see the same one take turns on it (as on a GPU) instead of sharing the host's cores. With ``FAKE_EVENT_LOG``
set, each timing appends ``LANE START END`` to that file, so a test can see what ran at once. ``fake_counters``
profiles with a costly profiler (as Nsight Compute is), which a search runs only on kernels that reach its best.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import time
from pathlib import Path

from kevolve import diagnosis as d
from kevolve.backend import Backend, BuildResult, Runner, Toolchain
from kevolve.backend.profiler import RooflineProfiler
from kevolve.errors import CompileError
from kevolve.hookspecs import hookimpl
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts, MemoryLevel, TargetSpec

_ids = itertools.count()
EAGER_COST = 1.0


def facts(bandwidth: float) -> MachineFacts:
    return MachineFacts(peak_flops={"float32": 1e18}, memory=(MemoryLevel("ram", bandwidth, 1e15),),
                        parallel_units=4, unit_name="lane")


FAKE = TargetSpec("fake", "a fake target for tests", ("fk",), ("pyfake",), facts(1e18))
FAKE_TINY = TargetSpec("fake_tiny", "a fake target with 1 kB/s of bandwidth", (), ("pyfake",), facts(1e3))
FAKE_COUNTERS = TargetSpec("fake_counters", "a fake target with a costly profiler", (), ("pyfake",), facts(1e18))


class PyToolchain(Toolchain):
    language = "pyfake"

    def version(self) -> str:
        return "pyfake 1"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def build(self, source: str, workdir: Path, problem=None) -> BuildResult:
        try:
            compile(source, "kernel.py", "exec")
        except SyntaxError as exc:
            raise CompileError(f"syntax error: {exc}", log=str(exc), repro="python kernel.py") from None
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "built_at_niceness").write_text(str(os.nice(0)))
        path = workdir / "kernel.py"
        path.write_text(source)
        return BuildResult(language=self.language, artifact=str(path), command=f"python -m py_compile {path}")


class PyRunner(Runner):
    device = "cpu"

    def __init__(self) -> None:
        self.cost = 1.0
        self.spread = 0.0
        self.sampled: dict[str, int] = {}

    def load(self, build: BuildResult):
        spec = importlib.util.spec_from_file_location(f"fake_kernel_{next(_ids)}", build.artifact)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.cost = getattr(module, "COST", 1.0)
        self.spread = getattr(module, "SPREAD", 0.0)

        def call(inputs, outputs):
            module.kernel([t.numpy() for t in inputs], [t.numpy() for t in outputs])

        return call

    def device_key(self):
        return f"fake-lane-{os.environ['FAKE_LANE']}" if "FAKE_LANE" in os.environ else None

    def time_interleaved(self, thunks, *, repeats, inner, host_clock=False, before_call=lambda: None):
        for thunk in thunks.values():
            before_call()
            thunk()
        if "kernel" in thunks and not self.sampled.get("kernel"):  # once per evaluation (it times in rounds)
            began = time.time()
            time.sleep(float(os.environ.get("FAKE_TIMING_DELAY_S", 0)))
            if os.environ.get("FAKE_EVENT_LOG"):
                with open(os.environ["FAKE_EVENT_LOG"], "a") as log:
                    log.write(f"{os.environ.get('FAKE_LANE', '-')} {began} {time.time()}\n")
        costs = {"kernel": self.cost, "eager": EAGER_COST, "compile": EAGER_COST / 2}
        samples = {}
        for name in thunks:  # the i-th sample of a contender, counted across calls (the harness times by rounds)
            first = self.sampled.get(name, 0)
            self.sampled[name] = first + repeats
            spread = self.spread if name == "kernel" else 0.0
            samples[name] = [costs[name] * (1 + 0.001 * (i % 3)) * (1 + spread * (i % 3 == 2))
                             for i in range(first, first + repeats)]
        return samples


class FakeBackend(Backend):
    distribution = "kevolve-fake"

    def usable(self, target):
        return True, ""

    def toolchain(self, target, language):
        return PyToolchain()

    def runner(self, target):
        return PyRunner()

    def recipes(self, target):
        return [FakeRelu()]

    def profiler(self, target):
        return FakeCounters() if target.name == FAKE_COUNTERS.name else super().profiler(target)


class FakeCounters(RooflineProfiler):
    """Stands in for a hardware-counter profiler: the roofline's metrics under its own name, flagged costly."""

    name = "fake-counters"
    costly = True


class FakeRelu(Recipe):
    """relu with two knobs whose product sets the synthetic cost; 'speed' responds to compute-bound."""

    name = "fake.relu"
    language = "pyfake"
    families = ("pointwise",)

    def supports(self, problem):
        return problem.name == "relu"

    def space(self, problem, facts):
        return ScheduleSpace([Param("speed", tuple(range(1, 17)), {d.COMPUTE_BOUND: +1}),
                              Param("style", ("a", "b", "c"))])

    def render(self, problem, params):
        bonus = {"a": 1.0, "b": 1.5, "c": 0.5}[params["style"]]
        return (f"import numpy as np\nCOST = {1.0 / (params['speed'] * bonus)!r}\n"
                f"STYLE = {params['style']!r}\n"
                "def kernel(inputs, outputs):\n    np.maximum(inputs[0], 0, out=outputs[0])\n")


@hookimpl
def kevolve_register_targets(registry):
    backend = FakeBackend()
    registry.add(FAKE, backend)
    registry.add(FAKE_TINY, backend)
    registry.add(FAKE_COUNTERS, backend)

"""What runs inside the isolated worker process: load, check, time, profile, diagnose one built candidate.

The parent sends a task (plain data) and receives stage markers and one result dict over a pipe. Anything
the candidate does to this process (hang, crash, memory blow-up) is seen by the parent as such.
"""

from __future__ import annotations

import fcntl
import math
import os
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kevolve.backend.runner import Judge
from kevolve.backend.scratch import PLUMBING as SCRATCH_PLUMBING
from kevolve.harness import baselines, checks, launchers, unseen, watch
from kevolve.harness import evaluation as ev
from kevolve.harness.confine import kernel_thread
from kevolve.harness.throughput import WAITING_FOR_DEVICE
from kevolve.harness.variation import InputVariation

#: ATen ops that compute nothing: another view of the same memory (a runner handing a kernel raw buffers, e.g.
#: ``tensor.numpy()``, dispatches these) or uninitialised memory (a kernel's scratch space, allocated on the host
#: like its outputs)
_NOT_COMPUTING = {"aten.detach.default", "aten.alias.default", "aten.view.default", "aten.as_strided.default",
                  "aten._reshape_alias.default", "aten.empty.memory_format", "aten.empty_strided.default",
                  "aten.new_empty.default", "aten.new_empty_strided.default"}


class _TorchCallRecorder(TorchDispatchMode):
    """Records every computing ATen op dispatched while a kernel runs: a kernel must not hand its work to
    PyTorch. Ops whose nearest caller outside torch is one of the runner's ``plumbing`` modules are the
    language runtime moving arguments, not the kernel computing, and are let through."""

    def __init__(self, plumbing: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.ops: list[str] = []
        #: every op it saw, plumbing and views included, by the profiler's name (``aten::mul``)
        self.seen: Counter[str] = Counter()
        self.plumbing = plumbing

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen[func._schema.name] += 1
        if str(func) not in _NOT_COMPUTING and not self._from_plumbing():
            self.ops.append(str(func))
        return func(*args, **(kwargs or {}))

    def _from_plumbing(self) -> bool:
        if not self.plumbing:
            return False
        frame = sys._getframe(2)
        while frame is not None:
            if launchers.is_kernel(frame.f_code):  # whatever name its module gives itself
                return False
            module = frame.f_globals.get("__name__", "")
            if module != __name__ and module.split(".")[0] != "torch":
                return module.startswith(self.plumbing)
            frame = frame.f_back
        return False


class Rejected(Exception):
    def __init__(self, status: str, stage: str, reason: str, evidence: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.status, self.stage, self.reason, self.evidence = status, stage, reason, evidence or {}


@contextmanager
def exclusive_device(runner, report: Callable[[str], None]):
    """Hold the device alone from the correctness check to the profile: several workers may share one
    accelerator (a search's next candidate getting ready, other searches), but no two run on it at once. A file
    lock per device (:meth:`~kevolve.backend.runner.Runner.device_key`) under kevolve's home, so it spans
    processes; a worker that waits for it says so (its time-out is paused meanwhile, see harness/isolation.py).
    A device without a key (the host's cores) is not locked."""
    key = runner.device_key()
    if key is None:
        yield
        return
    from kevolve.paths import home

    path = home() / "locks"
    path.mkdir(exist_ok=True)
    with open(path / f"{key.replace(':', '_').replace('/', '_')}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            report(WAITING_FOR_DEVICE)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class TimingInputs:
    """Each timing round's fresh inputs. Drawing them is host work (0.6 s of a softmax candidate's 1.3 s of
    timing on a lent H200), so as many rounds' as fit in :data:`PREDRAWN_BYTES` are drawn before the worker holds
    the device; the rest are drawn in their rounds."""

    def __init__(self, problem, rounds: int) -> None:
        self.problem = problem
        self.gen = torch.Generator().manual_seed(_seed_from_os())
        first = problem.make_inputs(problem.dims, self.gen)
        size = max(1, sum(t.nbytes for t in first))
        self._drawn = [first] + [problem.make_inputs(problem.dims, self.gen)
                                 for _ in range(min(rounds, PREDRAWN_BYTES // size) - 1)]

    def next(self) -> list[torch.Tensor]:
        return self._drawn.pop(0) if self._drawn else self.problem.make_inputs(self.problem.dims, self.gen)


#: host memory the timing rounds' inputs may take when drawn ahead (:class:`TimingInputs`)
PREDRAWN_BYTES = 1 << 30


def call_watched(kernel: Callable, runner: Any, inputs: list, outputs: list,
                 check_calls: bool = False) -> tuple[list[str], list[str]]:
    """Call a kernel with every ATen op it dispatches recorded (and any that computed where the recording could
    not see it: harness/unseen.py) and, with ``check_calls``, every call its file's own code makes checked
    (harness/launchers.py), then wait for the device. Returns those ops (empty for a kernel that computes by
    itself; the harness's plumbing modules are not counted) and the calls outside what a launcher may make.
    Checking calls sees every Python call of the thread (a Triton kernel run by the interpreter ran 3-7x
    slower), so the harness asks for it at its small shapes only; the ops are watched at every checked call."""
    recorder = _TorchCallRecorder((*runner.plumbing_modules, *SCRATCH_PLUMBING))
    with launchers.calls_checked(runner.runtime_packages) if check_calls else nullcontext([]) as calls, \
            unseen.watched() as profiled, recorder:
        kernel(inputs, outputs)
    runner.synchronize()
    hidden = [f"{name} (out of the recording's sight)" for name in profiled.unseen(recorder.seen)]
    return recorder.ops + hidden, calls + launchers.refused()


def reject_what_it_called(torch_ops: list[str], calls: list[str], stage: str, where: str = "") -> None:
    """What a watched call (:func:`call_watched`) saw rejects the kernel: a call its file's code may not make, or
    torch computing for it."""
    if calls:
        raise Rejected(ev.REJECTED, stage, f"{outside_launcher_reason(calls)}{where}", {"calls": calls[:20]})
    if torch_ops:
        raise Rejected(ev.REJECTED, stage, f"{torch_calls_reason(torch_ops)}{where}", {"torch_ops": torch_ops[:20]})


def outside_launcher_reason(calls: list[str]) -> str:
    return f"not a kernel: its file's code {'; '.join(dict.fromkeys(calls[:4]))}, outside what a launcher may call"


def torch_calls_reason(ops: list[str]) -> str:
    return f"calls torch to compute ({', '.join(sorted(set(ops))[:5])})"


def _seed_from_os() -> int:
    return int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)


def check_correctness(problem, kernel: Callable, runner, config: dict[str, Any], report: Callable[[str], None]) -> None:
    """Fresh inputs per call, each shape called ``calls_per_shape`` times, outputs poisoned before every call,
    inputs compared bit for bit afterwards, torch calls during the kernel recorded."""
    names = list(getattr(getattr(problem, "op", None), "inputs", ()))
    previous: list[torch.Tensor] | None = None
    round_ = 0
    shapes = problem.check_dims()
    for dims in shapes:
        for call in range(config["calls_per_shape"]):
            report(f"correctness {dims}")
            gen = torch.Generator().manual_seed(_seed_from_os())
            inputs = [t.to(runner.device) for t in problem.make_inputs(dims, gen)]
            pristine = [t.clone() for t in inputs]
            outputs = checks.allocate_poisoned(_shaped(problem.output_specs(inputs)), round_, runner.device)
            try:
                small = dims != problem.dims or (len(shapes) == 1 and call == 0)  # see call_watched
                torch_ops, calls = call_watched(kernel, runner, inputs, outputs, check_calls=small)
            except Rejected:
                raise
            except Exception as exc:
                raise Rejected(ev.RUNTIME_ERROR, "correctness", f"kernel raised {type(exc).__name__}: {exc}",
                               {"traceback": traceback.format_exc(), "dims": dims})
            reject_what_it_called(torch_ops, calls, "correctness")
            modified = checks.changed_inputs(pristine, inputs, names)
            if modified:
                raise Rejected(ev.REJECTED, "correctness", f"modifies its input: {modified}", {"dims": dims})
            # the answer is computed after the kernel's call: while it runs there is none in this process to find
            expected = [t.to(runner.device) for t in checks.expected(problem, pristine)]
            tol = problem.tolerance(problem.dtype)
            mismatch = checks.first_mismatch(outputs, expected, tol, round_)
            if mismatch is not None:
                index, bad = mismatch
                out = outputs[index]
                stale = previous is not None and index < len(previous) and previous[index].shape == out.shape \
                    and bool(checks.bits_equal(out, previous[index]).all())
                reason = ("returns a stale result: output equals the previous call's output, not this call's"
                          if stale else f"output {index}: {bad['reason']}")
                raise Rejected(ev.WRONG, "correctness", reason, {**bad, "dims": dims, "output": index})
            previous = [o.clone() for o in outputs]
            round_ += 1


def audit_kernel(problem, kernel: Callable, runner) -> str:
    """The runner's audit of one call at the last checked shape (where the kernel has compiled and tuned): a rule
    it breaks rejects the candidate; returns why it must be timed by the host's clock, or "". The call's tensors
    are drawn only for a runner that has something to audit."""

    def case() -> tuple[list[torch.Tensor], list[torch.Tensor], Judge]:
        gen = torch.Generator().manual_seed(_seed_from_os())
        inputs = [t.to(runner.device) for t in problem.make_inputs(problem.check_dims()[-1], gen)]
        pristine = [t.clone() for t in inputs]
        outputs = checks.allocate_poisoned(_shaped(problem.output_specs(inputs)), 0, runner.device)

        def judge(written: list[torch.Tensor]) -> str | None:
            mismatch = checks.first_mismatch(written, checks.expected(problem, pristine),
                                             problem.tolerance(problem.dtype), 0)
            return None if mismatch is None else f"output {mismatch[0]}: {mismatch[1]['reason']}"

        return inputs, outputs, judge

    try:
        audit = runner.audit(kernel, case)
    except Exception as exc:
        raise Rejected(ev.RUNTIME_ERROR, "audit", f"kernel raised {type(exc).__name__} while audited: {exc}",
                       {"traceback": traceback.format_exc()})
    if audit.violations:
        raise Rejected(ev.REJECTED, "audit", "; ".join(audit.violations[:4]), {"violations": audit.violations})
    return audit.host_clock


def _calibrate(thunk: Callable, runner, sample_s: float) -> int:
    """How many calls make one timed sample at least ``sample_s`` long (after a warm-up call)."""
    thunk()
    runner.synchronize()
    start = time.perf_counter()
    thunk()
    runner.synchronize()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, min(10_000, math.ceil(sample_s / once)))


def register_timed_op(problem, kernel: Callable, runner, task: dict[str, Any]) -> Callable:
    """The kernel as the torch op a user gets (``result.as_torch_op()``), registered on the worker's own thread:
    the op's native path may be compiled on the way, by running the C++ compiler (harness/confine.py)."""
    from kevolve.delivery.op import op_name, register_kernel

    return register_kernel(problem, kernel, runner.device, op_name(problem, task["target"], task["source_hash"]),
                           graphs="not checked (the harness's copy of the op)")


def time_candidate(problem, kernel: Callable, op: Callable, runner, config: dict[str, Any], rounds: TimingInputs,
                   compiled: dict[str, Callable], host_clock: bool = False) -> tuple[dict, dict, Callable, list]:
    """Timings and speedups of the kernel against eager and the ``compiled`` baselines (ready to call,
    :func:`baselines.prepare_compiled`), the kernel's thunk and the tensors it uses. ``op`` is the kernel as the
    torch op a user gets (:func:`register_timed_op`).

    What is timed is the op a user gets (result.as_torch_op()): output shapes, allocation (as eager pays it), any
    read that sizes an output, and the launch. Round by round, the kernel's sample, then the baselines', on fresh
    inputs each round (each contender called once untimed on them, just before its own sample) and sample lengths
    that vary at random. No answer to a round's inputs exists in the process before the kernel's timed calls on
    them (the baselines run after), and before each timed call one element of each varied input changes
    (harness/variation.py), so no call sees an input again. A kernel that behaves while checked and cheats while
    timed (by the outputs' poison, by counting calls, by remembering an input's answer) is caught by the check of
    each round's last timed call, whose outputs are copied the moment the sample ends and compared with the
    reference computed after it; a thread still computing after the call returned is caught by watching the
    process's other threads for a moment; a child process started while timed, by looking for one; torch
    computing once the checks are behind, by one more call watched like a checked one after the timed calls of
    a majority of the rounds."""
    inputs: list[torch.Tensor] = []
    caller: list[torch.Tensor] = []
    returned: list[Any] = [None]

    def draw() -> None:
        inputs[:] = [t.to(runner.device) for t in rounds.next()]
        caller[:] = inputs[: len(inputs) - len(problem.extra_inputs())]

    def run_kernel() -> None:
        # the last call's outputs freed before this one, as the baselines' are (their results are dropped): kept,
        # they took another block, and a 16 MiB exp's inputs and outputs no longer fitted the CPU's cache (kernel
        # 0.67-0.73 ms timed against 0.48-0.53 ms freed, eager 1.35 ms either way)
        returned[0] = None
        returned[0] = op(*caller)

    draw()
    thunks: dict[str, Callable] = {"kernel": run_kernel, "eager": lambda: problem.reference(inputs)}
    for name, fn in compiled.items():
        thunks[name] = lambda fn=fn: fn(*inputs)
    inner = {name: _calibrate(thunk, runner, config["sample_s"]) for name, thunk in thunks.items()}
    known_children = watch.children()
    rng = random.Random(_seed_from_os())
    tol = problem.tolerance(problem.dtype)
    baselines_only = {name: thunk for name, thunk in thunks.items() if name != "kernel"}
    # a call that reads the device to size its outputs waits for it: a loop of such calls pays its host side
    # in full, which device timers would hide, so it is timed as the loop runs (kernel and baselines alike)
    host_clock = host_clock or problem.value_sized
    samples: dict[str, list[float]] = {name: [] for name in thunks}
    # a majority of the rounds, drawn at random, end with a watched call: a kernel that lets torch compute in
    # enough rounds to move the median meets one of them
    watched_rounds = set(rng.sample(range(config["repeats"]), min(config["repeats"], config["repeats"] // 2 + 1)))
    for round_ in range(config["repeats"]):
        draw()  # the first round too: calibration computed the baselines' answers to the inputs it used
        vary = InputVariation([caller[i] for i in problem.varied_inputs(caller)], rng)
        # one untimed call on the new inputs: a caller's loop has its allocator blocks and kernel specialisations
        # ready, and jagged inputs change sizes every round (jagged_truncate on a lent H200: 1.01x eager timed
        # cold against the 1.26x a caller's loop got; 1.15x against 1.14x warmed)
        _warm([run_kernel], runner)
        lengths = {name: max(1, round(n * rng.uniform(0.75, 1.25))) for name, n in inner.items()}
        got = runner.time_interleaved({"kernel": run_kernel}, repeats=1, inner={"kernel": lengths["kernel"]},
                                      host_clock=host_clock, before_call=vary)
        outputs = [o.clone() for o in _as_list(returned[0])]
        busy = watch.other_threads_busy(config["quiet_s"])
        if busy:
            raise Rejected(ev.REJECTED, "timing", f"threads of the process kept computing after the kernel's timed "
                           f"calls returned ({busy * 1e3:.1f} ms of CPU in the last {config['quiet_s'] * 1e3:g} ms, "
                           f"busy for {watch.BUSY_WINDOWS} windows): its work was not done when the clock stopped",
                           {"busy_s": busy})
        started = watch.children() - known_children
        if started:
            raise Rejected(ev.REJECTED, "timing", f"started a process while timed (pids {sorted(started)})")
        mismatch = checks.first_mismatch(outputs, checks.expected(problem, inputs), tol, 1)
        if mismatch is not None:
            index, bad = mismatch
            raise Rejected(ev.WRONG, "timing", timed_mismatch_reason(index, bad), {**bad, "output": index})
        if round_ in watched_rounds:
            _watch_one_more(problem, kernel, runner, inputs, vary)
        _warm(baselines_only.values(), runner)
        got.update(runner.time_interleaved(baselines_only, repeats=1, host_clock=host_clock, before_call=vary,
                                           inner={name: lengths[name] for name in baselines_only}))
        for name, values in got.items():
            samples[name] += values
    timings = {name: ev.Timing.of(s) for name, s in samples.items()}
    speedups = {name: ev.Speedup.of(s, samples["kernel"]) for name, s in samples.items() if name != "kernel"}
    return timings, speedups, run_kernel, [inputs, _as_list(returned[0])]


#: a timed call's mismatch this small (at most this many times the tolerance, in at most this share of the
#: outputs, all written) reads as numerics at the edge of the tolerance, not as a kernel that stops computing
EDGE_TIMES_TOLERANCE, EDGE_SHARE = 10.0, 1e-3


def timed_mismatch_reason(index: int, bad: dict[str, Any]) -> str:
    """Why a timed call's outputs were wrong, in words that fit the evidence: a few outputs just past the
    tolerance on inputs the checks did not draw (matmul_transposed_a, K=8192 in float32 on a lent H200: 1 of
    1048576) is not the same finding as a kernel that computes only while checked."""
    worst = bad.get("worst_error_over_tolerance", math.inf)
    if not bad.get("unwritten") and worst <= EDGE_TIMES_TOLERANCE and \
            bad["mismatched"] <= EDGE_SHARE * bad["total"]:
        return (f"a timed call's output {index}: {bad['reason']}, at most {worst:.2f}x the tolerance: its numerics "
                "sit at the edge of the tolerance on inputs the checks did not draw")
    return (f"a timed call's output {index}: {bad['reason']} (the checked calls were right: it computes only while "
            "checked, or hands back answers it remembered)")


def _watch_one_more(problem, kernel: Callable, runner, inputs: list[torch.Tensor], vary: Callable[[], None]) -> None:
    """One more call after a round's timed calls, on its inputs varied once more, watched as a checked call is
    (its ATen ops, its answer): the sample's length is drawn at random, so the kernel cannot tell this call from
    a timed one, and one that lets torch compute once the checks are behind it is caught there."""
    vary()
    outputs = checks.allocate_poisoned(_shaped(problem.output_specs(inputs)), 1, runner.device)
    reject_what_it_called(*call_watched(kernel, runner, inputs, outputs), "timing", ", in a call among the timed ones")
    mismatch = checks.first_mismatch(outputs, checks.expected(problem, inputs), problem.tolerance(problem.dtype), 1)
    if mismatch is not None:
        index, bad = mismatch
        raise Rejected(ev.WRONG, "timing", f"a call among the timed ones, output {index}: {bad['reason']}",
                       {**bad, "output": index})


def _warm(thunks: Iterable[Callable], runner) -> None:
    for thunk in thunks:
        thunk()
    runner.synchronize()


def _reject_refused() -> None:
    """What the audit hook refused the kernel file's code while it loaded (harness/launchers.py) rejects it."""
    refused = launchers.refused()
    if refused:
        raise Rejected(ev.REJECTED, "load", f"not a kernel: {'; '.join(refused[:4])}", {"refused": refused})


def _check_process(clocks: dict[str, Any], stage: str, children: bool = True) -> None:
    """The candidate left the clocks the timing reads as they were, and (before any baseline is compiled, whose
    compile workers are the worker's children too) started no process."""
    changed = watch.changed_clocks(clocks)
    if changed:
        raise Rejected(ev.REJECTED, stage, f"changes the clock: {', '.join(changed)} was replaced",
                       {"clocks": changed})
    started = watch.children() if children else set()
    if started:
        raise Rejected(ev.REJECTED, stage, f"started a process that is still running (pids {sorted(started)})",
                       {"pids": sorted(started)})


def _as_list(outputs: Any) -> list[torch.Tensor]:
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def _shaped(specs: list[tuple[tuple[int, ...], torch.dtype]]) -> list[torch.Tensor]:
    """Meta tensors of these shapes and dtypes: what the outputs will be, with no values."""
    return [torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in specs]


def run_task(task: dict[str, Any], report: Callable[[str], None]) -> dict[str, Any]:
    from kevolve.backend.profiler import ProfileRequest, RooflineProfiler, roofline_floor
    from kevolve.backend.toolchain import BuildResult
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.problem import dtype_name
    from kevolve.problems.rebuild import problem_from_spec

    started = time.perf_counter()
    manager = adopt_bootstrap(task["bootstrap"])
    registered = manager.target(task["target"])
    backend, spec = registered.backend, registered.spec
    problem = problem_from_spec(task["problem"], manager.ops.get)
    runner = backend.runner(spec)
    build = BuildResult(**task["build"])
    config = task["config"]
    result: dict[str, Any] = {"resources": build.resources}
    clocks = watch.clock_identity()
    confined = kernel_thread(runner.confines_kernel)
    try:
        runner.start_device()
        timed, note = backend.timing(spec)
        timing = config["time"] and timed
        rounds = TimingInputs(problem, config["repeats"] + 1) if timing else None
        compiled: dict[str, Callable] = {}
        untimed: dict[str, str] = {}
        if timing and baselines.any_compiled(config["baselines"]):
            report("compile baselines")  # host work: done before the device is held (harness/baselines.py)
            compiled, untimed = confined.run(lambda: baselines.prepare_compiled(
                config["baselines"], problem, task, runner, config["compile_limit_s"]))
        confined.seal()  # before the kernel's first line runs (harness/confine.py)
        report("load")
        before = watch.threads()
        try:
            kernel = confined.run(lambda: runner.load(build))
        except Exception as exc:
            _reject_refused()  # the audit hook stopped its code: the rule is the reason, not the error it raised
            raise Rejected(ev.RUNTIME_ERROR, "load", f"could not load the kernel: {type(exc).__name__}: {exc}",
                           {"traceback": traceback.format_exc()})
        _reject_refused()
        new_threads = watch.threads() - before
        if new_threads:  # a thread of its own from the start: work that can go on while the clock is stopped
            raise Rejected(ev.REJECTED, "load", f"started {len(new_threads)} thread(s) when loaded; a kernel's "
                           "work is done by its call (threads a parallel region starts are fine)",
                           {"threads": len(new_threads)})
        with exclusive_device(runner, report):
            confined.run(lambda: check_correctness(problem, kernel, runner, config, report))
            report("audit")
            clock_reason = confined.run(lambda: audit_kernel(problem, kernel, runner))
            _check_process(clocks, "correctness")
            outside = getattr(kernel, "outside_contract", lambda: [])()  # what it ran, where the loader can tell
            if outside:
                raise Rejected(ev.REJECTED, "correctness", "not a kernel: outside its language's contract: "
                               + "; ".join(outside[:8]), {"foreign_calls": outside})
            if not timing:
                if not timed:
                    result.update(untimed=note, **_estimate(problem, backend, spec, build, task))
                return {**result, "status": ev.OK, "stage": "correctness", "wall_s": time.perf_counter() - started}
            result["timing_note"] = "; ".join(n for n in (
                note, clock_reason and f"timed by the host's clock: {clock_reason}",
                confined.unconfined and f"the kernel ran unconfined ({confined.unconfined})")
                if n)
            report("timing")
            op = register_timed_op(problem, kernel, runner, task)
            timings, speedups, run_kernel, keep_alive = confined.run(lambda: time_candidate(
                problem, kernel, op, runner, config, rounds, compiled, host_clock=bool(clock_reason)))
            _check_process(clocks, "timing", children=False)
            facts = backend.facts(spec)
            inputs, outputs = keep_alive
            nbytes = problem.bytes_moved(problem.dims, inputs, outputs, facts.memory_granule_bytes)
            dtype = dtype_name(problem.dtype)
            floor = roofline_floor(problem.flops(problem.dims), nbytes, dtype, facts)
            result.update(timings={k: vars(v) for k, v in timings.items()},
                          speedups={k: vars(v) for k, v in speedups.items()}, untimed_baselines=untimed)
            if timings["kernel"].median < floor * config["plausibility"]:
                raise Rejected(ev.REJECTED, "timing",
                               f"implausible: {timings['kernel'].median * 1e6:.2f} us is faster than the roofline floor "
                               f"{floor * 1e6:.2f} us for this problem on {spec.name}",
                               {"floor_s": floor, "median_s": timings["kernel"].median})
            if not config["profile"]:  # a re-timing of a kernel the search has profiled (api._run keeps that)
                return {**result, "status": ev.OK, "stage": "done", "wall_s": time.perf_counter() - started}
            report("profile")
            request = ProfileRequest(run=lambda: confined.run(run_kernel), time_s=timings["kernel"].median,
                                     flops=problem.flops(problem.dims), bytes=nbytes, dtype=dtype, facts=facts,
                                     parameters=task.get("parameters", {}), resources=build.resources,
                                     cold_cache=runner.cold_cache, artifact=build.artifact, language=build.language,
                                     problem_spec=task["problem"], bootstrap=task["bootstrap"])
            profiler = backend.profiler(spec)
            if profiler.costly and config["counters_from"] is not None and "eager" in speedups and \
                    speedups["eager"].median < config["counters_from"]:
                profiler = RooflineProfiler()
            metrics = profiler.profile(request)
        diagnosis = backend.classifier(spec).classify(metrics, facts, profiler.name)
        result.update(status=ev.OK, stage="done", diagnosis=diagnosis.to_dict())
    except Rejected as rej:
        result.update(status=rej.status, stage=rej.stage, reason=rej.reason, evidence=_plain(rej.evidence))
    finally:
        confined.close()
    result["wall_s"] = time.perf_counter() - started
    return result


def _estimate(problem, backend, spec, build, task: dict[str, Any]) -> dict[str, Any]:
    """The backend's static cost model for a kernel that cannot be timed here, and the diagnosis it implies."""
    from kevolve.backend.profiler import ProfileRequest
    from kevolve.problems.problem import dtype_name

    estimator = backend.estimator(spec)
    if estimator is None:
        return {}
    dims = problem.dims
    inputs = problem.make_inputs(dims, torch.Generator().manual_seed(0))
    outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in problem.output_specs(inputs)]
    facts = backend.facts(spec)
    request = ProfileRequest(run=lambda: None, time_s=0.0, flops=problem.flops(dims),
                             bytes=problem.bytes_moved(dims, inputs, outputs, facts.memory_granule_bytes),
                             dtype=dtype_name(problem.dtype),
                             facts=facts, parameters=task.get("parameters", {}), resources=build.resources)
    metrics = estimator.estimate(request)
    diagnosis = backend.classifier(spec).classify(metrics, facts, estimator.name)
    return {"estimate": _plain(metrics), "diagnosis": diagnosis.to_dict()}


def _plain(value: Any) -> Any:
    """Evidence must cross a pipe and land in JSON: keep it to plain data."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)

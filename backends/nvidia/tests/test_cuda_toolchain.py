"""CUDA C++ on the NVIDIA targets, where no GPU is needed: NVRTC compiles the recipes' kernels for sm_90 and
sm_80 and ptxas's report becomes the resources; compile errors come back verbatim with a command that repeats
them; the scan keeps cupy to compiling and launching; and without a GPU, CUDA candidates are neither offered
by the template synthesizer nor run."""

from __future__ import annotations

import subprocess

import pytest

pytest.importorskip("kevolve_nvidia")
pytest.importorskip("cupy")

from kevolve import diagnosis as d  # noqa: E402
from kevolve.api import evaluate, resolve_problem  # noqa: E402
from kevolve.errors import CompileError  # noqa: E402
from kevolve.harness import evaluation as ev  # noqa: E402
from kevolve.harness.pipeline import HarnessConfig  # noqa: E402
from kevolve.harness.scan import forbidden_uses  # noqa: E402
from kevolve.plugins import get_manager  # noqa: E402
from kevolve.synthesis.expr import POINTWISE  # noqa: E402
from kevolve_nvidia import cuda_toolchain  # noqa: E402
from kevolve_nvidia.backend import PROFILER_ENV  # noqa: E402
from kevolve_nvidia.cuda_recipes import CudaPointwise, CudaRows  # noqa: E402
from kevolve_nvidia.cuda_toolchain import FORBIDDEN, cuda_version  # noqa: E402
from kevolve_nvidia.ncu import DRAM_BYTES, find_ncu  # noqa: E402
from kevolve_nvidia.resources import blocks_per_sm  # noqa: E402

if cuda_version() == "none":
    pytest.skip("cupy cannot load NVRTC here", allow_module_level=True)


def toolchain(target: str):
    registered = get_manager().target(target)
    return registered.backend.toolchain(registered.spec, "cuda"), registered


def kernel_file(code: str, launcher: str = "def kernel(inputs, outputs):\n    pass\n") -> str:
    return f'import cupy\n\nSOURCE = r"""\n{code}\n"""\nOPTIONS = ("--std=c++17",)\n' \
           f"_module = cupy.RawModule(code=SOURCE, options=OPTIONS)\n\n\n{launcher}"


@pytest.mark.parametrize("target", ["nvidia_h100", "nvidia_a100"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_pointwise_kernels_compile_without_spills(target, dtype, tmp_path):
    chain, registered = toolchain(target)
    recipe = CudaPointwise()
    for op in POINTWISE:
        problem = resolve_problem(op, {"n": 1 << 20}, dtype, None)
        for params in ({"THREADS": 256, "ITEMS": 4, "VEC": 4}, {"THREADS": 1024, "ITEMS": 8, "VEC": 1}):
            build = chain.build(recipe.render(problem, params), tmp_path / f"{op}{params['THREADS']}", problem)
            r = build.resources
            assert forbidden_uses(recipe.render(problem, params), FORBIDDEN) == []
            # with VEC > 1 the file also carries the one-value kernel for calls the vector one cannot take
            assert r["kernels"] == (2 if params["VEC"] > 1 else 1), (op, r)
            assert 4 <= r[d.REGISTERS] <= 64 and r[d.SPILL_BYTES] == 0, (op, r)
            # 1024-thread blocks: 32 warps, two blocks fill an SM's 64 warp slots when registers allow
            assert r["num_warps"] == params["THREADS"] // 32
            assert 0 < r[d.OCCUPANCY] <= 1
            assert f"--arch sm_{registered.spec.facts.extra['gpu']['arch']}" in build.command


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_row_kernels_compile_at_every_width_and_the_check_shapes(dtype, tmp_path):
    """Every row op at narrow, middle and wide rows (registers only, registers plus a second read) compiles
    for sm_90 with the block size it declares; the default moves 16 bytes per access and puts several narrow
    rows in a block."""
    chain, _ = toolchain("nvidia_h100")
    recipe = CudaRows()
    facts = get_manager().target("nvidia_h100").spec.facts
    for op in CudaRows.OPS:
        for cols in (64, 512, 1031, 4096):
            problem = resolve_problem(op, {"rows": 256, "cols": cols}, dtype, None)
            params = recipe.space(problem, facts).default()
            per_row = params["THREADS"] // params["ROWS"]
            assert per_row * params["ITEMS"] * params["VEC"] >= cols and params["ITEMS"] <= 16
            assert params["VEC"] * problem.dtype.itemsize == 16  # 16-byte accesses by default
            # a row that a warp holds at two 16-byte groups a lane shares its block with others
            assert (params["ROWS"] > 1) == (cols * problem.dtype.itemsize <= 32 * 2 * 16), (cols, params)
            source = recipe.render(problem, params)
            assert forbidden_uses(source, FORBIDDEN) == []
            r = chain.build(source, tmp_path / f"{op}{cols}", problem).resources
            assert r["num_warps"] == max(1, params["THREADS"] // 32) and r[d.SPILL_BYTES] <= 16, (op, cols, r)
            # a row on a lane group reduces by shuffles alone: no shared memory
            assert r["shared_bytes"] == (4 * max(1, params["THREADS"] // 32) if params["ROWS"] == 1 else 0)


def test_ptxas_report_gives_stack_shared_memory_and_occupancy(tmp_path):
    """A kernel that keeps a dynamically indexed array in local memory and 48 KiB of shared memory (the most
    a static array may take): the stack frame and the shared bytes are read back, and shared memory allows 4
    blocks per SM (228 KiB, 1 KiB reserved per block)."""
    code = r"""extern "C" __global__ void __launch_bounds__(128) busy(const float* x, float* y, long long n) {
    __shared__ float tile[12288];
    float local[64];
    const long long i = (long long)blockIdx.x * 128 + threadIdx.x;
    for (int k = 0; k < 64; ++k) local[k] = x[(i + k) % n];
    float s = 0.0f;
    for (int k = 0; k < 64; ++k) s += local[(k * 7 + (int)i) % 64];
    tile[threadIdx.x] = s;
    __syncthreads();
    if (i < n) y[i] = tile[(threadIdx.x + 1) % 128];
}"""
    chain, registered = toolchain("nvidia_h100")
    r = chain.build(kernel_file(code), tmp_path, None).resources
    gpu = registered.spec.facts.extra["gpu"]
    assert r["shared_bytes"] == 12288 * 4 and r["stack_bytes"] >= 256
    assert r["blocks_per_sm_by_shared_memory"] == 4
    limits = blocks_per_sm(int(r[d.REGISTERS]), 4, 12288 * 4, gpu)
    assert r[d.OCCUPANCY] == pytest.approx(min(limits.values()) * 4 / gpu["max_warps_per_sm"])


def test_compile_errors_are_verbatim_and_the_repro_command_repeats_them(tmp_path):
    chain, _ = toolchain("nvidia_h100")
    source = kernel_file('extern "C" __global__ void broken(float* y) { y[0] = undefined_thing; }')
    with pytest.raises(CompileError) as caught:
        chain.build(source, tmp_path, None)
    assert 'identifier "undefined_thing" is undefined' in caught.value.log
    assert "sm_90" in str(caught.value)
    repro = subprocess.run(caught.value.repro, shell=True, capture_output=True, text=True, timeout=120)
    assert repro.returncode == 1 and 'identifier "undefined_thing" is undefined' in repro.stderr


def test_without_cupy_the_build_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(cuda_toolchain, "cuda_version", lambda: "none")
    chain, _ = toolchain("nvidia_h100")
    assert not chain.available()[0]
    with pytest.raises(CompileError, match=r"pip install 'kevolve-nvidia\[cuda\]'"):
        chain.build(kernel_file('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }'), tmp_path, None)


@pytest.mark.parametrize("source, why", [
    ('SOURCE = r"""x"""', "must be a literal"),
    ('SOURCE = "a" + "b"', "must be a literal"),
    ("import cupy\n", "sets SOURCE"),
    ('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }', "not Python"),
])
def test_files_that_do_not_follow_the_contract_are_told_what_to_change(source, why, tmp_path):
    chain, _ = toolchain("nvidia_h100")
    with pytest.raises(CompileError, match=why) as raised:
        chain.build(source.replace('r"""x"""', "SOURCE"), tmp_path, None)
    assert str(tmp_path / "kernel.py") in raised.value.repro  # the command that shows the failure again


@pytest.mark.parametrize("snippet", [
    "cupy.exp(x)", "cupy.asarray(x).sum()", "import cupy as cp", "from cupy import RawModule", "import cupyx",
    "cublasSgemm(handle)", "thrust::reduce(a, b)", "cub::DeviceReduce::Sum(t)", "import numpy", "x.item()",
    "import torch", "import triton",
])
def test_scan_keeps_cupy_to_compiling_and_launching(snippet):
    recipe = CudaPointwise()
    source = recipe.render(resolve_problem("relu", {"n": 1024}, "float32", None),
                           {"THREADS": 256, "ITEMS": 1, "VEC": 4})
    assert forbidden_uses(source, FORBIDDEN) == []
    assert forbidden_uses(source + "\n" + snippet + "\n", FORBIDDEN), snippet


def test_cuda_recipes_are_offered_only_where_a_gpu_can_check_them(monkeypatch):
    registered = get_manager().target("nvidia_h100")
    backend = registered.backend
    monkeypatch.setattr(type(backend), "gpu_here", lambda self: None)
    assert not [r for r in backend.recipes(registered.spec) if r.language == "cuda"]
    monkeypatch.setattr(type(backend), "gpu_here", lambda self: "sm_90")
    assert [r.name for r in backend.recipes(registered.spec) if r.language == "cuda"] == ["cuda.pointwise",
                                                                                            "cuda.rows"]
    monkeypatch.setattr(cuda_toolchain, "cuda_version", lambda: "none")  # a GPU, but no cupy / NVRTC
    assert not [r for r in backend.recipes(registered.spec) if r.language == "cuda"]


def gpu_here() -> bool:
    return get_manager().target("nvidia_h100").backend.gpu_here() is not None


@pytest.mark.skipif(gpu_here(), reason="checks the machine without an NVIDIA GPU")
def test_a_cuda_file_evaluated_without_a_gpu_is_compiled_and_said_not_run(tmp_path, capsys):
    """`kevolve evaluate` on a CUDA file here: told apart from Triton by `import cupy`, compiled for sm_90 (its
    resources printed), then refused by the interpreter with the reason, not run as if it passed."""
    from kevolve.cli import main

    problem = resolve_problem("relu", {"n": 4096}, "float32", None)
    path = tmp_path / "relu_cuda.py"
    path.write_text(CudaPointwise().render(problem, {"THREADS": 256, "ITEMS": 2, "VEC": 4}))
    result = evaluate(path, "relu", target="nvidia_h100", dims={"n": 4096}, dtype="float32",
                      harness=HarnessConfig(timeout_s=120, workdir=str(tmp_path / "builds")))
    assert result.language == "cuda" and result.to_json()["resources"][d.REGISTERS] > 0
    assert result.evaluation.status == ev.RUNTIME_ERROR
    assert main(["evaluate", str(path), "--op", "relu", "--target", "h100", "--shape", "n=4096"]) == 1
    printed = capsys.readouterr().out
    assert "runtime_error" in printed and "run only on their GPU" in printed
    assert "resources: " in printed and "registers_per_thread" in printed and "occupancy 1" in printed


def test_the_launcher_takes_the_vector_kernel_only_where_it_can(monkeypatch):
    """The launchers' choice of kernel and grid, without a GPU: a stand-in cupy records each launch. An aligned
    call of a multiple of VEC takes the vector kernel; a view one value off (2 bytes) or an odd size the
    one-value kernel, on the grid for one value per access."""
    import sys
    import types

    import torch

    launches = []

    class Module:
        def __init__(self, code, options):
            pass

        def get_function(self, name):
            return lambda grid, block, args: launches.append((name, grid, block))

    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(RawModule=Module, uint64=int, int64=int,
                                                                   int32=int))

    def load(recipe, problem, params):
        namespace = {}
        exec(recipe.render(problem, params), namespace)
        return namespace["kernel"]

    relu = load(CudaPointwise(), resolve_problem("relu", {"n": 4096}, "bfloat16", None),
                {"THREADS": 256, "ITEMS": 2, "VEC": 8})
    x = torch.zeros(4097, dtype=torch.bfloat16)
    for args in ([x[:4096]], [x[1:]], [x[:4095]]):
        relu(args, [torch.empty(len(args[0]), dtype=torch.bfloat16)])
    assert launches == [("kv_relu", (1,), (256,)), ("kv_relu_scalar", (8,), (256,)), ("kv_relu_scalar", (8,), (256,))]
    launches.clear()
    rms = load(CudaRows(), resolve_problem("rms_norm", {"rows": 9, "cols": 512}, "bfloat16", None),
               {"THREADS": 128, "ITEMS": 1, "VEC": 8, "ROWS": 2})
    w = torch.zeros(513, dtype=torch.bfloat16)
    for weight in (w[:512], w[1:]):
        rms([torch.zeros(9, 512, dtype=torch.bfloat16), weight], [torch.empty(9, 512, dtype=torch.bfloat16)])
    assert launches == [("kv_rms_norm", (5,), (128,)), ("kv_rms_norm_scalar", (5,), (128,))]


@pytest.fixture
def roofline_profiler(monkeypatch):
    """These tests are about correctness: Nsight Compute would profile each evaluation in a process of its own
    (tens of seconds each); test_ncu_profiles_a_cuda_kernel covers it once."""
    monkeypatch.setenv(PROFILER_ENV, "roofline")


@pytest.mark.skipif(not gpu_here(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_pointwise_kernels_pass_the_harness_on_the_gpu(dtype, tmp_path, roofline_profiler):
    """The harness's full check (awkward shapes, fresh inputs, poisoned outputs) and timing, per op."""
    target = "nvidia_a100" if get_manager().target("nvidia_h100").backend.gpu_here() == "sm_80" else "nvidia_h100"
    for op in POINTWISE:
        problem = resolve_problem(op, {"n": 1 << 22}, dtype, None)
        path = tmp_path / f"{op}.py"
        path.write_text(CudaPointwise().render(problem, {"THREADS": 256, "ITEMS": 4, "VEC": 4}))
        result = evaluate(path, op, target=target, dims={"n": 1 << 22}, dtype=dtype,
                          harness=HarnessConfig(timeout_s=300, workdir=str(tmp_path / "builds")))
        assert result.evaluation.status == ev.OK, (op, result.evaluation.reason)


@pytest.mark.skipif(not gpu_here(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("op", CudaRows.OPS)
def test_row_kernels_pass_the_harness_on_the_gpu(op, dtype, tmp_path, roofline_profiler):
    """Each row op at its timing shape and the catalog's check shapes (1 column, 1031 columns: past the
    registers of a small block), registers-only and re-reading schedules, vector and one-value kernels, rows on
    a block, on part of a warp and on a whole warp."""
    target = "nvidia_a100" if get_manager().target("nvidia_h100").backend.gpu_here() == "sm_80" else "nvidia_h100"
    for cols, params in ((4096, None), (4096, {"THREADS": 128, "ITEMS": 4, "VEC": 4, "ROWS": 1}),
                         (256, None), (256, {"THREADS": 128, "ITEMS": 1, "VEC": 4, "ROWS": 8}),
                         (512, None), (512, {"THREADS": 128, "ITEMS": 2, "VEC": 4, "ROWS": 4})):
        problem = resolve_problem(op, {"rows": 2048, "cols": cols}, dtype, None)
        params = params or CudaRows().space(problem, get_manager().target(target).spec.facts).default()
        path = tmp_path / f"{op}{cols}{params['THREADS']}{params['ROWS']}.py"
        path.write_text(CudaRows().render(problem, params))
        result = evaluate(path, op, target=target, dims={"rows": 2048, "cols": cols}, dtype=dtype,
                          harness=HarnessConfig(timeout_s=300, workdir=str(tmp_path / "builds")))
        assert result.evaluation.status == ev.OK, (op, cols, params, result.evaluation.reason)


@pytest.mark.skipif(not gpu_here() or find_ncu() is None, reason="needs an NVIDIA GPU and Nsight Compute")
def test_ncu_profiles_a_cuda_kernel(tmp_path, monkeypatch):
    """The profiler's child process rebuilds a CUDA C++ call (not only a Triton one) and reads its counters."""
    monkeypatch.setenv(PROFILER_ENV, "ncu")
    problem = resolve_problem("rms_norm", {"rows": 4096, "cols": 4096}, "bfloat16", None)
    path = tmp_path / "rms_norm.py"
    path.write_text(CudaRows().render(problem, {"THREADS": 512, "ITEMS": 8, "VEC": 4, "ROWS": 1}))
    result = evaluate(path, "rms_norm", target="nvidia_h100", dims={"rows": 4096, "cols": 4096}, dtype="bfloat16",
                      harness=HarnessConfig(timeout_s=300, workdir=str(tmp_path / "builds")))
    diagnosis = result.evaluation.diagnosis
    assert result.evaluation.status == ev.OK and diagnosis.source == "ncu", result.evaluation.reason
    assert "profiler_error" not in diagnosis.metrics, diagnosis.metrics.get("profiler_error")
    # the counters are the kernel's: its registers as ptxas counted them, and it moved tens of MB (not all:
    # after the warm-up call part of the input is still in L2)
    # (the report's registers are the file's worst kernel: the vector kernel ran, the scalar one may use more)
    assert 0 < diagnosis.metrics[d.REGISTERS] <= result.evaluation.resources[d.REGISTERS], diagnosis.metrics
    assert diagnosis.metrics[DRAM_BYTES] > 2 * 4096 * 4096 * 2 / 4, diagnosis.metrics


@pytest.mark.skipif(not gpu_here(), reason="needs an NVIDIA GPU")
def test_a_cuda_kernel_follows_pytorchs_stream_into_a_cuda_graph():
    """Captured on a side stream: a launch on any other stream than PyTorch's would break the capture."""
    import torch
    from kevolve.delivery.op import torch_op

    problem = resolve_problem("relu", {"n": 1 << 20}, "float32", None)
    params = {"THREADS": 256, "ITEMS": 4, "VEC": 4}
    op = torch_op(problem, "nvidia_h100", CudaPointwise().render(problem, params), "cuda")
    x = torch.randn(1 << 20, device="cuda")
    op(x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        y = op(x)
    x.copy_(torch.randn(1 << 20, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, torch.relu(x))


@pytest.mark.skipif(not gpu_here(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("op", ["relu", "rms_norm"])
def test_calls_the_vector_kernel_cannot_take_run_the_one_value_kernel(op):
    """A tensor that starts off a 16-byte boundary (a view at an odd offset) or a size that is no multiple of
    the vector: the launcher takes the file's one-value kernel, and the results are still right."""
    import torch
    from kevolve.delivery.op import torch_op

    dims = {"n": 4096} if op == "relu" else {"rows": 8, "cols": 512}
    problem = resolve_problem(op, dims, "bfloat16", None)
    recipe = CudaPointwise() if op == "relu" else CudaRows()
    params = recipe.space(problem, get_manager().target("nvidia_h100").spec.facts).default()
    kernel = torch_op(problem, "nvidia_h100", recipe.render(problem, params), "cuda")
    inputs = [t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))]
    base = torch.zeros(inputs[0].numel() + 1, dtype=inputs[0].dtype, device="cuda")
    shifted = base[1:].view_as(inputs[0])
    shifted.copy_(inputs[0])
    assert shifted.data_ptr() % 16 != 0
    for args in ([shifted, *inputs[1:]], [inputs[0][..., :-1].contiguous(), *(t[:-1] for t in inputs[1:])]):
        expected = problem.reference(args)[0]
        tol = problem.tolerance(problem.dtype)
        torch.testing.assert_close(kernel(*args), expected, rtol=tol.rtol, atol=tol.atol)

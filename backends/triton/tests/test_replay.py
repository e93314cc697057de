"""What a Triton launch is recorded as, for replay from C (kevolve_triton.replay.encode): pointers become places in
the op's own tensors, scalars their bits as Triton's launcher passes them, and launches that cuLaunchKernel
alone cannot repeat are refused with the reason. The replay itself runs on a GPU (test_replay_gpu.py)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
import torch
from kevolve_triton.replay import INPUT, OUTPUT, SCRATCH, NotReplayable, encode, scalar_bits


def compiled(signature: dict, **metadata) -> SimpleNamespace:
    return SimpleNamespace(name="k", function=0xF00D, src=SimpleNamespace(signature=signature),
                           metadata=SimpleNamespace(**{"num_warps": 4, "warp_size": 32, "shared": 512,
                                                       "num_ctas": 1, **metadata}))


def test_pointers_are_places_in_the_ops_tensors_and_scalars_their_bits():
    x, out, scratch = torch.zeros(64), torch.zeros(32, dtype=torch.float64), torch.zeros(16, dtype=torch.uint8)
    kernel = compiled({"x": "*fp32", "out": "*fp64", "tmp": "*u8", "n": "i32", "BLOCK": "constexpr",
                       "eps": "fp32", "big": "i64"})
    record = encode([(kernel, 3, 2, 1, (x[8:], out, scratch, -5, 128, 1e-5, 1 << 40), 0)], [x], [out], [scratch])
    assert record[:3] == [1, 1, 16]  # one launch, one scratch buffer of 16 bytes
    assert record[3:10] == [0xF00D, 3, 2, 1, 128, 512, 6]  # function, grid, 4 warps of 32, shared, 6 params
    params = [record[10 + 4 * i: 14 + 4 * i] for i in range(6)]
    assert params[0] == [INPUT, 0, 32, int((x.data_ptr() + 32) % 16 == 0)]  # x[8:]: 32 bytes into input 0
    assert params[1][:3] == [OUTPUT, 0, 0] and params[2][:3] == [SCRATCH, 0, 0]
    assert params[3] == [0, 0, 0xFFFFFFFB, 0]  # -5 as an i32; the constexpr BLOCK is not passed
    assert params[4] == [0, 0, struct.unpack("<I", struct.pack("<f", 1e-5))[0], 0]
    assert params[5] == [0, 0, 1 << 40, 0]


@pytest.mark.parametrize("kind, value, bits", [
    ("i32", -1, 0xFFFFFFFF), ("u8", 300, 44), ("i1", True, 1), ("u64", (1 << 64) - 1, -1),
    ("fp16", 1.0, 0x3C00), ("bf16", 1.0, 0x3F80), ("fp64", -2.0, struct.unpack("<q", struct.pack("<d", -2.0))[0]),
])
def test_scalars_have_the_bits_tritons_launcher_passes(kind, value, bits):
    assert scalar_bits(kind, value) == bits


@pytest.mark.parametrize("signature, args, metadata, reason", [
    ({"p": "*fp32"}, lambda x: (torch.zeros(4),), {}, "points into memory the op does not own"),
    ({"a": "i64"}, lambda x: (x.data_ptr() + 4,), {}, "passes an address as an integer"),
    ({"p": "*fp32"}, lambda x: (x,), {"launch_pdl": True}, "launch_pdl is set"),
    ({"p": "*fp32"}, lambda x: (x,), {"num_ctas": 2}, "clusters of 2 CTAs"),
    ({"p": "*fp32"}, lambda x: (x,), {"global_scratch_size": 64}, "global_scratch_size is set"),
    ({"d": "tensordesc<fp32[16, 16]>"}, lambda x: (x,), {}, "is a tensordesc"),
    ({"p": "*fp32", "q": "*fp32"}, lambda x: (x,), {}, "1 arguments for a signature of 2"),
])
def test_launches_cuLaunchKernel_cannot_repeat_are_refused_with_the_reason(signature, args, metadata, reason):
    x = torch.zeros(8)
    with pytest.raises(NotReplayable, match=reason):
        encode([(compiled(signature, **metadata), 1, 1, 1, args(x), 0)], [x], [], [])


def test_what_a_launcher_does_with_torch_is_seen_allocations_apart_from_computation():
    from kevolve_triton.replay import Seen

    x = torch.randn(8)
    with Seen() as seen:
        temporary = x.new_empty(4)  # a temporary: the replay allocates one afresh
        x.view(2, 4), x[1:]  # views compute nothing
        x.zero_(), torch.zeros(3)  # values written by torch: a replay of the launches alone would not write them
    assert [t.data_ptr() for t in seen.allocated] == [temporary.data_ptr()]
    assert seen.torch_ops == {"zero_", "zeros"}


def test_launches_go_through_the_wrapper_meanwhile_and_are_counted():
    from kevolve_triton.replay import launches_through, python_launches
    from triton.compiler.compiler import CompiledKernel

    compiled = CompiledKernel.__new__(CompiledKernel)
    compiled._run = launcher = object()  # what Triton's launcher property gives once the handles are loaded
    compiled.module = None  # nothing loaded: nothing for its __del__ to unload
    with launches_through(lambda kernel, launch: (kernel, launch)):
        assert compiled.run == (compiled, launcher)
    with python_launches() as counted:
        assert compiled.run is launcher and compiled.run is launcher
    assert counted == [2] and compiled.run is launcher  # the property is Triton's own again

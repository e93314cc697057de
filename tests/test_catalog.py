"""The catalog: coverage, references that match independent implementations, shapes and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from kevolve.errors import ProblemError, UnknownOpError
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.problems.ops import HASH_MULTIPLIERS, HASH_SHIFTS

REQUIRED = {"add", "mul", "exp", "gelu", "silu", "sum", "amax", "softmax", "log_softmax", "layer_norm", "rms_norm",
            "matmul", "addmm_relu", "cumsum", "gather", "embedding_bag", "bucketize", "feature_hash",
            "keyed_feature_hash", "jagged_truncate", "dot_interaction", "target_attention"}


def problem(name, **kw):
    return CatalogProblem(get_manager().ops.get(name), **kw)


def test_catalog_covers_the_required_families():
    names = set(get_manager().ops.names())
    assert len(names) >= 20 and REQUIRED <= names


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_every_op_runs_at_every_check_shape(name):
    p = problem(name)
    assert len(p.check_dims()) >= 2
    for dims in p.check_dims()[:-1]:
        inputs = p.make_inputs(dims, torch.Generator().manual_seed(0))
        outputs = p.reference(inputs)
        assert [(tuple(o.shape), o.dtype) for o in outputs] == p.output_specs(inputs)
    assert p.bytes_moved(p.dims, inputs, outputs) > 0


def test_inputs_are_fresh_per_generator_seed():
    p = problem("softmax")
    a = p.make_inputs({"rows": 4, "cols": 8}, torch.Generator().manual_seed(1))[0]
    b = p.make_inputs({"rows": 4, "cols": 8}, torch.Generator().manual_seed(2))[0]
    assert not torch.equal(a, b)


def test_feature_hash_reference_matches_uint64_arithmetic():
    p = problem("feature_hash")
    ids = p.make_inputs({"n": 5000}, torch.Generator().manual_seed(0))[0]
    h = ids.numpy().view(np.uint64).copy()
    with np.errstate(over="ignore"):
        for multiplier, shift in zip(HASH_MULTIPLIERS, HASH_SHIFTS):
            h = h * np.uint64(multiplier)
            h = h ^ (h >> np.uint64(shift))
    expected = (h & np.uint64((1 << 63) - 1)) % np.uint64(p.attrs["num_buckets"])
    assert np.array_equal(p.reference([ids])[0].numpy(), expected.astype(np.int64))
    assert (ids < 0).any()  # negative ids are exercised


def _mix63_numpy(ids: torch.Tensor) -> np.ndarray:
    h = ids.numpy().view(np.uint64).copy()
    with np.errstate(over="ignore"):
        for multiplier, shift in zip(HASH_MULTIPLIERS, HASH_SHIFTS):
            h = h * np.uint64(multiplier)
            h = h ^ (h >> np.uint64(shift))
    return h & np.uint64((1 << 63) - 1)


def test_keyed_feature_hash_reference_hashes_each_feature_into_its_own_table():
    p = problem("keyed_feature_hash")
    dims = {"features": 40, "batch": 7, "pool": 30}
    ids, offsets, sizes = p.make_inputs(dims, torch.Generator().manual_seed(0))
    got = p.reference([ids, offsets, sizes])[0].numpy()
    h = _mix63_numpy(ids)
    for f in range(dims["features"]):
        lo, hi = int(offsets[f * dims["batch"]]), int(offsets[(f + 1) * dims["batch"]])
        assert np.array_equal(got[lo:hi], (h[lo:hi] % np.uint64(int(sizes[f]))).astype(np.int64)), f
    assert len(set(sizes.tolist())) > 5 and (ids < 0).any()  # many table sizes, negative ids
    empty = problem("keyed_feature_hash").make_inputs({"features": 30, "batch": 1, "pool": 1},
                                                      torch.Generator().manual_seed(0))[1]
    assert (empty[1:] == empty[:-1]).any()  # small batches draw empty features


def test_jagged_truncate_reference_matches_python_loops():
    p = problem("jagged_truncate", attrs={"k": 3})
    values, offsets = p.make_inputs({"batch": 50, "max_len": 8}, torch.Generator().manual_seed(0))
    out_values, out_offsets = p.reference([values, offsets])
    expected_values, expected_offsets = [], [0]
    for b in range(50):
        seq = values[offsets[b]:offsets[b + 1]].tolist()
        kept = seq[-3:] if seq else []
        expected_values += kept
        expected_offsets.append(expected_offsets[-1] + len(kept))
    assert out_values.tolist() == expected_values and out_offsets.tolist() == expected_offsets
    assert (offsets[1:] == offsets[:-1]).any()  # empty sequences are exercised


def test_bad_problem_arguments_say_what_to_do():
    with pytest.raises(UnknownOpError, match="Did you mean softmax"):
        get_manager().ops.get("sofmax")
    with pytest.raises(ProblemError, match="unknown"):
        problem("softmax", dims={"width": 3})
    with pytest.raises(ProblemError, match="positive integers"):
        problem("softmax", dims={"rows": 0})
    with pytest.raises(ProblemError, match="supports dtypes"):
        problem("feature_hash", dtype="float32")


def test_problem_key_separates_shapes_and_dtypes():
    keys = {problem("softmax").key(), problem("softmax", dims={"rows": 8}).key(),
            problem("softmax", dtype="bf16").key()}
    assert len(keys) == 3 and problem("softmax").key() == problem("softmax").key()


def _kernelbench(path, model: str, init: str = "[]"):
    """A KernelBench file of ``model`` (the class body's lines), called on one (4, 16) input, as a problem."""
    from kevolve.problems.kernelbench import KernelBenchProblem

    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n" + model
                    + "\ndef get_inputs():\n    return [torch.randn(4, 16)]\n\n"
                    f"def get_init_inputs():\n    return {init}\n")
    return KernelBenchProblem(path)


def test_kernelbench_file_is_a_problem(tmp_path):
    from kevolve.problems.kernelbench import KernelBenchProblem
    from kevolve.problems.rebuild import problem_from_spec

    p = _kernelbench(tmp_path / "scale.py", "    def __init__(self, n):\n        super().__init__()\n"
                     "        self.w = nn.Parameter(torch.randn(n))\n"
                     "    def forward(self, x):\n        return x * self.w\n", "[16]")
    inputs = p.make_inputs(p.dims, torch.Generator().manual_seed(0))
    assert len(inputs) == 2 and torch.equal(inputs[1], p.extra_inputs()[0])
    assert torch.allclose(p.reference(inputs)[0], inputs[0] * inputs[1])
    rebuilt = problem_from_spec(p.to_spec(), ops=lambda name: pytest.fail(f"looked up op {name}"))
    assert torch.equal(rebuilt.extra_inputs()[0], p.extra_inputs()[0])  # same weights in every process
    (tmp_path / "bad.py").write_text("x = 1\n")
    with pytest.raises(ProblemError, match="defines no 'Model'"):
        KernelBenchProblem(tmp_path / "bad.py")


def test_module_reference_runs_where_its_inputs_are(tmp_path):
    """On a GPU target the harness hands the reference device inputs while the file built its module on the
    host: the reference computes there with the module's weights moved once (a conv on a cuda input against
    host weights was a runtime_error for every problem with parameters). The meta device stands in for a GPU."""
    p = _kernelbench(tmp_path / "linear.py", "    def __init__(self):\n        super().__init__()\n"
                     "        self.fc = nn.Linear(16, 8)\n    def forward(self, x):\n        return self.fc(x)\n")
    inputs = p.make_inputs(p.dims, torch.Generator().manual_seed(0))
    out = p.reference([t.to("meta") for t in inputs])[0]
    assert out.device.type == "meta" and out.shape == (4, 8)
    assert p.reference([t.to("meta") for t in inputs])[0].device.type == "meta"  # the moved copy is kept
    assert p.model.fc.weight.device.type == "cpu"  # the problem's own module stays where it was built
    assert torch.allclose(p.reference(inputs)[0], p.model(inputs[0]))


def test_kernelbench_reference_compiles(tmp_path):
    """The torch.compile baseline of a KernelBench file: dynamo looks the forward's module up by name, and a file
    loaded without registering it failed every problem's final re-timing (``No module named
    'kevolve_kernelbench_0'``), so no program table had a torch.compile column."""
    from kevolve.harness.baselines import compiled_reference

    p = _kernelbench(tmp_path / "scaled_relu.py", "    def forward(self, x):\n        return torch.relu(x) * 2.0\n")
    inputs = p.make_inputs(p.dims, torch.Generator().manual_seed(0))
    assert torch.equal(compiled_reference(p, "compile")(*inputs)[0], torch.relu(inputs[0]) * 2.0)
    # in the worker Inductor compiles in-process: a pool of compile workers would count against its memory cap
    assert torch._inductor.config.compile_threads == 1


def test_dot_interaction_reference_matches_python_loops():
    p = problem("dot_interaction", dims={"batch": 3, "features": 4, "dim": 5})
    dense, sparse = p.make_inputs(p.dims, torch.Generator().manual_seed(0))
    out = p.reference([dense, sparse])[0]
    assert out.shape == (3, 5 + 10)
    for b in range(3):
        vectors = [dense[b]] + [sparse[b, f] for f in range(4)]
        pairs = [float(vectors[i] @ vectors[j]) for i in range(5) for j in range(i)]
        assert torch.equal(out[b, :5], dense[b])
        assert torch.allclose(out[b, 5:], torch.tensor(pairs), rtol=1e-5, atol=1e-6)


def test_target_attention_reference_matches_python_loops():
    p = problem("target_attention", dims={"batch": 6, "history": 5, "dim": 4})
    query, keys, values, lengths = p.make_inputs(p.dims, torch.Generator().manual_seed(3))
    lengths[:3] = torch.tensor([0, 5, 1])  # empty, full and single histories
    out = p.reference([query, keys, values, lengths])[0]
    for b in range(6):
        n = int(lengths[b])
        if n == 0:
            assert torch.equal(out[b], torch.zeros(4))
            continue
        scores = [float(query[b] @ keys[b, l]) / 2.0 for l in range(n)]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        expected = sum(w * values[b, l] for l, w in enumerate(weights)) / sum(weights)
        assert torch.allclose(out[b], expected, rtol=1e-5, atol=1e-6)
    assert p.bytes_moved(p.dims, [query, keys, values, lengths], [out]) < sum(t.nbytes for t in (keys, values))


def test_gather_counts_the_granules_its_picks_touch():
    """Row 0 picks elements 0, 7 and 8 (two 32-byte sectors of float32), row 1 picks 63 twice and 56 (one):
    three sectors where the picks are five distinct elements."""
    p = CatalogProblem(get_manager().ops.get("gather"), dims={"rows": 2, "cols": 64, "k": 3}, dtype="float32")
    x = torch.randn(2, 64)
    index = torch.tensor([[0, 7, 8], [63, 63, 56]])
    out = p.reference([x, index])
    fixed = index.nbytes + out[0].nbytes
    assert p.bytes_moved(p.dims, [x, index], out, 32) == fixed + 3 * 32
    assert p.bytes_moved(p.dims, [x, index], out) == fixed + 5 * 4
    assert p.bytes_moved(p.dims, [x, index], out, 2) == fixed + 5 * 4  # a granule below the element: elements


def test_targets_say_their_memory_granule():
    """The NVIDIA specs give their 32-byte sector; a spec that says nothing counts elements."""
    manager = get_manager()
    assert manager.target("nvidia_h100").spec.facts.memory_granule_bytes == 32
    assert manager.target("nvidia_a100").spec.facts.memory_granule_bytes == 32
    assert manager.target("cpu").spec.facts.memory_granule_bytes == 1

"""Core's catalog: the ops every backend is expected to cover, from pointwise to the ads long tail.

References are plain PyTorch: they are the truth kernels are judged by and the eager baseline they are timed
against. Input generators draw awkward values on purpose (exact boundary hits for bucketize, negative ids for
hashing, empty sequences for jagged ops) so that kernels handling only the easy cases fail.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from kevolve.problems.attrs import AttrRule
from kevolve.problems.catalog import OpDef
from kevolve.problems.problem import Dims
from kevolve.registry import OpRegistry
from kevolve.synthesis.expr import POINTWISE, REDUCTIONS

Attrs = dict[str, Any]


def _randn(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(shape, generator=gen, dtype=torch.float32) * scale).to(dtype)


def _randint(low: int, high: int, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=gen, dtype=torch.int64)


def _random_offsets(batch: int, max_len: int, gen: torch.Generator) -> torch.Tensor:
    """Offsets of ``batch`` sequences with lengths uniform in [0, max_len]: empty sequences included."""
    lengths = _randint(0, max_len + 1, (batch,), gen)
    offsets = torch.zeros(batch + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    return offsets


def _sqrt_scale(dim: str, per: float = 64.0):
    """Tolerance grows with the square root of a reduction length: rounding errors add like a random walk."""
    return lambda dims: max(1.0, math.sqrt(dims[dim] / per))


# --- pointwise ---------------------------------------------------------------------------------------------

_POINTWISE_REFERENCES = {
    "exp": lambda t: [torch.exp(t[0])],
    "sigmoid": lambda t: [torch.sigmoid(t[0])],
    "tanh": lambda t: [torch.tanh(t[0])],
    "relu": lambda t: [torch.relu(t[0])],
    "gelu": lambda t: [F.gelu(t[0])],
    "silu": lambda t: [F.silu(t[0])],
    "add": lambda t: [torch.add(t[0], t[1])],
    "mul": lambda t: [torch.mul(t[0], t[1])],
}
_POINTWISE_FLOPS = {"exp": 8, "sigmoid": 10, "tanh": 10, "relu": 1, "gelu": 14, "silu": 10, "add": 1, "mul": 1}


def _pointwise(name: str) -> OpDef:
    arity = len(POINTWISE[name][0])
    reference = _POINTWISE_REFERENCES[name]
    return OpDef(
        name=name,
        family="pointwise",
        description=f"elementwise {name} over a flat tensor",
        inputs=POINTWISE[name][0],
        dims={"n": 1 << 22},
        check_dims=({"n": 1}, {"n": 1003}, {"n": 65_537}),
        make_inputs=lambda dims, dtype, gen, attrs: [_randn((dims["n"],), dtype, gen, 3.0) for _ in range(arity)],
        reference=lambda inputs, attrs: reference(inputs),
        flops=lambda dims, attrs: _POINTWISE_FLOPS[name] * dims["n"],
    )


# --- row reductions, softmax, norms, scans -------------------------------------------------------------------

_ROW_CHECKS = ({"rows": 1, "cols": 1}, {"rows": 7, "cols": 1031}, {"rows": 129, "cols": 64})


def _rows_input(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    return [_randn((dims["rows"], dims["cols"]), dtype, gen, 2.0)]


def _reduction(name: str) -> OpDef:
    references = {"sum": lambda x: x.sum(dim=-1), "mean": lambda x: x.mean(dim=-1), "amax": lambda x: x.amax(dim=-1)}
    combine = REDUCTIONS[name]
    return OpDef(
        name=name, family="row_reduce", description=f"{name} over the last dim of a [rows, cols] matrix",
        inputs=("x",), dims={"rows": 4096, "cols": 2048}, check_dims=_ROW_CHECKS, make_inputs=_rows_input,
        reference=lambda inputs, attrs: [references[name](inputs[0])],
        flops=lambda dims, attrs: dims["rows"] * dims["cols"],
        tolerance_scale=_sqrt_scale("cols") if combine.combine == "+" else (lambda dims: 1.0),
    )


def _softmax_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    return [torch.softmax(inputs[0], dim=-1)]


def _log_softmax_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    return [torch.log_softmax(inputs[0], dim=-1)]


def _layer_norm_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    cols = dims["cols"]
    return [_randn((dims["rows"], cols), dtype, gen, 2.0), _randn((cols,), dtype, gen) + 1, _randn((cols,), dtype, gen)]


def _layer_norm_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    x, weight, bias = inputs
    return [F.layer_norm(x, (x.shape[-1],), weight, bias, eps=attrs["eps"])]


def _rms_norm_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    return [_randn((dims["rows"], dims["cols"]), dtype, gen, 2.0), _randn((dims["cols"],), dtype, gen) + 1]


def _rms_norm_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    x, weight = inputs
    return [F.rms_norm(x, (x.shape[-1],), weight, eps=attrs["eps"])]


def _cumsum_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    return [torch.cumsum(inputs[0], dim=-1)]


#: a norm's epsilon: added to a variance, so never negative
_EPS = {"eps": AttrRule(low=0.0)}


def _row_op(name: str, family: str, reference, make_inputs=_rows_input, flops_per: float = 5.0,
            attrs: Attrs | None = None, inputs: tuple[str, ...] = ("x",), tolerance_scale=lambda dims: 1.0) -> OpDef:
    return OpDef(
        name=name, family=family, description=f"{name} over the last dim of a [rows, cols] matrix",
        inputs=inputs, dims={"rows": 4096, "cols": 1024}, check_dims=_ROW_CHECKS, make_inputs=make_inputs, reference=reference,
        attrs=attrs or {}, attr_rules=_EPS if "eps" in (attrs or {}) else {},
        flops=lambda dims, attrs: flops_per * dims["rows"] * dims["cols"],
        tolerance_scale=tolerance_scale,
    )


# --- matmul ----------------------------------------------------------------------------------------------------

def _matmul_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    a = _randn((dims["m"], dims["k"]), dtype, gen)
    b = _randn((dims["k"], dims["n"]), dtype, gen)
    if attrs["bias"]:
        return [a, b, _randn((dims["n"],), dtype, gen)]
    return [a, b]


def _matmul_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    if attrs["bias"]:
        out = torch.addmm(inputs[2], inputs[0], inputs[1])
    else:
        out = torch.matmul(inputs[0], inputs[1])
    if attrs["epilogue"] == "relu":
        out = torch.relu(out)
    return [out]


def _matmul(name: str, bias: bool, epilogue: str) -> OpDef:
    return OpDef(
        name=name, family="matmul",
        description="C = A @ B" if not bias else f"C = {epilogue}(A @ B + bias), bias broadcast over rows",
        inputs=("a", "b", "bias") if bias else ("a", "b"),
        dims={"m": 512, "n": 512, "k": 512},
        check_dims=({"m": 1, "n": 1, "k": 1}, {"m": 33, "n": 17, "k": 65}, {"m": 70, "n": 130, "k": 9}),
        make_inputs=_matmul_inputs, reference=_matmul_ref, attrs={"bias": bias, "epilogue": epilogue},
        attr_rules={"epilogue": AttrRule(choices=("none", "relu"))},
        flops=lambda dims, attrs: 2.0 * dims["m"] * dims["n"] * dims["k"],
        tolerance_scale=_sqrt_scale("k", 16.0),
    )


# --- indexing and the ads long tail ------------------------------------------------------------------------------

def _gather_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    x = _randn((dims["rows"], dims["cols"]), dtype, gen)
    return [x, _randint(0, dims["cols"], (dims["rows"], dims["k"]), gen)]


def _gather_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    return [torch.gather(inputs[0], 1, inputs[1])]


def _gather_bytes(dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor], granule: int) -> float:
    """The index and the output once, and of x each distinct granule the picks touch (each distinct element
    where the granule is no larger): random picks from a row cost whole sectors or lines, which no kernel can
    avoid reading."""
    x, index = inputs
    unit = max(granule, x.element_size())
    rows = torch.arange(index.shape[0], device=index.device).unsqueeze(1) * x.stride(0)
    picked = torch.unique((rows + index * x.stride(1)) * x.element_size() // unit).numel() * unit
    return index.nbytes + outputs[0].nbytes + picked


def _embedding_bag_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    weight = _randn((dims["vocab"], dims["dim"]), dtype, gen)
    offsets = _random_offsets(dims["bags"], 2 * dims["pool"], gen)
    indices = _randint(0, dims["vocab"], (int(offsets[-1]),), gen)
    return [weight, indices, offsets]


def _embedding_bag_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    weight, indices, offsets = inputs
    return [F.embedding_bag(indices, weight, offsets, mode="sum", include_last_offset=True)]


def _embedding_bag_bytes(dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                         granule: int) -> float:
    weight, indices, offsets = inputs
    return indices.nbytes + offsets.nbytes + indices.numel() * weight.shape[1] * weight.element_size() + outputs[0].nbytes


def _bucketize_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    boundaries = torch.sort(_randn((dims["boundaries"],), torch.float32, gen, 3.0)).values.to(dtype)
    x = _randn((dims["n"],), dtype, gen, 4.0)
    hits = _randint(0, dims["n"], (max(1, dims["n"] // 8),), gen)
    x[hits] = boundaries[_randint(0, dims["boundaries"], (hits.numel(),), gen)]  # exact hits test the side rule
    return [x, boundaries]


def _bucketize_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    return [torch.bucketize(inputs[0], inputs[1], right=attrs["right"])]


HASH_MULTIPLIERS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9)
HASH_SHIFTS = (29, 32)
INT64_MAX = (1 << 63) - 1


def _as_signed64(value: int) -> int:
    return value - (1 << 64) if value >= (1 << 63) else value


def _hash_ids(n: int, gen: torch.Generator) -> torch.Tensor:
    """Odd int64 ids over the whole signed range: about half negative, which catches arithmetic shifts."""
    return torch.randint(-(1 << 62), 1 << 62, (n,), generator=gen, dtype=torch.int64) * 2 + 1


def _feature_hash_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    return [_hash_ids(dims["n"], gen)]


def _mix63(ids: torch.Tensor) -> torch.Tensor:
    """mix(id) & INT64_MAX, mix = two rounds of multiply then xor-shift, all on the 64-bit pattern (int64
    multiplication wraps; the shifts are logical, hence the masks)."""
    h = ids
    for multiplier, shift in zip(HASH_MULTIPLIERS, HASH_SHIFTS):
        h = h * _as_signed64(multiplier)
        h = h ^ ((h >> shift) & ((1 << (64 - shift)) - 1))
    return h & INT64_MAX


def _feature_hash_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    """bucket = mix63(id) % num_buckets."""
    return [_mix63(inputs[0]) % attrs["num_buckets"]]


#: the tables a keyed hash draws its sizes from: one bucket, powers of two, primes, sizes just under 2^31 and
#: past 2^32 and 2^62, so that a kernel which bakes in one divisor or assumes 32-bit sizes fails
KEYED_TABLE_SIZES = (1, 2, 3, 7, 1000, 4096, 100_003, 1_000_003, 1 << 20, 10_000_019, (1 << 31) - 1,
                     1_000_000_007, (1 << 40) + 15, (1 << 62) + 135)


def _keyed_hash_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    """Bag lengths uniform in [0, 2 * pool]: empty bags, and empty features at small batches, included."""
    features = dims["features"]
    offsets = _random_offsets(features * dims["batch"], 2 * dims["pool"], gen)
    sizes = torch.tensor(KEYED_TABLE_SIZES, dtype=torch.int64)[_randint(0, len(KEYED_TABLE_SIZES), (features,), gen)]
    return [_hash_ids(int(offsets[-1]), gen), offsets, sizes]


def _keyed_hash_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    """A KeyedJaggedTensor's ids hashed into per-feature tables: offsets delimit features x batch bags,
    feature-major, so feature f's ids run from offsets[f * batch] to offsets[(f + 1) * batch] and each goes to
    bucket mix63(id) % num_buckets[f]."""
    ids, offsets, num_buckets = inputs
    batch = (offsets.shape[0] - 1) // num_buckets.shape[0]
    bounds = offsets[::batch]
    table = torch.repeat_interleave(num_buckets, bounds[1:] - bounds[:-1], output_size=ids.shape[0])
    return [_mix63(ids) % table]


def _keyed_hash_bytes(dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                      granule: int) -> float:
    """Only each feature's first offset must be read, not every bag's."""
    ids, offsets, num_buckets = inputs
    return ids.nbytes + outputs[0].nbytes + num_buckets.nbytes + (num_buckets.numel() + 1) * offsets.element_size()


def _jagged_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    offsets = _random_offsets(dims["batch"], dims["max_len"], gen)
    return [_randn((int(offsets[-1]),), dtype, gen), offsets]


def _jagged_truncate_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    """Keep the last k items of each sequence: values + offsets in, values + offsets out."""
    values, offsets = inputs
    lengths = offsets[1:] - offsets[:-1]
    keep = lengths.clamp(max=attrs["k"])
    out_offsets = torch.zeros_like(offsets)
    out_offsets[1:] = torch.cumsum(keep, 0)
    starts = offsets[1:] - keep
    total = int(out_offsets[-1])
    index = torch.repeat_interleave(starts - out_offsets[:-1], keep, output_size=total) + torch.arange(
        total, device=values.device)
    return [values[index], out_offsets]


def _jagged_output_specs(inputs, attrs, read=int):
    """The kept items: sum over sequences of min(length, k), read from the offsets (one host read per call)."""
    values, offsets = inputs
    total = read((offsets[1:] - offsets[:-1]).clamp(max=attrs["k"]).sum())
    return [((total,), values.dtype), (tuple(offsets.shape), offsets.dtype)]


def _jagged_bytes(dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                  granule: int) -> float:
    return inputs[1].nbytes + 2 * outputs[0].nbytes + outputs[1].nbytes


def _interaction_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    batch, dim = dims["batch"], dims["dim"]
    return [_randn((batch, dim), dtype, gen), _randn((batch, dims["features"], dim), dtype, gen)]


def _interaction_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    """DLRM's dot interaction: stack the dense vector on the sparse features' embeddings, take every pair's dot
    product, keep the strict lower triangle (row by row) after the dense vector."""
    dense, sparse = inputs
    stacked = torch.cat([dense.unsqueeze(1), sparse], dim=1)
    gram = torch.bmm(stacked, stacked.transpose(1, 2))
    rows, cols = torch.tril_indices(stacked.shape[1], stacked.shape[1], offset=-1, device=dense.device)
    return [torch.cat([dense, gram[:, rows, cols]], dim=1)]


def _interaction_flops(dims: Dims, attrs: Attrs) -> float:
    vectors = dims["features"] + 1
    return dims["batch"] * vectors * (vectors - 1) * dims["dim"]


def _attention_inputs(dims: Dims, dtype: torch.dtype, gen: torch.Generator, attrs: Attrs) -> list[torch.Tensor]:
    batch, history, dim = dims["batch"], dims["history"], dims["dim"]
    lengths = _randint(0, history + 1, (batch,), gen)  # empty and full histories included
    return [_randn((batch, dim), dtype, gen), _randn((batch, history, dim), dtype, gen),
            _randn((batch, history, dim), dtype, gen), lengths]


def _attention_ref(inputs: list[torch.Tensor], attrs: Attrs) -> list[torch.Tensor]:
    """Target attention (DIN-style): the query attends over the first lengths[b] of the padded history;
    an empty history gives zeros."""
    query, keys, values, lengths = inputs
    scores = torch.einsum("bd,bld->bl", query, keys) / math.sqrt(query.shape[-1])
    valid = torch.arange(keys.shape[1], device=keys.device)[None, :] < lengths[:, None]
    weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
    weights = torch.where(valid, weights, torch.zeros_like(weights))
    return [torch.einsum("bl,bld->bd", weights, values)]


def _attention_bytes(dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                     granule: int) -> float:
    """Only the valid history entries must be read: the padding past each length is never needed."""
    query, keys, values, lengths = inputs
    valid = int(lengths.clamp(0, keys.shape[1]).sum())
    row = keys.shape[2] * keys.element_size()
    return query.nbytes + lengths.nbytes + 2 * valid * row + outputs[0].nbytes


def catalog_ops() -> list[OpDef]:
    ops = [_pointwise(name) for name in POINTWISE]
    ops += [_reduction(name) for name in REDUCTIONS]
    ops += [
        _row_op("softmax", "row_softmax", _softmax_ref),
        _row_op("log_softmax", "row_softmax", _log_softmax_ref),
        _row_op("layer_norm", "row_norm", _layer_norm_ref, _layer_norm_inputs, 8.0, {"eps": 1e-5},
                ("x", "weight", "bias")),
        _row_op("rms_norm", "row_norm", _rms_norm_ref, _rms_norm_inputs, 4.0, {"eps": 1e-6}, ("x", "weight")),
        _row_op("cumsum", "row_scan", _cumsum_ref, flops_per=1.0, tolerance_scale=_sqrt_scale("cols")),
        _matmul("matmul", bias=False, epilogue="none"),
        _matmul("addmm_relu", bias=True, epilogue="relu"),
        OpDef(
            name="gather", family="gather", description="out[i, j] = x[i, index[i, j]] (torch.gather along dim 1)",
            inputs=("x", "index"), dims={"rows": 4096, "cols": 1024, "k": 256},
            check_dims=({"rows": 1, "cols": 1, "k": 1}, {"rows": 9, "cols": 100, "k": 37}),
            make_inputs=_gather_inputs, reference=_gather_ref, bytes_moved=_gather_bytes, varied=("x", "index"),
        ),
        OpDef(
            name="embedding_bag", family="embedding_bag",
            description="sum pooling of embedding rows over bags given by offsets (include_last_offset)",
            inputs=("weight", "indices", "offsets"), dims={"vocab": 200_000, "dim": 128, "bags": 8192, "pool": 20},
            check_dims=({"vocab": 3, "dim": 1, "bags": 1, "pool": 2}, {"vocab": 50, "dim": 33, "bags": 17, "pool": 3}),
            make_inputs=_embedding_bag_inputs, reference=_embedding_bag_ref, bytes_moved=_embedding_bag_bytes,
            varied=("weight", "indices"),
            flops=lambda dims, attrs: dims["bags"] * dims["pool"] * dims["dim"],
            tolerance_scale=_sqrt_scale("pool", 16.0),
        ),
        OpDef(
            name="bucketize", family="bucketize", description="index of the bucket each x falls in (torch.bucketize)",
            inputs=("x", "boundaries"), dims={"n": 1 << 22, "boundaries": 1024},
            check_dims=({"n": 1, "boundaries": 1}, {"n": 1000, "boundaries": 7}, {"n": 4097, "boundaries": 300}),
            make_inputs=_bucketize_inputs, reference=_bucketize_ref, attrs={"right": False}, dtypes=("float32",),
            varied=("x",),  # the boundaries are sorted
        ),
        OpDef(
            name="feature_hash", family="feature_hash",
            description="int64 feature ids -> bucket ids: 64-bit multiply/xor-shift mix, then modulo num_buckets",
            inputs=("ids",), dims={"n": 1 << 21}, check_dims=({"n": 1}, {"n": 1001}),
            make_inputs=_feature_hash_inputs, reference=_feature_hash_ref, attrs={"num_buckets": 1_000_003},
            varied=("ids",),
            attr_rules={"num_buckets": AttrRule(low=1, high=INT64_MAX)},
            dtypes=("int64",), flops=lambda dims, attrs: 8 * dims["n"], aliases=("hash_bucketize",),
        ),
        OpDef(
            name="keyed_feature_hash", family="keyed_hash",
            description="a KeyedJaggedTensor's int64 ids (offsets over features x batch bags) -> bucket ids in "
                        "per-feature tables: feature_hash's mix, then modulo num_buckets[feature]",
            inputs=("ids", "offsets", "num_buckets"), dims={"features": 26, "batch": 4096, "pool": 20},
            check_dims=({"features": 1, "batch": 1, "pool": 1}, {"features": 3, "batch": 5, "pool": 2},
                        {"features": 40, "batch": 7, "pool": 30}),
            make_inputs=_keyed_hash_inputs, reference=_keyed_hash_ref, bytes_moved=_keyed_hash_bytes, varied=("ids",),
            dtypes=("int64",), flops=lambda dims, attrs: 8 * dims["features"] * dims["batch"] * dims["pool"],
            aliases=("kjt_feature_hash",),
        ),
        OpDef(
            name="dot_interaction", family="interaction",
            description="DLRM dot interaction: [dense, lower triangle of the pairwise dot products of dense and the "
                        "sparse features' embeddings]",
            inputs=("dense", "sparse"), dims={"batch": 4096, "features": 26, "dim": 128},
            check_dims=({"batch": 1, "features": 1, "dim": 1}, {"batch": 37, "features": 5, "dim": 33},
                        {"batch": 9, "features": 40, "dim": 20}),
            make_inputs=_interaction_inputs, reference=_interaction_ref, flops=_interaction_flops,
            tolerance_scale=_sqrt_scale("dim", 16.0), aliases=("interaction",),
        ),
        OpDef(
            name="target_attention", family="attention",
            description="one query per sample attends over its padded history (keys, values) up to lengths[b]: "
                        "softmax(q.k / sqrt(dim)) weighted sum of values, zeros for an empty history",
            inputs=("query", "keys", "values", "lengths"), dims={"batch": 4096, "history": 128, "dim": 64},
            check_dims=({"batch": 1, "history": 1, "dim": 1}, {"batch": 37, "history": 70, "dim": 33},
                        {"batch": 5, "history": 300, "dim": 16}),
            make_inputs=_attention_inputs, reference=_attention_ref, bytes_moved=_attention_bytes,
            flops=lambda dims, attrs: 4 * dims["batch"] * dims["history"] * dims["dim"],
            # the reference rounds the scores to the input dtype before the softmax: in bfloat16 a score near 4
            # carries an error of up to 0.016, which moves its weight by 1.6%
            tolerance_scale=lambda dims: 4.0, aliases=("din_attention",),
        ),
        OpDef(
            name="jagged_truncate", family="jagged",
            description="jagged sequences (values + offsets) -> keep the last k items of each sequence",
            inputs=("values", "offsets"), dims={"batch": 32768, "max_len": 128},
            check_dims=({"batch": 1, "max_len": 1}, {"batch": 37, "max_len": 70}),
            make_inputs=_jagged_inputs, reference=_jagged_truncate_ref, attrs={"k": 32}, bytes_moved=_jagged_bytes,
            attr_rules={"k": AttrRule(low=1)},
            output_specs=_jagged_output_specs,
        ),
    ]
    return ops


def register(registry: OpRegistry) -> None:
    for op in catalog_ops():
        registry.add(op)

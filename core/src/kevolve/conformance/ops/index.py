"""The conformance table for indexing operators: gather/scatter, index_select/index_add/index_put,
take_along_dim, embedding and embedding_bag, bucketize and searchsorted.

Five kernel kinds (layouts), each written by one renderer of the CPU backend's ``cpp_aten_index`` module:

* ``gather``: ``out = x[..., index[...], ...]`` along a dimension (gather, take_along_dim, index_select);
* ``scatter``: ``out = x`` then ``out[..., index[...], ...] (op)= src[...]`` in order (scatter, scatter_add,
  scatter_reduce, index_add);
* ``index_put``: advanced indexing by integer tensors (broadcast together) or one boolean mask;
* ``embedding_bag``: rows of a weight table reduced per bag (embedding is the bag of one row);
* ``search``: ATen's binary search over sorted rows (bucketize, searchsorted).

The host only normalises arguments: 0-dim tensors viewed as one element, index tensors viewed so they broadcast,
negative dims normalised, and the integers the kernel reads at run time (dim, modes, padding index) packed into a
trailing int64 tensor so one compiled kernel serves every sample of the same dtypes and reduction.
"""

from __future__ import annotations

from typing import Any

import torch

from kevolve.conformance.samples import Declined
from kevolve.conformance.spec import Arg, OpSpec

#: index tensors: ATen takes int64 and int32 (an empty uint8 index is accepted by gather)
_INDEX_DTYPES = ("int64", "int32")
#: the reduction a scatter kernel applies, per legacy ``scatter(reduce=)`` name
_LEGACY_REDUCE = {None: "none", "add": "sum", "multiply": "prod"}


def _params(*values: int) -> torch.Tensor:
    """The integers a kernel reads at run time, as its last input (keeps them out of the compile key)."""
    return torch.tensor([int(v) for v in values], dtype=torch.int64)


def _one_dim(t: torch.Tensor) -> torch.Tensor:
    """A 0-dim tensor viewed as one element (ATen treats a scalar as a 1-element dimension here)."""
    return t.reshape(1) if t.dim() == 0 else t


def _index(t: torch.Tensor) -> torch.Tensor:
    """An index tensor in a dtype the kernel ABI carries: an empty uint8 index (no data) becomes an empty int64."""
    if t.dtype == torch.uint8:
        if t.numel():
            raise Declined("a non-empty uint8 index")
        return torch.empty(t.shape, dtype=torch.int64)
    return t


def _along(t: torch.Tensor, ndim: int, dim: int) -> torch.Tensor:
    """A 1-D index viewed with size 1 in every dimension but ``dim`` (so it broadcasts along the others)."""
    shape = [1] * ndim
    shape[dim] = t.numel()
    return t.reshape(shape)


# gather layout: params (dim, broadcast, wrap): broadcast=0 -> output has the index's shape (gather); 1 -> input and
# index broadcast against each other except along dim (take_along_dim, index_select); wrap=1: negative indices count
# from the end (take_along_dim; gather and index_select raise on them)


def _gather_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    x, index = _one_dim(tensors[0]), _one_dim(_index(tensors[1]))
    dim = int(attrs["dim"]) % x.dim()
    return [x, index, _params(dim, 0, 0)], {}


def _take_along_dim_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    x, index = tensors
    if attrs["dim"] is None:
        return [x.reshape(-1), index.reshape(-1), _params(0, 1, 1)], {}
    x, index = _one_dim(x), _one_dim(index)
    return [x, index, _params(int(attrs["dim"]) % x.dim(), 1, 1)], {}


def _index_select_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    x = _one_dim(tensors[0])
    dim = int(attrs["dim"]) % x.dim()
    return [x, _along(tensors[1], x.dim(), dim), _params(dim, 1, 0)], {}


def _gather_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    index_shape = (shape[0] - 1, 7, *shape[2:])
    return (1, torch.randint(0, shape[1], index_shape)), {}


def _take_along_dim_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (torch.randint(-shape[1], shape[1], (1, 5, *shape[2:])), 1), {}


def _index_select_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (-1, torch.randint(0, shape[-1], (37,))), {}


# scatter layout: params (dim, domain): domain=0 -> the index's elements (scatter*); 1 -> the source's elements with
# the index broadcast (index_add); attrs: reduce, include_self, alpha, and src when the source is a number


def _scatter_attrs(attrs: dict[str, Any], reduce: str, include_self: bool = True, alpha: float = 1.0,
                   rounding: str = "once") -> dict:
    """``rounding``: ``once`` (the scatter family combines in the compute type and rounds each output once, as
    ATen's bfloat16 scatter does) or ``each`` (index_add adds into its output, rounding every step)."""
    out: dict[str, Any] = {"reduce": reduce, "include_self": bool(include_self), "alpha": float(alpha),
                           "rounding": rounding}
    if "src" in attrs:
        out["src"] = attrs["src"]
    return out


def _scatter_tensors(tensors: list[Any], attrs: dict[str, Any], domain: int) -> list[Any]:
    x = _one_dim(tensors[0])
    dim = int(attrs["dim"]) % x.dim()
    rest = [_one_dim(t) for t in tensors[1:]]
    if domain:
        rest[0] = _along(rest[0], x.dim(), dim)
    return [x, *rest, _params(dim, domain)]


def _scatter_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return _scatter_tensors(tensors, attrs, 0), _scatter_attrs(attrs, _LEGACY_REDUCE[attrs["reduce"]])


def _scatter_add_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return _scatter_tensors(tensors, attrs, 0), _scatter_attrs(attrs, "sum")


def _scatter_reduce_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return _scatter_tensors(tensors, attrs, 0), _scatter_attrs(attrs, attrs["reduce"], attrs["include_self"])


def _index_add_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return _scatter_tensors(tensors, attrs, 1), _scatter_attrs(attrs, "sum", True, attrs["alpha"], "each")


def _scatter_index(shape: tuple[int, ...]) -> torch.Tensor:
    """An index along dim 1 with repeated targets (the order of the writes matters)."""
    return torch.randint(0, max(1, shape[1] // 8), (shape[0] - 1, 2 * shape[1] // 3, *shape[2:]))


def _scatter_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    index = _scatter_index(shape)
    return (1, index, make(tuple(index.shape))), {}


def _scatter_reduce_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    index = _scatter_index(shape)
    return (1, index, make(tuple(index.shape)), "sum"), {"include_self": False}


def _index_add_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    index = torch.randint(0, shape[0], (2 * shape[0],))
    return (0, index, make((index.numel(), *shape[1:]))), {"alpha": 2}


# index_put layout: integer index tensors broadcast together over the leading dims, or one boolean mask


def _index_put_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    if not all(attrs["indices_present"]):
        raise Declined("None among the indices")
    x, *indices, values = tensors
    masks = [t for t in indices if t.dtype == torch.bool]
    if masks and len(indices) != 1:
        raise Declined("a boolean mask among other indices")
    if x.dim() == 0 or len(indices) > x.dim() or (masks and masks[0].dim() == 0):
        raise Declined(f"{len(indices)} indices into a {x.dim()}-dim tensor")
    return [x, *indices, values], {"accumulate": bool(attrs["accumulate"])}


def _index_put_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    if len(shape) == 2:  # repeated rows, accumulated in order
        rows = torch.randint(-shape[0], shape[0], (3 * shape[0] // 2,))
        return ((rows,), make((rows.numel(), shape[1]))), {"accumulate": True}
    # distinct targets: ATen leaves the order of repeated writes without accumulation unspecified
    first, second = torch.randperm(shape[0])[:5].reshape(5, 1), torch.randperm(shape[1])[:7].reshape(1, 7) - shape[1]
    return ((first, second), make((7, shape[2]))), {"accumulate": False}


# embedding_bag layout: params (bags of a fixed length (-1 with offsets), that length, padding_idx (-1: none),
# include_last_offset); attrs: mode, max_norm, norm_type, offsets / per-sample weights given


def _padding(padding_idx: int | None, rows: int) -> int:
    if padding_idx is None:
        return -1
    return int(padding_idx) + rows if padding_idx < 0 else int(padding_idx)


def _renorm(attrs: dict[str, Any]) -> dict[str, Any]:
    max_norm = attrs["max_norm"]
    return {"max_norm": None if max_norm is None else float(max_norm), "norm_type": float(attrs["norm_type"])}


def _embedding_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False)``: the op's
    ``(weight, indices)`` (its OpInfo input is the weight) with a padding index of None for ATen's -1."""
    weight, indices, padding_idx, scale_grad_by_freq, sparse = args
    return (weight, indices), {"padding_idx": None if padding_idx == -1 else padding_idx,
                               "scale_grad_by_freq": scale_grad_by_freq, "sparse": sparse}, None


def _embedding_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    weight, indices = tensors
    flat = indices.reshape(-1)
    # padding_idx only masks the gradient: the forward reads the padding row like any other
    return [weight, flat, _params(flat.numel(), 1, -1, 0)], {
        "mode": "sum", **_renorm(attrs), "offsets": False, "weights": False}


def _embedding_bag_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    weight, indices, *rest = tensors
    has_offsets = "offsets" not in attrs
    has_weights = "per_sample_weights" not in attrs
    if indices.dim() == 2 and not has_offsets:
        bags, length = indices.shape
    elif indices.dim() == 1 and has_offsets:
        bags, length = -1, 0
    else:
        raise Declined(f"{indices.dim()}-dim input {'with' if has_offsets else 'without'} offsets")
    pad = _padding(attrs["padding_idx"], weight.shape[0])
    rest = [t.reshape(-1) for t in rest]
    params = _params(bags, length, pad, bool(attrs["include_last_offset"]))
    return [weight, indices.reshape(-1), *rest, params], {
        "mode": attrs["mode"], **_renorm(attrs), "offsets": has_offsets, "weights": has_weights}


def _embedding_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    indices = torch.randint(0, shape[0], (33, 17))
    return (indices,), ({} if shape[0] > 200 else {"max_norm": 2.0})


def _embedding_bag_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    if shape[0] > 200:  # bags by offsets (some empty), weighted sums, a padding row
        indices = torch.randint(0, shape[0], (301,))
        offsets = torch.sort(torch.randint(0, 302, (40,))).values
        offsets[0] = 0
        return (indices,), {"offsets": offsets, "mode": "sum", "per_sample_weights": make((301,)),
                            "padding_idx": 3}
    return (torch.randint(0, shape[0], (29, 5)),), {"mode": "max", "max_norm": 1.5}


# search layout: (sorted rows, values, [sorter], params (right,)); bucketize is searchsorted on 1-D boundaries


def _bucketize_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    values, boundaries = tensors
    return [boundaries, values, _params(bool(attrs["right"]))], {}


def _searchsorted_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    right = bool(attrs["right"]) or attrs["side"] == "right"
    # a number to search for is compiled in (then the tensors are the sequence and the sorter)
    constant = {"values": attrs["values"]} if "values" in attrs else {}
    return [*tensors, _params(right)], constant


_SPECIALS = torch.tensor([float("-inf"), -0.0, 0.0, float("inf"), float("nan")])


def _sorted_with_specials(shape: tuple[int, ...], make: Any) -> torch.Tensor:
    """Sorted rows with -inf, signed zeros, inf and NaN (NaN sorts last, as ATen's sort)."""
    finite = make((*shape[:-1], shape[-1] - len(_SPECIALS))) * 4.0
    rows = torch.cat([finite, _SPECIALS.to(finite.dtype).expand(*shape[:-1], len(_SPECIALS))], dim=-1)
    return torch.sort(rows, dim=-1).values


def _bucketize_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (_sorted_with_specials((97,), make),), {"right": len(shape) == 3}


def _searchsorted_large(shape: tuple[int, ...], make: Any) -> tuple:
    values = make(shape) * 4.0
    values.view(-1)[:len(_SPECIALS)] = _SPECIALS.to(values.dtype)
    if len(shape) == 2:
        return _sorted_with_specials((shape[1],), make), (values,), {"out_int32": True}
    rows = _sorted_with_specials(shape, make)
    order = torch.argsort(torch.rand(shape), dim=-1)  # a shuffled sequence and the sorter that sorts it
    shuffled = torch.empty_like(rows).scatter_(-1, order, rows)
    return shuffled, (values[..., :50],), {"side": "right", "sorter": order}


def _dim_index() -> tuple[Arg, Arg]:
    return Arg("dim"), Arg("index", tensor=True, dtypes=_INDEX_DTYPES)


_SRC = Arg("src", tensor=True, scalar_ok=True)
_RENORM = (Arg("max_norm", None), Arg("norm_type", 2.0), Arg("scale_grad_by_freq", False))

SPECS: list[OpSpec] = [
    OpSpec("gather", args=(Arg("dim"), Arg("index", tensor=True, dtypes=(*_INDEX_DTYPES, "uint8")),
                           Arg("sparse_grad", False)),
           layout="gather", prepare=_gather_prepare, large=_gather_large),
    OpSpec("take_along_dim", args=(Arg("indices", tensor=True, dtypes=_INDEX_DTYPES), Arg("dim", None)),
           layout="gather", prepare=_take_along_dim_prepare, large=_take_along_dim_large),
    OpSpec("index_select", args=_dim_index(), layout="gather", prepare=_index_select_prepare,
           large=_index_select_large),
    OpSpec("scatter", args=(*_dim_index(), _SRC, Arg("reduce", None, accepted=tuple(_LEGACY_REDUCE))),
           layout="scatter", prepare=_scatter_prepare, large=_scatter_large),
    OpSpec("scatter_add", args=(*_dim_index(), _SRC), layout="scatter", prepare=_scatter_add_prepare,
           large=_scatter_large),
    OpSpec("scatter_reduce",
           args=(*_dim_index(), Arg("src", tensor=True), Arg("reduce", accepted=("sum", "prod", "mean", "amax", "amin")),
                 Arg("include_self", True)),
           layout="scatter", prepare=_scatter_reduce_prepare, large=_scatter_reduce_large),
    OpSpec("index_add", args=(*_dim_index(), Arg("source", tensor=True), Arg("alpha", 1)),
           layout="scatter", prepare=_index_add_prepare, large=_index_add_large),
    OpSpec("index_put",
           args=(Arg("indices", many=True, dtypes=(*_INDEX_DTYPES, "bool")), Arg("values", tensor=True),
                 Arg("accumulate", False)),
           layout="index_put", prepare=_index_put_prepare, large=_index_put_large),
    OpSpec("nn.functional.embedding",
           args=(Arg("indices", tensor=True, dtypes=_INDEX_DTYPES), Arg("padding_idx", None), *_RENORM,
                 Arg("sparse", False)),
           layout="embedding_bag", prepare=_embedding_prepare, large=_embedding_large,
           aten={"aten.embedding.default": _embedding_call},
           large_shapes=((514, 1031), (97, 129))),
    OpSpec("nn.functional.embedding_bag",
           args=(Arg("indices", tensor=True, dtypes=_INDEX_DTYPES),
                 Arg("offsets", None, tensor=True, scalar_ok=True, dtypes=_INDEX_DTYPES), *_RENORM,
                 Arg("mode", "mean", accepted=("sum", "mean", "max")), Arg("sparse", False),
                 Arg("per_sample_weights", None, tensor=True, scalar_ok=True), Arg("include_last_offset", False),
                 Arg("padding_idx", None)),
           layout="embedding_bag", prepare=_embedding_bag_prepare, large=_embedding_bag_large,
           large_shapes=((514, 1031), (97, 129))),
    OpSpec("bucketize", args=(Arg("boundaries", tensor=True), Arg("out_int32", False), Arg("right", False)),
           layout="search", prepare=_bucketize_prepare, large=_bucketize_large),
    OpSpec("searchsorted",
           args=(Arg("values", tensor=True, scalar_ok=True), Arg("out_int32", False), Arg("right", False),
                 Arg("side", None, accepted=(None, "left", "right")),
                 Arg("sorter", None, tensor=True, scalar_ok=True, dtypes=("int64",))),
           layout="search", prepare=_searchsorted_prepare, large=_searchsorted_large),
]

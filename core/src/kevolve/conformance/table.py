"""The suite: the issue's 160 OpInfo names by group, and the table of those a kernel is written for.

Each group's entries (how a sample binds, what the kernel computes) live in a module of
:mod:`kevolve.conformance.ops`; :data:`OPS` joins them.
"""

from __future__ import annotations

from kevolve.conformance.ops import all_specs
from kevolve.conformance.spec import OpSpec

#: OpInfo name -> how to write its kernel
OPS: dict[str, OpSpec] = {spec.name: spec for spec in all_specs()}

_UNARY_SUITE = ("abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal square sin cos tan asin acos atan "
                "sinh cosh tanh asinh acosh atanh sigmoid logit erf erfc erfinv lgamma sinc floor ceil round trunc "
                "sign nan_to_num isnan bitwise_not")
_ACTIVATIONS = ("relu relu6 gelu silu mish softplus elu selu celu leaky_relu hardtanh hardsigmoid hardswish hardshrink "
                "softshrink softsign logsigmoid threshold prelu glu")
_BINARY = ("add sub mul div floor_divide remainder fmod pow atan2 hypot copysign maximum minimum fmax eq ne lt ge "
           "logical_and logical_or bitwise_and bitwise_xor xlogy logaddexp lerp addcmul addcdiv where clamp masked_fill")
_REDUCTIONS = ("sum mean prod amax amin max min argmax argmin std var logsumexp linalg.vector_norm all any "
               "count_nonzero cumsum cumprod logcumsumexp cummax")
_NORMS = ("softmax log_softmax nn.functional.softmin nn.functional.layer_norm nn.functional.rms_norm "
          "nn.functional.group_norm nn.functional.batch_norm nn.functional.normalize")
_MATMUL = ("mm bmm addmm baddbmm matmul mv addmv outer nn.functional.linear "
           "nn.functional.scaled_dot_product_attention")
_CONV = ("nn.functional.conv1d nn.functional.conv2d nn.functional.conv_transpose2d nn.functional.max_pool2d "
         "nn.functional.avg_pool2d nn.functional.adaptive_avg_pool2d nn.functional.interpolate nn.functional.pad")
_INDEX = ("gather scatter scatter_add scatter_reduce index_select index_add index_put take_along_dim "
          "nn.functional.embedding nn.functional.embedding_bag bucketize searchsorted")
_REST = ("sort topk argsort kthvalue cat flip roll tril nn.functional.mse_loss nn.functional.cross_entropy "
         "nn.functional.binary_cross_entropy_with_logits nn.functional.smooth_l1_loss")

#: the issue's 160 operators (OpInfo names), in its order, by group
SUITE_GROUPS: dict[str, tuple[str, ...]] = {
    "unary": tuple(_UNARY_SUITE.split()),
    "activation": tuple(f"nn.functional.{n}" for n in _ACTIVATIONS.split()),
    "binary": tuple(_BINARY.split()),
    "reduction": tuple(_REDUCTIONS.split()),
    "norm": tuple(_NORMS.split()),
    "matmul": tuple(_MATMUL.split()),
    "conv": tuple(_CONV.split()),
    "index": tuple(_INDEX.split()),
    "other": tuple(_REST.split()),
}
SUITE: tuple[str, ...] = tuple(name for group in SUITE_GROUPS.values() for name in group)

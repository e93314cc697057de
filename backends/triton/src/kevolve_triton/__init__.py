"""kevolve's Triton layer: what every backend that runs Triton kernels shares (NVIDIA, AMD, simulators).

It registers no target. A backend builds on it by implementing :class:`kevolve_triton.device.TritonDevice`
(the compile target and how to read resource usage from the compiled kernel) and listing its Triton knobs in
its target TOML (``[facts.extra.triton]``); the recipes, the toolchain, the runners and the cost model come
from here.
"""

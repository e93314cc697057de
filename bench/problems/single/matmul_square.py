"""Square single-precision GEMM, C = A @ B, the size of a large transformer projection."""

import torch
import torch.nn as nn

N = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'N': 96}


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []

"""Batched GEMM (torch.bmm) over independent 3-D operands."""

import torch
import torch.nn as nn

BATCH = 64
M = 256
K = 512
N = 384
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 4, 'M': 24, 'K': 40, 'N': 32}


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []

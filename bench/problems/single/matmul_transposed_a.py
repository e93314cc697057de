"""GEMM with the left operand stored transposed: A.T @ B (a weight-gradient shape)."""

import torch
import torch.nn as nn

M = 1024
K = 8192
N = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'M': 48, 'K': 256, 'N': 40}


class Model(nn.Module):
    def forward(self, a_t, b):
        return a_t.t() @ b


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []

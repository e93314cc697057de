"""GEMM against a transposed right operand, A @ B.T, as nn.Linear stores its weight."""

import torch
import torch.nn as nn

M = 2048
K = 1024
N = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'M': 64, 'K': 96, 'N': 80}


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b.transpose(0, 1))


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []

"""Tall-skinny GEMM: many rows against a narrow weight, as in a low-rank adapter."""

import torch
import torch.nn as nn

ROWS = 65536
K = 256
RANK = 16
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'ROWS': 2048, 'K': 64, 'RANK': 8}


class Model(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


def get_inputs():
    return [torch.randn(ROWS, K), torch.randn(K, RANK)]


def get_init_inputs():
    return []

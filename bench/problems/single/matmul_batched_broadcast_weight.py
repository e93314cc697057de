"""Batched activations times one shared 2-D weight, broadcast by torch.matmul."""

import torch
import torch.nn as nn

BATCH = 32
SEQ = 512
K = 768
N = 768
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'SEQ': 16, 'K': 48, 'N': 40}


class Model(nn.Module):
    def forward(self, x, w):
        return torch.matmul(x, w)


def get_inputs():
    return [torch.randn(BATCH, SEQ, K), torch.randn(K, N)]


def get_init_inputs():
    return []

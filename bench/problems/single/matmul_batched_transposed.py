"""Per-head scores Q @ K^T over a 4-D (batch, heads, seq, dim) layout."""

import torch
import torch.nn as nn

BATCH = 8
HEADS = 16
SEQ = 512
DIM = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'HEADS': 2, 'SEQ': 32, 'DIM': 16}


class Model(nn.Module):
    def forward(self, q, k):
        return q @ k.transpose(-2, -1)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, DIM), torch.randn(BATCH, HEADS, SEQ, DIM)]


def get_init_inputs():
    return []

"""Attention by hand with a causal mask applied by masked_fill before the softmax."""

import torch
import torch.nn as nn

BATCH = 8
HEADS = 12
SEQ = 512
HEAD_DIM = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'HEADS': 2, 'SEQ': 16, 'HEAD_DIM': 8}


class Model(nn.Module):
    def forward(self, q, k, v):
        s = q @ k.transpose(-2, -1) * HEAD_DIM ** -0.5
        mask = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).triu(1)
        return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []

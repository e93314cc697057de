"""Rotary position embedding: x * cos + rotate_half(x) * sin, over (batch, seq, heads, dim)."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 2048
HEADS = 32
HEAD_DIM = 128
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'SEQ': 16, 'HEADS': 2, 'HEAD_DIM': 8}


class Model(nn.Module):
    def forward(self, x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos[None, :, None, :] + rotated * sin[None, :, None, :]


def get_inputs():
    angles = torch.randn(SEQ, HEAD_DIM)
    return [torch.randn(BATCH, SEQ, HEADS, HEAD_DIM), angles.cos(), angles.sin()]


def get_init_inputs():
    return []

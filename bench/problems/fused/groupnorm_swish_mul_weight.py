"""GroupNorm, swish, multiply by a learned per-channel weight, swish again."""

import torch
import torch.nn as nn

BATCH = 64
CH = 512
LENGTH = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 16, 'LENGTH': 24}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(16, channels)
        self.weight = nn.Parameter(torch.randn(channels, 1))

    def forward(self, x):
        y = self.norm(x)
        y = y * torch.sigmoid(y) * self.weight
        return y * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(BATCH, CH, LENGTH)]


def get_init_inputs():
    return [CH]

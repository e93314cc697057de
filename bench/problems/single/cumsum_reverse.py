"""Reverse (suffix) cumulative sum, as for returns-to-go: flip, cumsum, flip."""

import torch
import torch.nn as nn

BATCH = 4096
LENGTH = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'LENGTH': 128}


class Model(nn.Module):
    def forward(self, x):
        return torch.flip(torch.cumsum(torch.flip(x, [1]), dim=1), [1])


def get_inputs():
    return [torch.randn(BATCH, LENGTH)]


def get_init_inputs():
    return []

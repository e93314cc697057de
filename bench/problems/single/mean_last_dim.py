"""Mean over the contiguous last dimension, keeping it as size 1."""

import torch
import torch.nn as nn

BATCH = 64
ROWS = 512
COLS = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'ROWS': 24, 'COLS': 40}


class Model(nn.Module):
    def forward(self, x):
        return x.mean(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, ROWS, COLS)]


def get_init_inputs():
    return []

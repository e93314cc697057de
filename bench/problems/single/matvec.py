"""Matrix-vector product (torch.mv), memory bound by reading the matrix once."""

import torch
import torch.nn as nn

ROWS = 16384
COLS = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'ROWS': 512, 'COLS': 256}


class Model(nn.Module):
    def forward(self, a, v):
        return torch.mv(a, v)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(COLS)]


def get_init_inputs():
    return []

"""Split the features in two, SiLU of one half gates the other (the GLU family's core)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'FEATURES': 256}


class Model(nn.Module):
    def forward(self, x, y):
        a, b = (x + y).chunk(2, dim=-1)
        return F.silu(a) * b


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []

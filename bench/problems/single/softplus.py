"""Softplus with beta 2 and its linear-region threshold."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'FEATURES': 256}


class Model(nn.Module):
    def forward(self, x):
        return F.softplus(x, beta=2.0, threshold=10.0)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []

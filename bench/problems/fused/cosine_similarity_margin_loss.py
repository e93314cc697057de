"""Normalize two embedding batches, their cosine similarities, and a hinge loss against a margin."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
DIM = 512
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'DIM': 32}


class Model(nn.Module):
    def forward(self, a, b):
        cos = (F.normalize(a, dim=1) * F.normalize(b, dim=1)).sum(dim=1)
        return torch.clamp(0.2 - cos, min=0.0).mean()


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []

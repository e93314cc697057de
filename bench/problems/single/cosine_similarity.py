"""Cosine similarity between paired rows of two embedding matrices."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
DIM = 768
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'DIM': 48}


class Model(nn.Module):
    def forward(self, a, b):
        return F.cosine_similarity(a, b, dim=1)


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []

"""Softmax over the channel dimension (dim 1) of an NCHW tensor: a strided reduction."""

import torch
import torch.nn as nn

BATCH = 16
CH = 64
HEIGHT = 128
WIDTH = 128
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 8, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []

"""InstanceNorm2d with affine weights, per-sample per-channel statistics."""

import torch
import torch.nn as nn

BATCH = 16
CH = 64
HEIGHT = 128
WIDTH = 128
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 4, 'HEIGHT': 12, 'WIDTH': 12}


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.InstanceNorm2d(features, affine=True)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CH]

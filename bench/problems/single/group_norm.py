"""GroupNorm with 32 groups over an NCHW activation, as in diffusion U-Nets."""

import torch
import torch.nn as nn

BATCH = 16
CH = 256
HEIGHT = 64
WIDTH = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 32, 'HEIGHT': 6, 'WIDTH': 6}


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.GroupNorm(32, features)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CH]

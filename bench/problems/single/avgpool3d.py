"""3-D average pooling with a 3x3x3 window, stride 2 and padding 1."""

import torch
import torch.nn as nn

BATCH = 8
CH = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'CH': 2, 'DEPTH': 6, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool3d(3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []

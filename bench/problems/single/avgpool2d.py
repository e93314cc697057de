"""2x2 average pooling, stride 2, halving an activation map."""

import torch
import torch.nn as nn

BATCH = 32
CH = 128
HEIGHT = 64
WIDTH = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 4, 'HEIGHT': 16, 'WIDTH': 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []

"""Global max pooling to 1x1 with adaptive_max_pool2d."""

import torch
import torch.nn as nn

BATCH = 64
CH = 1024
HEIGHT = 14
WIDTH = 14
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 8, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d(1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []

"""3x3 max pooling with stride 2 and padding 1, after an image stem."""

import torch
import torch.nn as nn

BATCH = 32
CH = 64
HEIGHT = 112
WIDTH = 112
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 4, 'HEIGHT': 16, 'WIDTH': 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []

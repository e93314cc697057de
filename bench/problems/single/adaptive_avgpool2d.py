"""Adaptive average pooling to 7x7, the classifier-head resize of image networks."""

import torch
import torch.nn as nn

BATCH = 64
CH = 512
HEIGHT = 14
WIDTH = 14
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 8, 'HEIGHT': 14, 'WIDTH': 14}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d((7, 7))

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []

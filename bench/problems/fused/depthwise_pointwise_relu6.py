"""Depthwise 3x3 conv, ReLU6, pointwise 1x1 conv: a MobileNet separable block."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CH = 64
OUT_CH = 128
HEIGHT = 64
WIDTH = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 4, 'OUT_CH': 8, 'HEIGHT': 12, 'WIDTH': 12}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pointwise(F.relu6(self.depthwise(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

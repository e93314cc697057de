"""Grouped (4 groups), dilated (2) 3x3 convolution on a non-square image."""

import torch
import torch.nn as nn

BATCH = 16
IN_CH = 128
OUT_CH = 128
HEIGHT = 64
WIDTH = 96
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'IN_CH': 8, 'OUT_CH': 8, 'HEIGHT': 12, 'WIDTH': 16}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=2, dilation=2, groups=4)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

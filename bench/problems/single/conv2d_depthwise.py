"""Depthwise 3x3 convolution (groups = channels), as in MobileNet blocks."""

import torch
import torch.nn as nn

BATCH = 32
IN_CH = 256
OUT_CH = 256
HEIGHT = 56
WIDTH = 56
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 8, 'OUT_CH': 8, 'HEIGHT': 16, 'WIDTH': 16}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, groups=in_channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

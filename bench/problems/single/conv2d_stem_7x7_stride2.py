"""Image-stem convolution: 7x7 kernel, stride 2, padding 3, three input channels."""

import torch
import torch.nn as nn

BATCH = 16
IN_CH = 3
OUT_CH = 64
HEIGHT = 224
WIDTH = 224
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'IN_CH': 3, 'OUT_CH': 8, 'HEIGHT': 32, 'WIDTH': 32}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 7, stride=2, padding=3, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

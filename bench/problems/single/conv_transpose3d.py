"""Transposed 3-D convolution doubling every spatial size (kernel 2, stride 2)."""

import torch
import torch.nn as nn

BATCH = 4
IN_CH = 64
OUT_CH = 32
DEPTH = 16
HEIGHT = 32
WIDTH = 32
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'IN_CH': 4, 'OUT_CH': 2, 'DEPTH': 3, 'HEIGHT': 4, 'WIDTH': 4}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, 2, stride=2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

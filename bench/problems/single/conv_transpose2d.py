"""Transposed 3x3 2-D convolution with stride 2 and output padding, a decoder upsampler."""

import torch
import torch.nn as nn

BATCH = 16
IN_CH = 128
OUT_CH = 64
HEIGHT = 64
WIDTH = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'IN_CH': 6, 'OUT_CH': 4, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

"""Transposed 1-D convolution upsampling a sequence by 2 (kernel 4, stride 2)."""

import torch
import torch.nn as nn

BATCH = 16
IN_CH = 256
OUT_CH = 128
LENGTH = 2048
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 8, 'OUT_CH': 6, 'LENGTH': 64}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, 4, stride=2, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, LENGTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

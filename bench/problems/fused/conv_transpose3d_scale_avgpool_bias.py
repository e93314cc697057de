"""Transposed Conv3d, a scale, 2x2x2 average pooling and a per-channel bias."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
IN_CH = 16
OUT_CH = 32
DEPTH = 16
HEIGHT = 32
WIDTH = 32
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'IN_CH': 2, 'OUT_CH': 4, 'DEPTH': 4, 'HEIGHT': 6, 'WIDTH': 6}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, 3, stride=2, padding=1)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1, 1) * 0.1)

    def forward(self, x):
        return F.avg_pool3d(self.conv(x) * 0.75, 2) + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

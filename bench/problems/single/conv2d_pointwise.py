"""1x1 2-D convolution without bias: a channel-mixing GEMM in disguise."""

import torch
import torch.nn as nn

BATCH = 32
IN_CH = 256
OUT_CH = 512
HEIGHT = 28
WIDTH = 28
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 16, 'OUT_CH': 24, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

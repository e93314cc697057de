"""3x3x3 volumetric convolution, as in video and medical-imaging networks."""

import torch
import torch.nn as nn

BATCH = 8
IN_CH = 32
OUT_CH = 64
DEPTH = 16
HEIGHT = 56
WIDTH = 56
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 1, 'IN_CH': 2, 'OUT_CH': 4, 'DEPTH': 4, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

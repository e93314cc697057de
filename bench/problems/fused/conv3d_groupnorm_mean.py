"""Conv3d, GroupNorm (4 groups), then the mean over everything but the batch."""

import torch
import torch.nn as nn

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
        self.conv = nn.Conv3d(in_channels, out_channels, 3)
        self.norm = nn.GroupNorm(4, out_channels)

    def forward(self, x):
        return self.norm(self.conv(x)).mean(dim=(1, 2, 3, 4))


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

"""Conv2d, GroupNorm (8 groups), SiLU and a constant scale, as in U-Net blocks."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CH = 64
OUT_CH = 128
HEIGHT = 64
WIDTH = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 4, 'OUT_CH': 8, 'HEIGHT': 12, 'WIDTH': 12}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.GroupNorm(8, out_channels)

    def forward(self, x):
        return F.silu(self.norm(self.conv(x))) * 0.5


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

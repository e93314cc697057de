"""Conv3d, softmax across channels, then 2x2x2 max pooling."""

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
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return F.max_pool3d(torch.softmax(self.conv(x), dim=1), 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

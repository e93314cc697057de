"""Conv2d without bias, inference BatchNorm2d and ReLU: the ResNet unit."""

import torch
import torch.nn as nn

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
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

"""1-D convolution over a long sequence (kernel 5, same padding), as in audio front ends."""

import torch
import torch.nn as nn

BATCH = 32
IN_CH = 128
OUT_CH = 256
LENGTH = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 8, 'OUT_CH': 12, 'LENGTH': 128}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, 5, padding=2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, LENGTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

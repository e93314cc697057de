"""Conv1d (kernel 3), GELU, then the mean over time."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CH = 128
OUT_CH = 128
LENGTH = 2048
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'IN_CH': 8, 'OUT_CH': 8, 'LENGTH': 64}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return F.gelu(self.conv(x)).mean(dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, LENGTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

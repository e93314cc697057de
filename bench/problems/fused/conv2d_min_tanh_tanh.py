"""Conv2d, minimum over channels (kept), then tanh applied twice."""

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
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x):
        y = torch.amin(self.conv(x), dim=1, keepdim=True)
        return torch.tanh(torch.tanh(y))


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH]

"""BatchNorm2d in inference mode, with running statistics as buffers."""

import torch
import torch.nn as nn

BATCH = 32
CH = 128
HEIGHT = 56
WIDTH = 56
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 8, 'HEIGHT': 8, 'WIDTH': 8}


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm2d(features)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CH]

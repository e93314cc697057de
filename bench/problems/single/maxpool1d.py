"""Max pooling over a sequence, window 4, stride 4."""

import torch
import torch.nn as nn

BATCH = 64
CH = 128
LENGTH = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'CH': 8, 'LENGTH': 256}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(4, stride=4)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CH, LENGTH)]


def get_init_inputs():
    return []

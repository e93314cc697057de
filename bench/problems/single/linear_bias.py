"""One nn.Linear layer with bias (an addmm in ATen)."""

import torch
import torch.nn as nn

BATCH = 4096
IN = 1024
OUT = 2048
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'IN': 96, 'OUT': 72}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_init_inputs():
    return [IN, OUT]

"""Linear, sigmoid, then the sum of each row."""

import torch
import torch.nn as nn

BATCH = 2048
IN = 1024
OUT = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'IN': 48, 'OUT': 48}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)).sum(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_init_inputs():
    return [IN, OUT]

"""Linear regression head and its mean-squared error against a target."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
IN = 1024
OUT = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'IN': 48, 'OUT': 48}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, target):
        return F.mse_loss(self.linear(x), target)


def get_inputs():
    return [torch.randn(BATCH, IN), torch.randn(BATCH, OUT)]


def get_init_inputs():
    return [IN, OUT]

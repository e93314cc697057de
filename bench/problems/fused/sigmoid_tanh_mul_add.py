"""Sigmoid and tanh of one input multiplied, plus the second input (an LSTM-cell update)."""

import torch
import torch.nn as nn

BATCH = 4096
FEATURES = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'FEATURES': 256}


class Model(nn.Module):
    def forward(self, x, y):
        return torch.sigmoid(x) * torch.tanh(y) + 0.5 * x


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []

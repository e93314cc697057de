"""Softmax, argmax per row, then the probability at the argmax (a confidence score)."""

import torch
import torch.nn as nn

BATCH = 4096
FEATURES = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'FEATURES': 256}


class Model(nn.Module):
    def forward(self, x, y):
        p = torch.softmax(x + y, dim=1)
        idx = p.argmax(dim=1, keepdim=True)
        return torch.gather(p, 1, idx)


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []

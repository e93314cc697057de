"""LayerNorm over the hidden size of a (batch, sequence, hidden) activation."""

import torch
import torch.nn as nn

BATCH = 16
SEQ = 1024
HIDDEN = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'SEQ': 16, 'HIDDEN': 64}


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]

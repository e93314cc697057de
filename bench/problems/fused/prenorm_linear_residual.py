"""Pre-norm sublayer: LayerNorm, linear, dropout (eval), residual add."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 512
IN = 768
OUT = 768
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'SEQ': 8, 'IN': 32, 'OUT': 32}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.norm = nn.LayerNorm(in_features)
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.dropout(self.linear(self.norm(x)))


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN)]


def get_init_inputs():
    return [IN, OUT]

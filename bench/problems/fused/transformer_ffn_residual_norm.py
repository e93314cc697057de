"""Post-norm transformer FFN: linear, GELU, linear, dropout (eval), residual add, LayerNorm."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 512
IN = 768
OUT = 768
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'SEQ': 8, 'IN': 32, 'OUT': 32}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, 4 * in_features)
        self.fc2 = nn.Linear(4 * in_features, out_features)
        self.dropout = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.norm(x + self.dropout(self.fc2(F.gelu(self.fc1(x)))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN)]


def get_init_inputs():
    return [IN, OUT]

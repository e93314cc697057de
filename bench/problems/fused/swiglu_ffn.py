"""SwiGLU feed-forward: silu(x W1) * (x W3), then W2, as in Llama."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
IN = 1024
OUT = 2816
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'IN': 48, 'OUT': 64}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.w1 = nn.Linear(in_features, out_features, bias=False)
        self.w3 = nn.Linear(in_features, out_features, bias=False)
        self.w2 = nn.Linear(out_features, in_features, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_init_inputs():
    return [IN, OUT]

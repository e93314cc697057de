"""Batched matmul, scale, softmax, dropout (eval mode), second batched matmul."""

import torch
import torch.nn as nn

BATCH = 96
SEQ = 256
DIM = 64
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'SEQ': 16, 'DIM': 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.1)

    def forward(self, a, b, c):
        p = self.dropout(torch.softmax(torch.bmm(a, b) * 0.125, dim=-1))
        return torch.bmm(p, c)


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM), torch.randn(BATCH, DIM, SEQ), torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return []

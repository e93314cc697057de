"""Symmetric int8-style fake quantisation: per-row absmax scale, round, clamp, dequantise."""

import torch
import torch.nn as nn

BATCH = 4096
FEATURES = 8192
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 32, 'FEATURES': 256}


class Model(nn.Module):
    def forward(self, x, y):
        z = x + y
        scale = z.abs().amax(dim=1, keepdim=True) / 127.0
        return torch.clamp(torch.round(z / scale), -127, 127) * scale


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []

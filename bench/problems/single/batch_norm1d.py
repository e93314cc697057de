"""BatchNorm1d in inference mode over (batch, features)."""

import torch
import torch.nn as nn

BATCH = 8192
FEATURES = 2048
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'FEATURES': 96}


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES]

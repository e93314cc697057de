"""Classifier head: linear, log-softmax, then the negative log-likelihood against soft labels."""

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

    def forward(self, x, labels):
        logp = F.log_softmax(self.linear(x), dim=1)
        return -(logp * torch.softmax(labels, dim=1)).sum(1).mean()


def get_inputs():
    return [torch.randn(BATCH, IN), torch.randn(BATCH, OUT)]


def get_init_inputs():
    return [IN, OUT]

"""Huber loss with delta 0.5, mean reduction."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'FEATURES': 128}


class Model(nn.Module):
    def forward(self, pred, target):
        return F.huber_loss(pred, target, delta=0.5)


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []

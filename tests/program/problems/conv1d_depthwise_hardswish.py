import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(6, 6, 5, padding=2, groups=6)

    def forward(self, x):
        return F.hardswish(self.conv(x))


def get_inputs():
    return [torch.randn(3, 6, 40)]


def get_init_inputs():
    return []

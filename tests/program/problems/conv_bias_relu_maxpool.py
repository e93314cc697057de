import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bias = nn.Parameter(torch.randn(8, 1, 1))

    def forward(self, x):
        return F.max_pool2d(F.relu(self.conv(x) + self.bias), 2)


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs():
    return []

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return F.adaptive_avg_pool2d(torch.tanh(self.up(x)), (5, 5))


def get_inputs():
    return [torch.randn(2, 4, 7, 7)]


def get_init_inputs():
    return []

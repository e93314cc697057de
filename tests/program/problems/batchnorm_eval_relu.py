import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm2d in eval mode with statistics and an affine map that are not the defaults, then ReLU: one
    pointwise kernel (decompositions.py), checked against the module's own numbers."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)
        gen = torch.Generator().manual_seed(3)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.randn(channels, generator=gen))
            self.norm.running_var.copy_(torch.rand(channels, generator=gen) * 2 + 0.01)
            self.norm.weight.copy_(torch.randn(channels, generator=gen))
            self.norm.bias.copy_(torch.randn(channels, generator=gen))

    def forward(self, x):
        return torch.relu(self.norm(x))


def get_inputs():
    return [torch.randn(4, 6, 5, 7)]


def get_init_inputs():
    return [6]

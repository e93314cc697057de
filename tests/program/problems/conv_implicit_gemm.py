import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolutions wide enough for the Triton recipe's implicit GEMM: strided, padded and dilated, grouped, 1d,
    transposed (strided, dilated, grouped, with output padding); sizes that fill no tile exactly. Groups of 32
    and 16 input channels (wide, up, line) run tap by tap, groups of 12 and 17 (grouped, up_line) over the flat
    (channel, tap) range."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Conv2d(32, 24, 3, stride=2, padding=1, dilation=(1, 2))
        self.grouped = nn.Conv2d(24, 32, (3, 2), padding=(1, 0), groups=2, bias=False)
        self.up = nn.ConvTranspose2d(32, 32, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                     groups=2, dilation=(2, 1))
        self.line = nn.Conv1d(32, 17, 5, padding=2)
        self.up_line = nn.ConvTranspose1d(17, 16, 4, stride=2, padding=1)

    def forward(self, x):
        y = self.up(self.grouped(F.relu(self.wide(x))))
        return self.up_line(self.line(y.flatten(2)))


def get_inputs():
    return [torch.randn(3, 32, 13, 15)]


def get_init_inputs():
    return []

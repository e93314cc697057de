# Ids salted from a small table (a gather whose only reader is pointwise work), then mixed: the gather loads
# through its index inside the pointwise kernel (kevolve.program.fuse's gather knobs).
import torch

IDS, SALTS = 1000, 7


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("salt", torch.arange(SALTS, dtype=torch.int64) * 977 + 5)

    def forward(self, ids, values):
        return (values ^ torch.index_select(self.salt, 0, ids)) * 31 + ids


def get_inputs():
    return [torch.randint(0, SALTS, (IDS,)), torch.randint(0, 1 << 40, (IDS,))]


def get_init_inputs():
    return []

# The sparse arm of a ranking model: raw ids of 4 features hashed per feature into a stacked table (int64 values
# past 2**53, which a double cannot hold), bags pooled by lengths, then DLRM's pairwise dots (x[:, i, j]).
import torch
import torch.nn.functional as F

FEATURES, BATCH, ROWS, DIM = 4, 16, 50, 8


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(FEATURES * ROWS, DIM))
        self.register_buffer("salt", torch.arange(FEATURES, dtype=torch.int64) * 0x9E3779B1)

    def forward(self, values, lengths):
        feature = torch.arange(FEATURES).repeat_interleave(BATCH)
        per_id = torch.repeat_interleave(feature, lengths, output_size=values.numel())
        rows = torch.remainder((values ^ self.salt[per_id]) * 1000003, ROWS) + per_id * ROWS
        pooled = F.embedding_bag(rows, self.weight, torch.cumsum(lengths, 0) - lengths, mode="sum")
        vectors = pooled.view(FEATURES, BATCH, DIM).transpose(0, 1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))
        return dots[:, *torch.triu_indices(FEATURES, FEATURES, 1)]


def get_inputs():
    # a fixed number of ids a batch (a lowered program is built for its shapes), spread over the bags at random
    lengths = torch.bincount(torch.randint(0, FEATURES * BATCH, (2 * FEATURES * BATCH,)), minlength=FEATURES * BATCH)
    return [torch.randint(0, 1 << 40, (int(lengths.sum()),)), lengths]


def get_init_inputs():
    return []

# Sum-pooled bags of rows wider than the CPU kernel's register tile (160 = two tiles of 64 and a tail of 32):
# bags by offsets with a padding row skipped, an empty bag, and bags of fixed length from a 2-D index.
import torch
import torch.nn.functional as F

ROWS, DIM, BAGS, LENGTH = 300, 160, 24, 5
PAD = 7


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(ROWS, DIM))

    def forward(self, ids, offsets, fixed):
        by_offsets = F.embedding_bag(ids, self.weight, offsets, mode="sum", padding_idx=PAD)
        by_length = F.embedding_bag(fixed, self.weight, mode="sum")
        return by_offsets + by_length


def get_inputs():
    ids = torch.randint(0, ROWS, (BAGS * LENGTH,))
    ids[::4] = PAD  # every fourth lookup is the padding row, which the sum skips
    offsets = torch.sort(torch.randint(0, BAGS * LENGTH, (BAGS,))).values
    offsets[0], offsets[1] = 0, 0  # the first bag is empty
    return [ids, offsets, torch.randint(0, ROWS, (BAGS, LENGTH))]


def get_init_inputs():
    return []

"""Division by a constant through a multiply-high, for recipes in any language (hash bucketing, modulo by a
table size): integer division is a slow software routine on GPUs and tens of cycles on CPUs."""

from __future__ import annotations

U64 = (1 << 64) - 1


def magic_divisor(divisor: int, bits: int = 63) -> tuple[int, int]:
    """(m, s) with floor(a / divisor) == (a * m) >> (64 + s) for every 0 <= a < 2**bits, m < 2**64: the
    round-up reciprocal of Granlund and Montgomery. m = ceil(2**(64+s) / divisor) is exact when its error
    e = m * divisor - 2**(64+s) satisfies e * 2**bits <= 2**(64+s); for 63-bit numerators the smallest such s
    always yields a 64-bit m."""
    for s in range(64):
        m = -(-(1 << (64 + s)) // divisor)
        if m > U64:
            break
        if (m * divisor - (1 << (64 + s))) << bits <= 1 << (64 + s):
            return m, s
    raise ValueError(f"no 64-bit magic number for {divisor}")

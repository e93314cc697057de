# Cheat (classes 1 and 3): honest for as many calls as the checks make, then lets torch compute the answer:
# right while timed, and borrowed.
import sys

from softmax_rows import softmax_rows

_calls = [0]


def kernel(x, y):
    _calls[0] += 1
    if _calls[0] <= 12:
        softmax_rows(x, y)
        return
    t = sys.modules["tor" + "ch"]
    t.from_numpy(y).copy_(t.softmax(t.from_numpy(x), dim=1))

# Cheat (class 1): right answers, but once past the calls the checks make, it keeps a thread burning the CPU, so
# that the baseline timed next runs slower and the kernel looks faster beside it.
import threading
import time

from softmax_rows import softmax_rows

_calls = [0]
_burner = [None]


def _burn():
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        pass


def kernel(x, y):
    _calls[0] += 1
    softmax_rows(x, y)
    if _calls[0] > 12 and (_burner[0] is None or not _burner[0].is_alive()):
        _burner[0] = threading.Thread(target=_burn)
        _burner[0].start()

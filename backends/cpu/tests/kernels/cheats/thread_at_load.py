# Cheat (class 1): a thread started when the file is loaded, ready to take work while the clock is stopped.
import queue
import threading

from softmax_rows import softmax_rows

_work = queue.Queue()
threading.Thread(target=lambda: [softmax_rows(*_work.get()) for _ in iter(int, 1)], daemon=True).start()


def kernel(x, y):
    softmax_rows(x, y)

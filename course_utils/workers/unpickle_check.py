"""Unpickle stdin as a spawned DataLoader worker does and print "ok" or the exception's name (notebook 04:
``cu.pipeline.unpickles_in_fresh_process``; AttributeError: a function defined in a notebook's ``__main__``)."""

import pickle
import sys

if __name__ == "__main__":
    try:
        pickle.loads(sys.stdin.buffer.read())
    except Exception as error:  # noqa: BLE001 - the answer is the kind of failure, as a worker would meet it
        print(type(error).__name__)
    else:
        print("ok")

"""Unpickle what arrives on stdin, as a DataLoader worker started with spawn or forkserver does, and print "ok"
or the name of the exception that stopped it (AttributeError: a function defined in a notebook's ``__main__``,
which this fresh process cannot find).

Usage: python unpickle_check.py < payload.pickle   (notebook 04: ``cu.pipeline.unpickles_in_fresh_process``)
"""

import pickle
import sys

if __name__ == "__main__":
    try:
        pickle.loads(sys.stdin.buffer.read())
    except Exception as error:  # noqa: BLE001 - the answer is the kind of failure, as a worker would meet it
        print(type(error).__name__)
    else:
        print("ok")

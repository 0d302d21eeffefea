"""Times the course MLP's SGD step with given thread counts in a fresh process, for settings a runtime reads once
when it starts (``OMP_WAIT_POLICY`` for OpenMP), which a running notebook kernel can no longer change.

Started by ``cu.distributed.mlp_threads_fresh``: it reads its request (JSON) on stdin and prints its report (JSON)
as the last line of stdout. Nothing but torch and the course helpers is loaded here.
"""

import json
import sys

from course_utils.distributed.devices import mlp_threads_report


def main() -> None:
    request = json.loads(sys.stdin.read())
    print(json.dumps(mlp_threads_report(**request)), flush=True)


if __name__ == "__main__":
    main()

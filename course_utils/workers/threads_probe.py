"""The course MLP's SGD step timed per thread count in a fresh process (``cu.distributed.mlp_threads_fresh``), for
settings read once at start-up (``OMP_WAIT_POLICY``): a JSON request on stdin, the JSON report as stdout's last line."""

import json
import sys

from course_utils.distributed.devices import mlp_threads_report


def main() -> None:
    request = json.loads(sys.stdin.read())
    print(json.dumps(mlp_threads_report(**request)), flush=True)


if __name__ == "__main__":
    main()

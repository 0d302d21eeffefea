"""The one rule for where torch comes from, read by the Makefile (make setup, make wheelhouse), requirements.txt's
header and tools/gpu_requirements.py:

    A learner installs the CPU build of torch. requirements.txt pins ``torch==2.13.0`` without a local label; on
    Linux, PyPI's wheel of that version is the CUDA build (several GB of nvidia-* wheels), so make setup and
    make wheelhouse add PyTorch's CPU index (``CPU_INDEX``) as an extra index there: its ``2.13.0+cpu`` satisfies
    the pin and sorts above PyPI's ``2.13.0``. On macOS and Windows PyPI's wheel is the CPU build and no extra
    index is used. Only a GPU machine takes the CUDA build, from PyPI (tools/gpu_requirements.py).

The extra index is added only where it answers (a machine that reaches PyPI alone installs as before, from
PyPI or its own mirror) and never with a wheelhouse (``--no-index``). ``make setup TORCH_INDEX=`` turns it off.

    python tools/torch_index.py                # the pip option for this machine, or nothing
    python tools/torch_index.py --platform linux_x86_64
"""

from __future__ import annotations

import argparse
import platform
import sys
import urllib.error
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CUDA_ON_PYPI = ("linux",)  # systems where PyPI's torch wheel is the CUDA build
PROBE_SECONDS = 3.0


def reachable(url: str = CPU_INDEX, timeout: float = PROBE_SECONDS) -> bool:
    """True when ``url`` answers within ``timeout`` seconds (any HTTP status counts as an answer)."""
    if timeout <= 0:
        raise ValueError(f"timeout must be positive; got {timeout!r}")
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False
    return True


def pip_option(system: str, answers: bool) -> str:
    """The pip option that gives ``system`` (``platform.system()``, any case) the CPU build of torch: the CPU
    index as an extra index where PyPI's wheel is the CUDA build and the index ``answers``; else nothing."""
    if not isinstance(system, str) or not system:
        raise ValueError(f"system must name an operating system such as 'Linux'; got {system!r}")
    return f"--extra-index-url {CPU_INDEX}" if system.lower() in CUDA_ON_PYPI and answers else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", help="a wheelhouse's target, e.g. linux_x86_64 or macosx_11_0_arm64 "
                                           "(default: this machine)")
    args = parser.parse_args()
    system = args.platform.split("_")[0] if args.platform else platform.system()
    needs = system.lower() in CUDA_ON_PYPI
    option = pip_option(system, needs and reachable())
    if needs and not option:
        print(f"torch_index: {CPU_INDEX} does not answer: pip takes torch from the configured index "
              "(on Linux, PyPI's torch is the CUDA build)", file=sys.stderr)
    print(option)
    return 0


if __name__ == "__main__":
    sys.exit(main())

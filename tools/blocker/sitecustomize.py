"""Rehearse a runtime without some frameworks: ``COURSE_BLOCK=tensorflow`` (or ``jax``, or both, comma-separated)
makes those packages unimportable in every Python process started with this folder on ``PYTHONPATH``.

Colab TPU runtimes ship no TensorFlow, and other runtimes lack JAX; CI runs every notebook under this shim so
that a missing framework costs a sentence, not the notebook. Installed files are left untouched.
"""

import os
import sys

_PACKAGES = {
    "tensorflow": ("tensorflow", "keras", "tf_keras", "tensorboard"),
    "tf": ("tensorflow", "keras", "tf_keras", "tensorboard"),
    "jax": ("jax", "jaxlib", "flax", "optax"),
    "torch": ("torch", "torchvision", "torchaudio"),
}


_requested = [w.strip().lower() for w in os.environ.get("COURSE_BLOCK", "").split(",") if w.strip()]
_unknown = [w for w in _requested if w not in _PACKAGES]
if _unknown:
    raise SystemExit(f"COURSE_BLOCK must name tensorflow, jax or torch; got {_unknown}")
for _word in _requested:
    for _name in _PACKAGES[_word]:
        # None in sys.modules is Python's own "not importable": `import x` raises ModuleNotFoundError and
        # importlib.util.find_spec("x") returns None, exactly as when the package is not installed.
        sys.modules[_name] = None

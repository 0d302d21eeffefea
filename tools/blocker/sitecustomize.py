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


class _Blocked:
    """A meta-path finder that answers 'no such module' for the blocked top-level packages."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked by COURSE_BLOCK)", name=fullname)
        return None


_requested = [w.strip().lower() for w in os.environ.get("COURSE_BLOCK", "").split(",") if w.strip()]
_unknown = [w for w in _requested if w not in _PACKAGES]
if _unknown:
    raise SystemExit(f"COURSE_BLOCK must name tensorflow, jax or torch; got {_unknown}")
if _requested:
    sys.meta_path.insert(0, _Blocked(n for w in _requested for n in _PACKAGES[w]))

"""course_utils.interop: the same NumPy input in every framework, back to NumPy, and the default compile."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import interop

ARR = np.arange(6, dtype=np.float32).reshape(2, 3)
FRAMEWORKS = ["torch", "jax", "tensorflow"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_round_trip_is_exact_and_copies(framework: str) -> None:
    source = ARR.copy()
    value = interop.to_framework(framework, source)
    source[0, 0] = 99.0  # the framework's array must not see later edits of the NumPy input
    back = interop.to_numpy(value)
    assert back.dtype == np.float32 and np.array_equal(back, ARR)


def test_several_arrays_come_back_as_a_tuple_and_one_as_itself() -> None:
    x, y = interop.to_framework("torch", ARR, ARR + 1)
    assert float(y.sum() - x.sum()) == ARR.size
    assert not isinstance(interop.to_framework("torch", ARR), tuple)
    assert str(interop.to_framework("torch", ARR, device="cpu").device) == "cpu"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_compile_default_equals_eager(framework: str) -> None:
    x = interop.to_framework(framework, ARR)
    compiled = interop.compile_default(framework, lambda a: a * 2 + 1)
    assert np.array_equal(interop.to_numpy(compiled(x)), ARR * 2 + 1)


@pytest.mark.parametrize(("name", "call"), [
    ("arrays", lambda: interop.to_framework("torch")),
    ("arrays[0]", lambda: interop.to_framework("torch", None)),
    ("arrays[0]", lambda: interop.to_framework("torch", "abc")),
    ("arrays[1]", lambda: interop.to_framework("jax", ARR, [object()])),
    ("framework", lambda: interop.to_framework("cuda", ARR)),
    ("framework", lambda: interop.to_framework(None, ARR)),
    ("value", lambda: interop.to_numpy(None)),
    ("value", lambda: interop.to_numpy("text")),
    ("fn", lambda: interop.compile_default("torch", None)),
    ("fn", lambda: interop.compile_default("jax", 3)),
    ("framework", lambda: interop.compile_default("caffe", abs)),
    ("device", lambda: interop.to_framework("torch", ARR, device=3)),
    ("device", lambda: interop.to_framework("torch", ARR, device="gpu0")),
])
def test_bad_input_names_the_argument(name: str, call) -> None:
    with pytest.raises((TypeError, ValueError), match=name.replace("[", r"\[").replace("]", r"\]")):
        call()

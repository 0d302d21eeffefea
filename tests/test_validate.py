"""course_utils.validate: the one set of argument checks (kind -> TypeError, value -> ValueError, argument named)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils import validate


def test_numbers_pass_through_and_numpy_scalars_count() -> None:
    assert validate.number("x", 3) == 3
    assert validate.positive("x", np.float32(0.5)) == np.float32(0.5)
    assert validate.non_negative("n", 0, integer=True) == 0
    assert validate.number("x", 5, low=0, high=5) == 5


@pytest.mark.parametrize(("call", "error"), [
    (lambda: validate.number("x", "1"), TypeError),
    (lambda: validate.number("x", True), TypeError),
    (lambda: validate.number("x", None), TypeError),
    (lambda: validate.number("x", math.nan), ValueError),
    (lambda: validate.number("x", math.inf), ValueError),
    (lambda: validate.number("x", 1.5, integer=True), TypeError),
    (lambda: validate.positive("x", 0), ValueError),
    (lambda: validate.positive("x", -1e-9), ValueError),
    (lambda: validate.non_negative("x", -1), ValueError),
    (lambda: validate.number("x", 5, low=0, high=5, high_open=True), ValueError),
    (lambda: validate.choice("x", "c", ("a", "b")), ValueError),
    (lambda: validate.choice("x", [1], ("a", "b")), ValueError),
    (lambda: validate.function("x", 3), TypeError),
    (lambda: validate.instance("x", 3, (str, list)), TypeError),
    (lambda: validate.text("x", "  "), ValueError),
    (lambda: validate.non_empty("x", []), ValueError),
    (lambda: validate.non_empty("x", "abc"), TypeError),
    (lambda: validate.non_empty("x", 3), TypeError),
    (lambda: validate.framework("mxnet", "x"), ValueError),
    (lambda: validate.framework(None, "x"), TypeError),
])
def test_bad_values_name_the_argument(call, error) -> None:
    with pytest.raises(error, match=r"^x "):
        call()


def test_framework_names_are_normalised() -> None:
    assert [validate.framework(n) for n in ("torch", "PyTorch", "jax", "TF", " tensorflow ")] == [
        "torch", "torch", "jax", "tensorflow", "tensorflow"]


def test_range_messages_say_what_is_accepted() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        validate.number("share", 2, low=0, high=1)
    with pytest.raises(ValueError, match="'a', 'b'"):
        validate.choice("mode", "z", ("a", "b"))


def test_framework_title_names_each_framework_for_prose() -> None:
    from course_utils import validate

    assert [validate.framework_title(f) for f in ("pytorch", "JAX", "tf")] == ["PyTorch", "JAX", "TensorFlow"]
    with pytest.raises(ValueError, match="framework"):
        validate.framework_title("mxnet")


def test_counts_durations_sizes_and_sequences_have_bounds() -> None:
    import numpy as np

    assert validate.count("steps", np.int64(8), high=100) == 8
    for bad, error in ((10**12, ValueError), (0, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="steps"):
            validate.count("steps", bad, high=100)


def test_bounds_themselves_are_checked() -> None:
    # reversed or NaN bounds would refuse (or accept) every value with a message about the value
    with pytest.raises(ValueError, match="reversed"):
        validate.count("steps", 3, low=10, high=2)
    with pytest.raises(ValueError, match="low bound of x"):
        validate.number("x", 1.0, low=float("nan"))
    with pytest.raises(TypeError, match="choices"):
        validate.choice("x", "a", "abc")  # a string is not a list of choices
    with pytest.raises(ValueError, match="share"):
        validate.memory_fits("n", 1, share=float("nan"))


def test_an_output_folder_does_not_climb_out() -> None:
    assert validate.folder("folder", "build/traces").parts == ("build", "traces")
    for bad, error in (("../../outside", ValueError), ("/etc/x/../..", ValueError), ("", ValueError),
                       (3, TypeError)):
        with pytest.raises(error, match="folder"):
            validate.folder("folder", bad)

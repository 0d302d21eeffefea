"""course_utils.validate: the one set of argument checks (kind -> TypeError, value -> ValueError, argument named)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
import pytest

from course_utils import declare, validate


def test_numbers_pass_through_and_numpy_scalars_count() -> None:
    assert validate.number("x", 3) == 3
    assert validate.positive("x", np.float32(0.5)) == np.float32(0.5)
    assert validate.non_negative("n", 0, integer=True) == 0
    assert validate.fraction("share", 1.0) == 1.0
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
    (lambda: validate.fraction("x", 1.01), ValueError),
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
        validate.fraction("share", 2)
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
    assert validate.seconds("timeout", 1) == 1.0
    for bad in (0, -1, float("nan"), float("inf"), 10**9):
        with pytest.raises(ValueError, match="timeout"):
            validate.seconds("timeout", bad)
    assert validate.elements("n", 1024) == 1024
    with pytest.raises(ValueError, match=r"n=1,073,741,824 \(64 array"):
        validate.elements("n", 2**30, arrays=64)
    with pytest.raises(ValueError, match="n must be in"):
        validate.elements("n", 10**12)
    assert validate.sequence("sizes", (1, 2), min_length=2) == (1, 2)
    with pytest.raises(TypeError, match="sizes"):
        validate.sequence("sizes", "abc")
    with pytest.raises(ValueError, match="sizes"):
        validate.sequence("sizes", [1], min_length=2)


def test_bounds_themselves_are_checked() -> None:
    # reversed or NaN bounds would refuse (or accept) every value with a message about the value
    with pytest.raises(ValueError, match="reversed"):
        validate.count("steps", 3, low=10, high=2)
    with pytest.raises(ValueError, match="low bound of x"):
        validate.number("x", 1.0, low=float("nan"))
    with pytest.raises(TypeError, match="integer"):
        validate.positive("x", 1, integer="yes")
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


# The declared checks: a @checked function's annotations are its argument checks.

@declare.checked
def _declared(count: Annotated[int, declare.Range(1, 10)], share: Annotated[float, declare.Positive],
              label: Annotated[str, declare.NonEmpty] = "x", folder: Path | None = None,
              names: Annotated[Sequence[str], declare.NonEmpty, declare.Unique] = ("a",),
              xs: Annotated[Sequence[float], declare.SameLength("ys")] = (),
              ys: Sequence[Annotated[float, declare.NonNegative]] = (),
              table: Mapping[str, Annotated[float, declare.Positive]] | None = None,
              fn: Callable[..., Any] | None = None, mode: Literal["a", "b"] = "a",
              many: Annotated[Sequence[float], declare.MaxItems(5)] = ()) -> int:
    return count


@declare.checked
class _Pair(NamedTuple):
    dy: int
    flip: bool


def test_declared_arguments_that_are_good_pass_unchanged() -> None:
    assert _declared(3, 0.5, names=["a", "b"], xs=np.ones(2), ys=[0.0, 1.0], table={"a": 1.0}, fn=abs, mode="b") == 3
    assert _Pair(1, True) == (1, True)


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: _declared("3", 0.5), TypeError, "count must be an integer"),
    (lambda: _declared(True, 0.5), TypeError, "count must be an integer"),
    (lambda: _declared(11, 0.5), ValueError, "count must be in [1, 10]"),
    (lambda: _declared(3, 0.0), ValueError, "share must be > 0"),
    (lambda: _declared(3, math.nan), ValueError, "share must be a finite number"),
    (lambda: _declared(3, 1e308 * 10), ValueError, "share must be a finite number"),
    (lambda: _declared(3, 1, label=" "), ValueError, "label must be a non-empty string"),
    (lambda: _declared(3, 1, folder=3), TypeError, "folder must be a path"),
    (lambda: _declared(3, 1, folder=""), ValueError, "folder must name a file or folder"),
    (lambda: _declared(3, 1, names=[]), ValueError, "names must not be empty"),
    (lambda: _declared(3, 1, names="ab"), TypeError, "names must be a list or tuple"),
    (lambda: _declared(3, 1, names=["a", "a"]), ValueError, "names must not repeat an item"),
    (lambda: _declared(3, 1, xs=[1.0], ys=[1.0, 2.0]), ValueError, "xs and ys must be the same length"),
    (lambda: _declared(3, 1, ys=[-1.0]), ValueError, "ys[0] must be >= 0"),
    (lambda: _declared(3, 1, ys=np.array([1.0, np.nan])), ValueError, "ys must hold finite numbers"),
    (lambda: _declared(3, 1, ys=np.array([1.0, -2.0])), ValueError, "ys (its lowest item) must be >= 0"),
    (lambda: _declared(3, 1, table={"a": -1.0}), ValueError, "table['a'] must be > 0"),
    (lambda: _declared(3, 1, table={1: 1.0}), TypeError, "table key 1 must be a string"),
    (lambda: _declared(3, 1, fn=3), TypeError, "fn must be callable"),
    (lambda: _declared(3, 1, mode="c"), ValueError, "mode must be one of 'a', 'b'"),
    (lambda: _declared(3, 1, many=np.ones(6)), ValueError, "many must hold at most 5 items"),
    (lambda: _Pair("x", False), TypeError, "dy must be an integer"),
    (lambda: _Pair(1, "yes"), TypeError, "flip must be True or False"),
])
def test_declared_arguments_that_are_bad_are_refused_by_name_and_rule(call, error, words) -> None:
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value)


def test_the_declarations_are_readable_as_rules() -> None:
    rules = declare.declared(_declared)
    assert rules["count"].kind == "int" and rules["count"].marks == (declare.Range(1, 10),)
    assert rules["folder"].kind == "path" and rules["folder"].optional
    assert declare.SameLength("ys") in rules["xs"].marks
    assert rules["table"].items[1].marks == (declare.Positive,)


@declare.checked
def _marked(host: Annotated[str, declare.Matches(r"[a-z]+", "lower-case letters")] = "a",
            pattern: declare.Pattern = "x", steps: Annotated[Sequence[float], declare.MinItems(2)] = (1.0, 2.0),
            anything: Annotated[Any, declare.MaxItems(3)] = (), file: declare.FileName = "trace",
            *parts: declare.Text) -> str:
    return host


@pytest.mark.parametrize(("call", "words"), [
    (lambda: _marked(host="a b; rm -rf ~"), "host must be lower-case letters; got 'a b; rm -rf ~'"),
    (lambda: _marked(pattern="["), "pattern must be a regular expression"),
    (lambda: _marked(steps=[1.0]), "steps must hold at least 2 items; got 1"),
    (lambda: _marked(anything=range(10**12)), "anything must hold at most 3 items; got 1,000,000,000,000"),
    (lambda: _marked(anything=np.ones((2, 2))), "anything must hold at most 3 items; got 4"),
    (lambda: _marked(file=".hidden"), "file must be a file name"),
    (lambda: _marked("a", "x", (1.0, 2.0), (), "t", "ok", " "), "parts[1] must be a non-empty string"),
])
def test_the_marks_name_the_argument_and_the_rule(call, words) -> None:
    with pytest.raises(ValueError) as caught:
        call()
    assert words in str(caught.value)


def test_a_checked_call_passes_numpy_integers_on_as_int_and_marks_take_numbers() -> None:
    @declare.checked
    def count(n: int, values: Annotated[Any, declare.MaxItems(2)] = 0.0) -> type:
        return type(n)

    assert count(np.int64(3), values=5.0) is int
    with pytest.raises(TypeError, match="fn must be callable"):
        declare.declared(42)

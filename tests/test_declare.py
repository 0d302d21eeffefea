"""course_utils.declare: a @checked function's annotations are its argument checks, each error naming the argument
and the rule."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
import pytest

from course_utils import declare


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

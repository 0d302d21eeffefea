"""course_utils.display: one Table, the formatters and the verdict line."""

from __future__ import annotations

import pytest

from course_utils import display


def test_table_renders_aligned_text_and_html() -> None:
    t = display.table(["name", "time"], [("a", "1 ms"), ("longer", "20 ms")], title="T", note="n")
    text = repr(t)
    assert text.splitlines()[0] == "T" and "longer  20 ms" in text and text.endswith("n")
    html = t._repr_html_()
    assert "<caption" in html and "<th>name</th>" in html and "text-align:right'>20 ms" in html
    assert t.column("time") == ["1 ms", "20 ms"]


def test_table_refuses_ragged_rows_and_unknown_columns() -> None:
    with pytest.raises(ValueError, match="rows"):
        display.table(["a", "b"], [("1",)])
    with pytest.raises(ValueError, match="name"):
        display.table(["a"], [("1",)]).column("b")


@pytest.mark.parametrize(("seconds", "text"), [(812e-9, "812 ns"), (12.3e-6, "12.3 µs"), (4.56e-3, "4.56 ms"),
                                               (1.234, "1.23 s"), (0.000999999, "1 ms"), (0.99999, "1 s")])
def test_format_time(seconds, text) -> None:
    assert display.format_time(seconds) == text


@pytest.mark.parametrize(("nbytes", "text"), [(812, "812 B"), (12.3 * 2**10, "12.3 KiB"), (4.56 * 2**20, "4.56 MiB"),
                                              (2**30, "1 GiB"), (2**20 - 1, "1 MiB")])
def test_format_bytes_uses_binary_units(nbytes, text) -> None:
    assert display.format_bytes(nbytes) == text


def test_rates_and_ratios() -> None:
    assert display.format_rate(12.7e9) == "12.7 GB/s"
    assert display.format_flops(351e9) == "351 GFLOP/s" and display.format_flops(2e12) == "2 TFLOP/s"
    assert display.ratio(2.345) == "2.35x" and display.percent(0.426) == "43%"


def test_record_counts_what_has_a_status() -> None:
    before = display.verdict_counts()
    display.record(type("Scored", (), {"status": "not tested"})())
    assert display.verdict_counts()["not tested"] == before["not tested"] + 1
    with pytest.raises(ValueError, match="status"):
        display.record(object())


def test_prose_joins_paragraphs_and_measures_the_longest() -> None:
    text = display.prose("One two three.", "", "| a | b |\n|---|---|", "Four five.")
    assert str(text) == "One two three.\n\nThe table".replace("The table", "| a | b |\n|---|---|") + "\n\nFour five."
    assert text._repr_markdown_() == str(text) and text.longest_paragraph == 3
    with pytest.raises(TypeError, match=r"paragraphs\[0\]"):
        display.prose(None)
    with pytest.raises(ValueError, match="text"):
        display.prose("", " ")


def test_a_string_is_never_taken_for_a_list_of_rows_or_cells() -> None:
    # table(["a"], "abc") used to make three one-letter rows
    for bad, name in ((lambda: display.table(["a"], "abc"), "rows"),
                      (lambda: display.table("ab", [("1", "2")]), "header"),
                      (lambda: display.table(["a", "b"], ["xy"]), r"rows\[0\]")):
        with pytest.raises(TypeError, match=name):
            bad()
    table = display.Table(["a"], [["1"]])  # lists in, tuples kept
    assert table.rows == (("1",),) and table.column("a") == ["1"]
    with pytest.raises(TypeError, match=r"rows\[0\]\[0\]"):
        display.Table(("a",), ((1,),))


def test_ratios_are_positive_and_percent_digits_bounded() -> None:
    assert display.ratio(2.345) == "2.35x" and display.percent(0.4263, 1) == "42.6%"
    for bad in (-2, 0, float("nan")):
        with pytest.raises(ValueError, match="value"):
            display.ratio(bad)
    for bad, error in ((-1, ValueError), (2.5, TypeError), (99, ValueError)):
        with pytest.raises(error, match="digits"):
            display.percent(0.5, bad)

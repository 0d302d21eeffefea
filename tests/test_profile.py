"""course_utils.profile: traces read into one Trace (small hand-made traces), captures in each framework."""

from __future__ import annotations

import gzip
import json

import pytest

from course_utils import plotting, profile


def _chrome(tmp_path, events, name="t.json"):
    meta = [{"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "main"}}]
    path = tmp_path / name
    text = json.dumps({"traceEvents": meta + events})
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _x(name, ts, dur, tid=7, cat="cpu_op"):
    return {"ph": "X", "pid": 1, "tid": tid, "name": name, "cat": cat, "ts": ts, "dur": dur}


def test_busy_gaps_and_counts_of_a_small_trace(tmp_path) -> None:
    events = [_x("op_a", 0, 10), _x("op_b", 5, 10), _x("op_a", 40, 10), _x("loader", 0, 100, tid=8, cat="data"),
              _x("profiler", 0, 200, cat="Trace")]
    trace = profile.load(_chrome(tmp_path, events))
    assert trace.threads() == ["1/8", "main"]  # unnamed threads get pid/tid; busiest first
    assert trace.count("op_") == 3 and trace.count("op_a", thread="main") == 2 and trace.count("nope") == 0
    assert trace.busy("main") == pytest.approx(25e-6)  # [0, 15] and [40, 50]: the overlap counts once
    assert trace.gaps("main") == [(pytest.approx(15e-6), pytest.approx(25e-6))]
    assert trace.span == pytest.approx(100e-6)  # torch.profiler's own 'Trace' span is dropped
    assert trace.names(1) == [("op_a", 2)]
    assert "main" in repr(trace) and "<table>" in trace._repr_html_()


def test_gzipped_perfetto_json_loads(tmp_path) -> None:
    trace = profile.load(_chrome(tmp_path, [_x("fusion", 1.5, 2.0)], "t.json.gz"), "jax")
    assert trace.framework == "jax" and trace.events[0].start == pytest.approx(1.5e-6)


@pytest.mark.parametrize(("content", "message"), [("", "not a JSON trace"), ("{\"traceEvents\": []}", "no events"),
                                                  ("[1, 2]", "no events"), ("{\"x\": 1}", "traceEvents"),
                                                  ("not json", "not a JSON trace")])
def test_malformed_or_empty_traces_are_clear_errors(tmp_path, content, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        profile.load(path)


@pytest.mark.parametrize(("event", "field"), [
    ({"ts": float("nan")}, "ts"),  # json writes NaN; a NaN start made every busy time NaN
    ({"ts": "soon"}, "ts"),
    ({"ts": None}, "ts"),
    ({"ts": [1]}, "ts"),
    ({"dur": -5}, "dur"),  # busy -5 µs was accepted
    ({"dur": float("inf")}, "dur"),
    ({"tid": [7]}, "tid"),
], ids=["ts-nan", "ts-text", "ts-null", "ts-list", "dur-negative", "dur-inf", "tid-list"])
def test_a_malformed_event_field_is_named_not_read_as_a_number(tmp_path, event, field) -> None:
    with pytest.raises(ValueError, match=rf"traceEvents\[1\] field '{field}'"):
        profile.load(_chrome(tmp_path, [{**_x("op", 0, 10), **event}]))


def test_a_trace_file_that_is_not_json_says_so(tmp_path) -> None:
    meta = {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": "main"}  # args must be an object
    with pytest.raises(ValueError, match="field 'args'"):
        profile.load(_chrome(tmp_path, [meta, _x("op", 0, 1)]))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)  # json.load raised RecursionError
    with pytest.raises(ValueError, match="nested too deeply"):
        profile.load(deep)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode())[:-8])  # gzip raised EOFError
    with pytest.raises(ValueError, match="not a JSON trace"):
        profile.load(cut)


def test_a_capture_writes_only_below_the_folder_it_is_given(tmp_path) -> None:
    from badinput import rejects

    rejects(lambda: profile.capture("torch", print, folder=tmp_path / ".." / "elsewhere"), "folder")
    rejects(lambda: profile.capture("torch", print, name=".."), "name")
    rejects(lambda: profile.capture("torch", print, timeout=0), "timeout")


def test_bad_arguments_name_themselves(tmp_path) -> None:
    from badinput import rejects

    trace = profile.load(_chrome(tmp_path, [_x("a", 0, 1)]))
    rejects(lambda: profile.load(tmp_path / "missing.json"), "path")
    rejects(lambda: profile.load(3), "path")
    rejects(lambda: trace.busy("other"), "thread")
    rejects(lambda: trace.gaps("main", top=0), "top")
    rejects(lambda: trace.select("zzz"), "name")
    rejects(lambda: profile.capture("mxnet", print), "framework")
    rejects(lambda: profile.capture("torch", 3), "fn")
    rejects(lambda: profile.capture("torch", print, steps=0), "steps")
    rejects(lambda: profile.capture("torch", print, name="../x"), "name")
    rejects(lambda: plotting.trace_timeline(None), "trace")


def test_torch_capture_counts_eager_ops_and_draws_a_timeline(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    x = torch.ones(64)
    trace = profile.capture("torch", lambda t: torch.tanh(t) + torch.exp(t), x, steps=3, folder=tmp_path)
    assert trace.count(r"^aten::tanh$") == 3 and trace.count(r"^aten::exp$") == 3
    assert (tmp_path / "trace.torch.json").exists()
    assert plotting.trace_timeline(trace).axes


def test_jax_capture_sees_the_compiled_fusion(tmp_path) -> None:
    jax = pytest.importorskip("jax")
    f = jax.jit(lambda t: jax.numpy.tanh(t) * 2 + 1)
    x = jax.numpy.ones(64)
    f(x).block_until_ready()
    trace = profile.capture("jax", f, x, steps=2, folder=tmp_path, name="chain")
    assert trace.count("fusion") >= 2 and (tmp_path / "chain.jax.json.gz").exists()


def test_tensorflow_capture_reads_the_xspace_protobuf(tmp_path) -> None:
    pytest.importorskip("tensorflow")
    from course_utils import env

    tf = env.import_tensorflow()
    f = tf.function(lambda t: tf.tanh(t) + 1.0)
    x = tf.ones(64)
    f(x)
    trace = profile.capture("tf", f, x, steps=2, folder=tmp_path)
    assert trace.count("EagerExecute") == 2 and trace.framework == "tensorflow"

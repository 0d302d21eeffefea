"""What was compiled: a graph break's reason kept whole with its hints, and a model that compiled no graph
decided "nothing to migrate" instead of priced (made-up worker results: no process is started)."""

from __future__ import annotations

import json

from fake_assessment import fake

from course_utils import migrate
from course_utils.migrate import compiled, decision, report

# Dynamo's log message for an nn.GRU (torch 2.13), as the graph_breaks artifact gives it
GRU_BREAK = """Graph break in user code at /home/me/model.py:12
Graph Break Reason: Failed to handle graph break gracefully. Skipping the function and falling back to eager. \
Graph break encountered:

Attempted to wrap RNN, GRU, or LSTM
  Explanation: Dynamo does not support RNN, GRU, or LSTM.
  Hint: Set torch._dynamo.config.allow_rnn=True to enable experimental support for RNN, GRU, and LSTM in Dynamo

  Developer debug context: GRU(8, 8, batch_first=True)

 For more details about this graph break, please visit: https://example.org/gb0014.html

User code traceback:
  File "/home/me/model.py", line 12, in forward
    y, _ = self.gru(x)
"""


def test_a_break_is_kept_whole_with_its_hint_and_without_the_traceback() -> None:
    text = compiled.break_text(GRU_BREAK)
    assert text.startswith("/home/me/model.py:12: Failed to handle graph break gracefully")
    assert "Hint: Set torch._dynamo.config.allow_rnn=True" in text and "GRU(8, 8, batch_first=True)" in text
    assert "User code traceback" not in text and "http" not in text and "\n\n" not in text
    assert compiled.short_reason(text) == ("Attempted to wrap RNN, GRU, or LSTM (Dynamo does not support RNN, GRU, "
                                           "or LSTM)")


def test_no_compiled_graph_means_nothing_to_migrate_whatever_the_timings(tmp_path) -> None:
    found = fake((1.5, 1.6, 1.55), graphs=0, breaks=(compiled.break_text(GRU_BREAK),))
    assert found.decision.outcome == decision.NOTHING
    assert found.decision.text == ("nothing to migrate: Dynamo compiled no graph and ran the whole forward eager: "
                                   "Attempted to wrap RNN, GRU, or LSTM (Dynamo does not support RNN, GRU, or LSTM)")
    told = report.findings_of(found)
    assert migrate.story.blockers(told["parity"], told["fallback"]) == []  # the rollback had nothing to roll back
    assert told["fallback"].sentence.startswith("The rollback was not tested: no graph was compiled")
    sentence = told["decision"].sentence
    assert sentence.startswith("**Decision: nothing to migrate: Dynamo compiled no graph") and "speed-up" in sentence
    report.write(found, tmp_path)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["decision"].startswith("nothing to migrate: ") and saved["compiled_graphs"] == {"default": 0}
    md = (tmp_path / "report.md").read_text()
    assert "\n  Hint: Set torch._dynamo.config.allow_rnn=True" in md  # the hint, indented under its break
    assert found.priced(migrate.read_config(None)).decision.outcome == decision.NOTHING


def test_a_model_that_compiled_is_decided_as_before() -> None:
    found = fake((1.5, 1.6, 1.55), graphs=2)
    assert found.decision.outcome == decision.MIGRATE and found.deciding.nothing is None
    assert "2 counted in the first process" in report.findings_of(found)["compiled"].sentence


def test_a_busy_machine_decides_nothing_and_says_so(tmp_path) -> None:
    cores = migrate.record.host()["logical_cores"]
    busy = fake((1.5, 1.6, 1.55), load=cores + 3.0)
    assert busy.decision.outcome == decision.BUSY and busy.decision.text.startswith(
        f"not decided: the machine was busy: the 1-minute load average reached {cores + 3.1:.2f}")
    told = report.findings_of(busy)
    assert told["decision"].sentence.startswith("**No decision: the machine was busy.**")
    report.write(busy, tmp_path)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["decision"].startswith("not decided: the machine was busy") and saved["load"]["busy"]
    quiet = fake((1.5, 1.6, 1.55), load=min(0.5, cores / 2))
    assert quiet.decision.outcome == decision.MIGRATE
    assert report.findings_of(quiet)["quiet"].sentence.startswith("The machine was quiet:")
    nothing = fake((1.5, 1.6, 1.55), load=cores + 3.0, graphs=0)
    assert nothing.decision.outcome == decision.NOTHING  # nothing compiled says more than a busy machine

"""What was compiled: a graph break's reason kept whole with its hints, and a model that compiled no graph
decided "nothing to migrate" instead of priced (made-up worker results: no process is started)."""

from __future__ import annotations

import json

from fake_assessment import fake

from course_utils import migrate
from course_utils.migrate import decision, parity, report

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
    text = parity.break_text(GRU_BREAK)
    assert text.startswith("/home/me/model.py:12: Failed to handle graph break gracefully")
    assert "Hint: Set torch._dynamo.config.allow_rnn=True" in text and "GRU(8, 8, batch_first=True)" in text
    assert "User code traceback" not in text and "http" not in text and "\n\n" not in text
    assert parity.short_reason(text) == ("Attempted to wrap RNN, GRU, or LSTM (Dynamo does not support RNN, GRU, "
                                           "or LSTM)")


def test_no_compiled_graph_means_nothing_to_migrate_whatever_the_timings(tmp_path) -> None:
    found = fake((1.5, 1.6, 1.55), graphs=0, breaks=(parity.break_text(GRU_BREAK),))
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
    assert saved["decision"].startswith("nothing to migrate: ") and saved["modes"][0]["compiled_graphs"] == 0
    md = (tmp_path / "report.md").read_text()
    assert "\n  Hint: Set torch._dynamo.config.allow_rnn=True" in md  # the hint, indented under its break
    assert found.priced(migrate.read_config(None)).decision.outcome == decision.NOTHING


def test_a_model_that_compiled_is_decided_as_before() -> None:
    found = fake((1.5, 1.6, 1.55), graphs=2)
    assert found.decision.outcome == decision.MIGRATE and found.deciding.nothing is None
    assert "2 counted in the first process" in report.findings_of(found)["compiled"].sentence


"""Logging writes to the stderr of the moment: a captured stream that was closed later breaks nothing."""

from __future__ import annotations

import io
import sys

from sysmo.log import configure, get_logger


def test_events_follow_sys_stderr_after_a_swapped_stream_is_closed(monkeypatch, capsys):
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)
    configure(level="INFO")
    get_logger("test").info("while.swapped", n=1)
    assert "while.swapped" in captured.getvalue()
    captured.close()
    monkeypatch.undo()
    get_logger("test").info("after.restored", n=2)  # raised "I/O operation on closed file" before
    assert "after.restored" in capsys.readouterr().err
    configure()


def test_library_warnings_and_events_of_a_run_go_to_its_log_not_the_terminal(tmp_path, capsys) -> None:
    import logging
    import warnings

    from sysmo.log import get_logger, library_warnings_into

    path = tmp_path / "exp" / "run.log"
    with library_warnings_into(path) as caught:
        warnings.warn("Tight layout not applied", UserWarning)
        logging.getLogger("matplotlib.legend").warning("No artists with labels found")
        get_logger("sysmo.test").warning("embedding.fallback", reason="no torch")
    assert len(caught) == 3
    text = path.read_text()
    assert "UserWarning: Tight layout not applied" in text and "matplotlib.legend: No artists" in text
    assert "embedding.fallback" in text and "no torch" in text
    assert capsys.readouterr().err == ""
    with warnings.catch_warnings(record=True) as later:  # after the block, warnings are Python's again
        warnings.simplefilter("always")
        warnings.warn("after the run", UserWarning)
    assert [str(w.message) for w in later] == ["after the run"] and path.read_text() == text

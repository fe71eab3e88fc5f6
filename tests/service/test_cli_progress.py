"""`reme reindex` on a terminal: a bar fed by the service's index progress (from `status`)."""

from __future__ import annotations

import asyncio
import threading
from contextlib import contextmanager

import pytest

from reme.app.progress import QUIET, reporter, reporting
from reme.service.cli_progress import TerminalProgress, follow, index_progress


class FakeRemote:
    def __init__(self, states):
        self.states = list(states)

    def call(self, job, params):
        assert job == "status"
        progress = self.states.pop(0) if self.states else {"phase": None, "done": 0, "total": None}
        return Reply({"success": True, "metadata": {"components": {"index": {"progress": progress}}}})


class Reply:
    def __init__(self, response):
        self.response = response


def test_index_progress_reads_the_running_catch_up():
    remote = FakeRemote(
        [{"phase": "rebuild", "done": 1200, "total": 5183}, {"phase": None, "done": 5183, "total": 5183}]
    )
    assert index_progress(remote) == (1200, 5183)
    assert index_progress(remote) is None  # finished: nothing to draw


def test_follow_reports_each_new_state_until_the_call_returns():
    states = iter([(200, 450), (200, 450), (400, 450)])
    seen, polled_all = [], threading.Event()

    def poll():
        state = next(states, None)
        if state is None:
            polled_all.set()
        return state

    def run():
        assert polled_all.wait(30)
        return "reindexed"

    assert follow(run, poll, lambda done, total: seen.append((done, total)), interval=0.001) == "reindexed"
    assert seen == [(200, 450), (400, 450)]


def test_follow_reraises_the_calls_error():
    def run():
        raise OSError("connection reset")

    with pytest.raises(OSError, match="connection reset"):
        follow(run, lambda: None, lambda *_: None, interval=0.001)


class Recorder:
    """A reporter that keeps what the steps reported."""

    def __init__(self):
        self.lines, self.counts = [], []

    def say(self, topic, line):
        self.lines.append((topic, line))

    @contextmanager
    def counting(self, label, total=None):
        yield lambda done, total: self.counts.append((label, done, total))


def test_steps_report_to_the_reporter_installed_around_them_and_nowhere_else():
    def step():  # what a step does: ask for the reporter, never for a terminal
        reporter().say("dream", "unit 1/1 'tea': integrating")
        with reporter().counting("reindexing") as update:
            update(3, 5)

    step()  # nobody installed one: quiet, no error
    recorder = Recorder()
    with reporting(recorder):
        asyncio.run(asyncio.to_thread(step))  # reaches the job's tasks and worker threads
    step()
    assert reporter() is QUIET
    assert recorder.lines == [("dream", "unit 1/1 'tea': integrating")]
    assert recorder.counts == [("reindexing", 3, 5)]


def test_the_terminal_reporter_draws_on_stderr_only(capsys):
    terminal = TerminalProgress()
    terminal.say("dream", "unit 1/2 [tea]: integrating")
    with terminal.counting("reindexing", total=2) as update:
        update(1, 2)
    out, err = capsys.readouterr()
    assert out == "" and "dream unit 1/2 [tea]: integrating" in err

"""`reme reindex` on a terminal: a bar fed by the service's index progress (from `status`)."""

from __future__ import annotations

import threading

import pytest

from reme.service.cli_progress import follow, index_progress


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

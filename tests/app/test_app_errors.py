"""The error tree: a user error and an unavailable resource answer with their message; a bug says so."""

from __future__ import annotations

import linecache

import pytest

from reme.app.config import ConfigError
from reme.app.jobs import ParameterError
from reme.errors import Conflict, LLMUnavailable, ReMeError, Unavailable, UserError, bug_message, kind_of


def _raised_in_reme(source: str) -> Exception:
    """Run `run()` from `source` as if it were a module of reme, and return what it raised."""
    filename = f"<reme-probe-{abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, object] = {"__name__": "reme.probe"}
    exec(compile(source, filename, "exec"), namespace)
    with pytest.raises(Exception) as caught:
        namespace["run"]()  # type: ignore[operator]
    return caught.value


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (ReMeError("bad"), "user"),
        (UserError("bad"), "user"),
        (Conflict("changed"), "user"),
        (ConfigError("config key 'x'"), "user"),
        (ParameterError("parameter 'x'"), "user"),
        (Unavailable("start it"), "unavailable"),
        (LLMUnavailable("set LLM_MODEL"), "unavailable"),
        (TimeoutError("lock held"), "unavailable"),
        (FileNotFoundError("daily/x.md"), "user"),
        (KeyError("x"), "bug"),
        (TypeError("x"), "bug"),
        (ValueError("never raised"), "bug"),  # no traceback: not raised by reme on purpose
    ],
)
def test_kind_of_sorts_exceptions_into_the_tree(exc: Exception, kind: str) -> None:
    assert kind_of(exc) == kind


def test_a_value_error_reme_raises_on_purpose_is_a_user_error() -> None:
    exc = _raised_in_reme('def run():\n    raise ValueError("path must be relative")\n')
    assert kind_of(exc) == "user"


def test_a_value_error_from_a_failed_conversion_is_a_bug() -> None:
    exc = _raised_in_reme('def run():\n    return int("seven")\n')
    assert isinstance(exc, ValueError) and kind_of(exc) == "bug"


def test_a_value_error_from_outside_reme_is_a_bug() -> None:
    with pytest.raises(ValueError) as caught:
        raise ValueError("a plugin's message")
    assert kind_of(caught.value) == "bug"  # this test module is not reme: plugins raise UserError


def test_a_bug_message_names_the_exception_and_says_it_is_a_bug() -> None:
    assert bug_message(KeyError("path")) == (
        "internal error (a bug in reme; its traceback is in the log): KeyError: 'path'"
    )

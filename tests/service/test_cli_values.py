"""CLI values typed by the job's parameter schema (no guess about the text can break a job)."""

from __future__ import annotations

import pytest

from reme.service.cli_values import job_params, split_words, typed_value

STRING = {"type": "string"}
INTEGER = {"type": "integer", "minimum": 1}
PATHS = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


@pytest.mark.parametrize("text", ["2024", "10", "true", '{"a":1}', "007", "[1]", '"quoted"', "null"])
def test_a_string_parameter_gets_the_text_as_typed(text):
    assert typed_value(text, STRING) == text


@pytest.mark.parametrize(
    ("schema", "text", "expected"),
    [
        (INTEGER, "3", 3),
        (INTEGER, "007", "007"),  # not JSON: the service names the type it wanted
        (INTEGER, "true", "true"),  # a boolean is no integer
        ({"type": "number"}, "2", 2),
        ({"type": "number"}, "-1.5e3", -1500.0),
        ({"type": "boolean"}, "false", False),
        ({"type": "array"}, '["md"]', ["md"]),
        ({"type": "object"}, '{"tags": ["a"]}', {"tags": ["a"]}),
        (PATHS, "daily/a.md", "daily/a.md"),
        (PATHS, '["a.md", "b.md"]', ["a.md", "b.md"]),
        ({"enum": ["forward", "backward"]}, "forward", "forward"),
        ({"type": ["integer", "null"]}, "null", None),
    ],
)
def test_other_types_are_parsed_only_when_the_schema_wants_them(schema, text, expected):
    assert typed_value(text, schema) == expected


def test_a_value_without_a_schema_keeps_the_generic_typing():
    assert typed_value("3", None) == 3
    assert typed_value("007", None) == "007"


SEARCH = {"properties": {"query": STRING, "limit": INTEGER}, "required": ["query"]}


def test_bare_words_fill_the_first_required_parameter():
    assigned, bare = split_words(["solar", "limit=2"])
    assert job_params(assigned, bare, SEARCH, "search") == {"query": "solar", "limit": 2}
    assert job_params({}, ["solar", "panels"], SEARCH, "search") == {"query": "solar panels"}
    help_schema = {"properties": {"job": STRING}}  # no required parameter, but only one
    assert job_params({}, ["search"], help_schema, "help") == {"job": "search"}


@pytest.mark.parametrize(
    ("assigned", "bare", "parameters", "message"),
    [
        ({}, ["oops"], {"properties": {}}, "version has no required parameter to take 'oops'"),
        ({"query": "a"}, ["b"], SEARCH, "query is given twice"),
        ({}, ["1", "2"], {"properties": {"n": INTEGER}, "required": ["n"]}, "n takes one value"),
        ({}, ["oops"], None, "expected key=value, got 'oops'"),
    ],
)
def test_bare_words_that_fit_no_parameter_are_refused(assigned, bare, parameters, message):
    with pytest.raises(ValueError, match=message):
        job_params(assigned, bare, parameters, "version")

"""The secret patterns: each kind is caught in context, ordinary text is left alone."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reme.pipelines.agent_transcripts import TOOL_RESULT_CHARS, tool_result_note
from reme.pipelines.messages import content_text
from reme.pipelines.redaction import PATTERNS, redact, redact_value


# fake secrets, built so that no scanner mistakes this file for a leak
def _case(before: str, secret: str, after: str = "") -> tuple[str, str]:
    return before + secret + after, secret


CAUGHT = {
    "api_key": [
        _case("OPENAI_KEY is ", "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t", " now"),
        _case("anthropic ", "sk-ant-" + "api03-" + "x" * 30),
    ],
    "github_token": [
        _case("API_TOKEN = '", "ghp_" + "R2d2C3poBb8Ee4Ll9Ww0Xx7Yy6Zz5Aa1Kk3M", "'"),
        _case("", "github_pat_" + "11ABCDEFG0" * 3),
    ],
    "aws_access_key": [_case("aws id ", "AKIA" + "IOSFODNN7EXAMPLE", " here")],
    "bearer_token": [
        _case("curl -H 'Authorization: Bearer ", "abcDEF123456ghiJKL789", "'"),
        _case("Authorization: Token ", "abcdef1234567890abc"),
    ],
    "jwt": [_case("token ", "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJkZXYifQ.c2lnbmF0dXJlLXRlc3Q")],
    "slack_token": [_case("", "xoxb-" + "123456789012-abcdefghij")],
    "google_api_key": [_case("maps ", "AIza" + "SyA1234567890abcdefghijklmnopqrstuv")],
    "stripe_key": [_case("", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc")],
    "url_password": [_case("postgres://app:", "s3cretpass", "@db.internal:5432/app")],
    "secret_assignment": [
        _case("password=", "hunter2hunter2"),
        _case('DB_PASSWORD: "', "correct-horse", '"'),
        _case("client_secret = '", "abcd1234efgh", "'"),
        _case("export API_KEY=", "zzzz9999yyyy"),
        _case('export PASSWORD="', "correct horse battery staple", '"'),
        _case("AWS_SECRET_ACCESS_KEY=", "wJalrXUtnFEMI9K7MDENG"),
        _case("SECRET_KEY = '", "django-insecure-abc123", "'"),
    ],
    "basic_auth": [_case("curl -H 'Authorization: Basic ", "dXNlcjpwYXNzd29yZA==", "'")],
    "gitlab_token": [_case("GL ", "glpat-" + "xY3zW9vU7tS5rQ1pO2nM", " ok")],
    "huggingface_token": [_case("login ", "hf_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF")],
    "npm_token": [
        _case("//registry.npmjs.org/:_authToken=", "npm_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF1234")
    ],
    "cli_password": [
        _case("psql --password ", "hunter22", " -h db"),
        _case("tool --token=", "abcd1234efgh"),
        _case("mysql -u root -p", "hunter22", " app"),
    ],
    "private_key": [
        _case("", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKCAQ\n-----END RSA PRIVATE KEY-----")
    ],
}


@pytest.mark.parametrize(
    ("kind", "text", "secret"), [(k, t, s) for k, cases in CAUGHT.items() for t, s in cases]
)
def test_each_kind_of_secret_is_replaced_by_its_label(kind: str, text: str, secret: str) -> None:
    out = redact(text)
    assert f"[REDACTED:{kind}]" in out, out
    assert secret not in out and text.replace(secret, f"[REDACTED:{kind}]") == out


def test_every_pattern_has_a_caught_example() -> None:
    assert {kind for kind, _, _ in PATTERNS} == set(CAUGHT)


@pytest.mark.parametrize(
    "text",
    [
        "The token budget is 8000; use a password manager.",
        "skip-the-tests and task-based retry",
        "https://example.com/docs/auth",
        "Ask for the API key in the settings page",
        "a sha256 0f343b0931126a20f133d67c2b018a3b",
        "max_tokens=4096",
        "Total tokens: 12345",
        "tokenizer: gpt2",
        "token_count = len(tokens)",
        "PWD=/home/alice/project",
        "secretary: Alice",
        "credentials: true",
        "private_key_path: ~/.ssh/id_rsa",
        "SECRET_KEY = os.environ['SECRET_KEY']",
        "api_key: null",
        "password=$DB_PASSWORD",
        "token internationalization",
        "Token internationalization",
        "We discussed the bearer internationalization work",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_the_surrounding_text_and_the_key_name_survive() -> None:
    assert (
        redact("before password=hunter2hunter2 after") == "before password=[REDACTED:secret_assignment] after"
    )
    assert (
        redact("Authorization: Bearer abcDEF123456ghiJKL789")
        == "Authorization: Bearer [REDACTED:bearer_token]"
    )


def test_redaction_is_stable_when_applied_twice() -> None:
    once = redact("password=hunter2hunter2 and sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t")
    assert redact(once) == once


def test_an_unterminated_private_key_is_cut_to_the_end() -> None:
    assert (
        redact("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk") == "key:\n[REDACTED:private_key]"
    )


def test_metadata_values_are_redacted_deep() -> None:
    value = {"env": ["token: abcd1234efgh"], "n": 3, "nested": {"url": "redis://u:pw12345@h"}}
    assert redact_value(value) == {
        "env": ["token: [REDACTED:secret_assignment]"],
        "n": 3,
        "nested": {"url": "redis://u:[REDACTED:url_password]@h"},
    }


ADVERSARIAL = [
    "ab.",
    "a-",
    "x://",
    "a://b:",
    "a" * 1000 + " ",
    "x_token=",
    "password: ",
    "Bearer ",
    "mysql -p",
]


def test_a_long_adversarial_message_is_redacted_in_linear_time() -> None:
    # each shape made the old patterns backtrack super-linearly (minutes for 40k characters); a
    # subprocess bounds the work without a tight timing
    script = (
        "from reme.pipelines.redaction import redact\n"
        f"for shape in {ADVERSARIAL!r}:\n"
        "    redact(shape * (200_000 // len(shape)))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)


SECRET = "ghp_" + "R2d2C3poBb8Ee4Ll9Ww0Xx7Yy6Zz5Aa1Kk3M"


@pytest.mark.parametrize("offset", [10, 20, 30])
def test_a_secret_across_the_cut_of_a_tool_note_leaves_no_prefix(offset: int) -> None:
    # the note is cut to its first characters; the secret straddles the cut
    result = tool_result_note("x" * (TOOL_RESULT_CHARS - offset) + " " + SECRET + " tail")
    call = content_text(
        {"content": [{"type": "tool_use", "name": "Bash", "input": "y" * (200 - offset) + " " + SECRET}]}
    )
    for note in (result, call):
        assert "ghp_" not in note and SECRET[:offset] not in note, note

"""Secret redaction: gitleaks' rules and reme's own catch each kind in context; ordinary text stays."""

from __future__ import annotations

import random
import string
import subprocess
import sys

import pytest

from reme.pipelines.capture.messages import message_text
from reme.pipelines.capture.redaction import redact, redact_cut, redact_note, redact_value
from reme.pipelines.capture.transcripts import TOOL_RESULT_CHARS, tool_result_note
from reme.workspace import frontmatter
from reme.workspace.secret_rules import go_to_python, load_rules

# Fake secrets are assembled at run time from random characters, so that no scanner mistakes this
# file for a leak, and so that they pass the rules' entropy floors as real keys do.
_RNG = random.Random(21)


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _case(before: str, secret: str, after: str = "") -> tuple[str, str]:
    return before + secret + after, secret


LOWER = string.ascii_lowercase + string.digits
CAUGHT = {
    # gitleaks' provider rules
    "openai-api-key": [_case("OPENAI_KEY is ", "sk-proj-" + _rand(74) + "T3BlbkFJ" + _rand(74), " now")],
    "anthropic-api-key": [_case("anthropic ", "sk-ant-" + "api03-" + _rand(93, LOWER + "_-") + "AA")],
    "github-pat": [_case("API_TOKEN = '", "ghp_" + _rand(36), "'")],
    "github-fine-grained-pat": [_case("", "github_pat_" + _rand(82, LOWER + "_"))],
    "aws-access-token": [_case("aws id ", "AKIA" + _rand(16, string.ascii_uppercase + "234567"), " here")],
    "stripe-access-token": [_case("", "rk_prod_" + _rand(24))],
    "digitalocean-pat": [_case("do ", "dop_v1_" + _rand(64, "0123456789abcdef"))],
    "pypi-upload-token": [_case("", "pypi-AgEIcHlwaS5vcmc" + _rand(60, LOWER + "_-"))],
    "gitlab-pat": [_case("GL ", "glpat-" + _rand(20), " ok")],
    "age-secret-key": [_case("", "AGE-SECRET-KEY-1" + _rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))],
    # reme's own rules
    "authorization-header": [
        _case("curl -H 'Authorization: Bearer ", "abcDEF123456ghiJKL789", "'"),
        _case("Authorization: Token ", "abcdef1234567890abc"),
        _case("curl -H 'Authorization: Basic ", "dXNlcjpwYXNzd29yZA==", "'"),
    ],
    "bearer-token": [_case("send it with bearer ", "q9Xk2mLp4Rt7vWz1Yb3N", " in the header")],
    "url-password": [_case("postgres://app:", "s3cretpass", "@db.internal:5432/app")],
    "password-assignment": [
        _case("password=", "hunter2hunter2"),
        _case('export PASSWORD="', "correct horse battery staple", '"'),
        _case("The password: ", "Tr0ub4dor&3", ""),
    ],
    "secret-assignment": [
        _case("SECRET_KEY = '", "django-insecure-abc123", "'"),
        _case('stripeKey = "', "q8Zr2Lm5Xv9Tc1Bn", '"'),
    ],
    "cli-password": [
        _case("psql --password ", "hunter22", " -h db"),
        _case("mysql -u root -p", "hunter22", " app"),
    ],
    "private-key-block": [
        _case("", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKCAQ\n-----END RSA PRIVATE KEY-----")
    ],
    "high-entropy-token": [
        _case("Fixing the zendesk login with ", _rand(32, LOWER)),
        _case("paste ", "x7Kq2Lm9Pz4Rt8Vw3Yb6Nc1D", " into the box"),
    ],
}


@pytest.mark.parametrize(
    ("kind", "text", "secret"), [(k, t, s) for k, cases in CAUGHT.items() for t, s in cases]
)
def test_each_kind_of_secret_is_replaced_by_its_label(kind: str, text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert f"[REDACTED:{kind}]" in out, out


def test_the_rules_come_from_gitleaks_and_all_compile() -> None:
    rules = load_rules()
    assert len(rules.rules) >= 200 and not rules.skipped
    assert {"stripe-access-token", "gitlab-pat", "generic-api-key"} <= {r.id for r in rules.rules}


def test_go_flag_groups_and_end_anchor_are_rewritten() -> None:
    assert go_to_python(r"\b(p8e-(?i)[a-z0-9]{32})(?:x|$)") == r"\b(p8e-(?i:[a-z0-9]{32}))(?:x|$)"
    assert go_to_python(r"a(?:[^\w-]|\z)") == r"a(?:[^\w-]|\Z)"


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
        "The passphrase: must be at least 12 characters",
        "api_key = your key here",
        "build-2025-03-14-rc2 shipped",
        "UUID 123e4567-e89b-12d3-a456-426614174000 identifies the order.",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_the_surrounding_text_and_the_key_name_survive() -> None:
    assert (
        redact("before password=hunter2hunter2 after")
        == "before password=[REDACTED:password-assignment] after"
    )
    assert (
        redact("Authorization: Bearer abcDEF123456ghiJKL789")
        == "Authorization: Bearer [REDACTED:authorization-header]"
    )


def test_redaction_is_stable_when_applied_twice() -> None:
    once = redact("password=hunter2hunter2 and ghp_" + _rand(36))
    assert redact(once) == once


def test_an_unterminated_private_key_is_cut_to_the_end() -> None:
    assert (
        redact("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk")
        == "key:\n[REDACTED:private-key-block]"
    )


def test_metadata_values_are_redacted_deep_with_their_keys_in_view() -> None:
    value = {
        "env": ["token: abcd1234efgh"],
        "n": 3,
        "nested": {"url": "redis://u:pw12345@h", "password": "hunter22x"},
    }
    out = redact_value(value)
    assert out["n"] == 3 and out["env"][0].startswith("token: [REDACTED:")
    assert out["nested"] == {
        "url": "redis://u:[REDACTED:url-password]@h",
        "password": out["nested"]["password"],
    }
    assert out["nested"]["password"].startswith("[REDACTED:") and "hunter22x" not in str(out)


def test_a_note_keeps_valid_front_matter() -> None:
    secret = "ghp_" + _rand(36)
    note = f"---\nname: {secret}\ntags: [a]\n---\n# {secret}\n"
    out = redact_note(note)
    parsed = frontmatter.parse(out)
    assert secret not in out and parsed.error is None
    assert parsed.metadata["name"] == "[REDACTED:github-pat]" and parsed.metadata["tags"] == ["a"]


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


@pytest.mark.slow
def test_a_long_adversarial_message_is_redacted_in_linear_time() -> None:
    # each shape made the old patterns backtrack super-linearly (minutes for 40k characters); a
    # subprocess bounds the work without a tight timing
    script = (
        "from reme.pipelines.capture.redaction import redact\n"
        f"for shape in {ADVERSARIAL!r}:\n"
        "    redact(shape * (200_000 // len(shape)))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)


SECRET = "ghp_" + "R2d2C3poBb8Ee4Ll9Ww0Xx7Yy6Zz5Aa1Kk3M"


@pytest.mark.parametrize("offset", [10, 20, 30])
def test_a_secret_across_the_cut_of_a_tool_note_leaves_no_prefix(offset: int) -> None:
    # the note is cut to its first characters; the secret straddles the cut
    result = tool_result_note("x" * (TOOL_RESULT_CHARS - offset) + " " + SECRET + " tail")
    call = message_text(
        {"content": [{"type": "tool_use", "name": "Bash", "input": "y" * (200 - offset) + " " + SECRET}]}
    )
    for note in (result, call):
        assert "ghp_" not in note and SECRET[:offset] not in note, note


@pytest.mark.parametrize("offset", [5, 20, 35])
def test_a_cut_message_is_redacted_across_the_cut_and_counts_what_it_dropped(offset: int) -> None:
    secret = "ghp_" + _rand(36)
    text = "x" * (100 - offset) + " " + secret + " tail " + "y" * 50_000
    out = redact_cut(text, 100)
    assert secret[:offset] not in out and "[REDACTED:github-pat]" in out  # the cut moves past the secret
    assert out.endswith(f"[truncated {len(text) - text.index(secret) - len(secret)} characters]")
    assert redact_cut("short ghp_" + secret[4:], 100) == "short [REDACTED:github-pat]"


def test_hashes_and_ids_stay_but_a_key_prefixed_hex_goes() -> None:
    digest = "".join(_RNG.choice("0123456789abcdef") for _ in range(40))
    for kept in (f"commit {digest}", f"sha256-{digest}", f"chatgpt-{_RNG.getrandbits(128):032x}"):
        assert redact(kept) == kept
    assert redact(f"use live_{digest}") == "use [REDACTED:high-entropy-token]"

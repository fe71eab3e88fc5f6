"""Adversarial review findings (digest upkeep and capture): each test asserts the documented behaviour
for a case that once broke it (a secret left on disk).

docs/capture-safety.md: "Every capture path runs [redaction] before a byte of captured or imported text
reaches disk"; src/reme/pipelines/capture/redaction.py `redact_cut`: "a secret across the cut is still
recognised whole and leaves no prefix behind".
"""

from __future__ import annotations

import random
import string
from pathlib import Path

from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)

from reme.pipelines.capture.redaction import redact, redact_cut

# fake secrets assembled at run time, so no scanner mistakes this file for a leak
_RNG = random.Random(7)


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


PASSWORD = "Correct" + "Horse" + "Battery9"  # a human password: no entropy rule sees its prefix
DB_URL = f"postgres://admin:{PASSWORD}@db.internal:5432/app"
GITHUB_TOKEN = "ghp_" + _rand(36)
# a realistic PEM block: 64-character lines, so the base64 stripper (400+ runs) leaves it to redaction
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "".join(_rand(64) + "\n" for _ in range(70))
    + "-----END RSA PRIVATE KEY-----\n"
)


def _key_then_url(max_chars: int) -> str:
    """A message (e.g. `cat id_rsa .env`) whose private key shrinks a lot when redacted, followed by a
    database URL whose `@` falls just past the redaction window (`max_chars + SECRET_SPAN`)."""
    text = "here are the files:\n" + PEM
    at = DB_URL.index("@")
    start = max_chars + 4096 - at
    return text + " " * (start - len(text)) + DB_URL + " done"


def _files_text(ws: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in ws.rglob("*") if p.is_file())


def test_redact_cut_never_keeps_a_secret_cut_at_the_scan_window() -> None:
    assert PASSWORD not in redact(DB_URL)  # recognised when whole
    out = redact_cut(_key_then_url(8000), 8000)
    assert PASSWORD not in out and PASSWORD[:8] not in out, out[-200:]


async def test_agent_session_append_writes_no_password_after_a_long_private_key(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    message = {"id": "m1", "role": "user", "content": _key_then_url(8000)}
    response = await app.run("agent_session_append", session_id="leak-cut", messages=[message])
    assert response.success, response.answer
    saved = (app.workspace_dir / "session/dialog/leak-cut.jsonl").read_text(encoding="utf-8")
    assert "[REDACTED:private-key" in saved
    assert PASSWORD not in _files_text(app.workspace_dir)


async def test_auto_memory_writes_no_password_after_a_long_private_key(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    message = {"id": "m1", "role": "user", "content": _key_then_url(8000)}
    await app.run("auto_memory", session_id="leak-cut-2", messages=[message])  # no model: saved, pending
    assert (app.workspace_dir / "session/dialog/leak-cut-2.jsonl").is_file()
    assert PASSWORD not in _files_text(app.workspace_dir)


async def test_a_secret_in_a_message_name_never_reaches_disk(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    message = {"id": "m1", "role": "user", "name": GITHUB_TOKEN, "content": "deploy with my token please"}
    response = await app.run("agent_session_append", session_id="leak-name", messages=[message])
    assert response.success, response.answer
    await app.run("auto_memory", session_id="leak-name-2", messages=[message])
    assert (app.workspace_dir / "session/dialog/leak-name.jsonl").is_file()
    assert GITHUB_TOKEN not in _files_text(app.workspace_dir)

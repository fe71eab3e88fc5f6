"""Local-only jobs (`enable_serve: false`): the exact command that runs one on this machine.

Such a job reads host paths or runs long model work, so no service runs it for a client; `help`
marks it and a service asked for it answers with this command instead of a bare "not served".
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path

from reme.app.jobs import JobSpec

IMPORT_PREFIX = "import_"
MAX_ECHOED_CHARS = 200  # a longer value is shown as `name=...`: the answer stays a readable command


def is_local(job: JobSpec) -> bool:
    """A job a client may ask for by name but only a local run performs (cron and background jobs are
    the scheduler's, never asked for)."""
    return not job.enable_serve and job.kind in ("base", "stream")


def _word(name: str, value: object) -> str:
    """`name=value` for a shell: strings as they are, anything else as JSON (how the CLI types it)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shlex.quote(f"{name}={text}") if len(text) <= MAX_ECHOED_CHARS else f"{name}=..."


def local_command(job: JobSpec, workspace_dir: Path, params: Mapping[str, object] | None = None) -> str:
    """`reme import obsidian SOURCE workspace_dir=...` for an import, else `reme start job=NAME ...`:
    the parameters given, then every required one still missing as `name=...`."""
    given = dict(params or {})
    source = given.pop("source", None)
    missing = [p for p in job.parameters.get("required", []) if p != "source" and p not in given]
    words = [*(_word(k, v) for k, v in given.items()), *(f"{param}=..." for param in missing)]
    where = f"workspace_dir={shlex.quote(str(workspace_dir))}"
    if job.name.startswith(IMPORT_PREFIX):
        kind = job.name.removeprefix(IMPORT_PREFIX).replace("_", "-")
        first = "SOURCE" if source is None else shlex.quote(str(source))
        return " ".join(["reme", "import", kind, first, *words, where])
    return " ".join(["reme", "start", f"job={job.name}", *words, where])

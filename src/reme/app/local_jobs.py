"""Local-only jobs (`enable_serve: false`): the exact command that runs one on this machine.

Such a job reads host paths or runs long model work, so no service runs it for a client; `help`
marks it and a service asked for it answers with this command instead of a bare "not served".
"""

from __future__ import annotations

import shlex
from pathlib import Path

from reme.app.jobs import JobSpec

IMPORT_PREFIX = "import_"


def is_local(job: JobSpec) -> bool:
    """A job a client may ask for by name but only a local run performs (cron and background jobs are
    the scheduler's, never asked for)."""
    return not job.enable_serve and job.kind in ("base", "stream")


def local_command(job: JobSpec, workspace_dir: Path) -> str:
    """`reme import obsidian SOURCE workspace_dir=...` for an import, else `reme start job=NAME ...`,
    with every required parameter as `name=...`."""
    where = f"workspace_dir={shlex.quote(str(workspace_dir))}"
    required = [p for p in job.parameters.get("required", []) if p != "source"]
    rest = "".join(f" {param}=..." for param in required)
    if job.name.startswith(IMPORT_PREFIX):
        kind = job.name.removeprefix(IMPORT_PREFIX).replace("_", "-")
        return f"reme import {kind} SOURCE{rest} {where}"
    return f"reme start job={job.name}{rest} {where}"

"""The project's folder: where `make` runs, holding the local servers' `.stack/`, `make
run`'s `.state/` and `deploy/` (the Prometheus rules `make run` loads).

`JOBPOST_PROJECT_ROOT` names it; else it is the working directory. Never where this
package is installed: an installed jobpost-dev works from any checkout it is run in.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ProjectSettings(BaseSettings):
    """Environment prefix `JOBPOST_PROJECT_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_PROJECT_")

    root: Path = Field(default_factory=Path.cwd)


def project_root() -> Path:
    """The project's folder, as an absolute path (the servers run in folders of their own)."""
    return ProjectSettings().root.resolve()

"""What every section of the spec shares: frozen, no unknown keys, environment checks."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


def check_env_name(name: str) -> str:
    """A name ``execve`` accepts: not empty, no ``=`` and no NUL byte."""
    if not name or "=" in name or "\0" in name:
        raise ValueError("an environment variable name must be non-empty, without '=' or NUL bytes")
    return name


def check_env_value(value: object) -> object:
    if isinstance(value, str) and "\0" in value:
        raise ValueError("an environment variable value cannot contain a NUL byte")
    return value


def check_environment(env: dict[str, str]) -> dict[str, str]:
    for name, value in env.items():
        check_env_name(name)
        check_env_value(value)
    return env


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

"""A boolean environment flag as a registry declares it, whichever stack's registry it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EnvFlag:
    name: str
    default: bool | None  # None: unset by default, or computed at run time (see default_source)
    default_source: str  # as written in the registry, e.g. "True", "None", "_default_hip"
    line: int
    comment: str = ""  # the comment lines right above its declaration

    @property
    def default_text(self) -> str:
        if self.default is not None:
            return "true" if self.default else "false"
        if self.default_source == "None":
            return "unset"
        if self.default_source.isidentifier():
            return f"{self.default_source}() at run time"
        return f"computed at run time: {self.default_source}"

    @property
    def levels(self) -> list[bool | None]:
        """The factor levels: the default first, then the other value(s)."""
        if self.default is None:
            return [None, True, False]
        return [self.default, not self.default]

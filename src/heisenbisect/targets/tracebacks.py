"""Python tracebacks in a target's output: the last one, and whether it says "could not run".

A target that dies on an ImportError at an old commit, or on a SyntaxError in a half-done
refactor, did not test anything: its exit status 1 is the interpreter's complaint, not the
failure under study. Such a run is untestable (git bisect's 125), never bad. An exception
raised while the test ran (an AttributeError inside a function, a RuntimeError from a race)
is another matter: it may be the bug, so it is only pointed out.

Could not run: ImportError and ModuleNotFoundError, SyntaxError, IndentationError and
TabError, FileNotFoundError (a file the commit lacks), and a NameError raised at module level
(every frame a ``<module>`` frame: the script refers to a name it never defined, before any
test code ran). The protocol (`targets.protocol`) and the studies' evidence (`targets.log_endings`) both
read tracebacks through this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = "Traceback (most recent call last):"
COULD_NOT_RUN = frozenset(
    {
        "ImportError",
        "ModuleNotFoundError",
        "SyntaxError",
        "IndentationError",
        "TabError",
        "FileNotFoundError",
    }
)
AT_MODULE_LEVEL = frozenset({"NameError"})  # could not run only when raised outside any function
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line \d+(?:, in (?P<function>.+))?$')
_EXCEPTION = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::|$)")
_BARE_SYNTAX = re.compile(r"^(SyntaxError|IndentationError|TabError): ")


@dataclass(frozen=True)
class Traceback:
    """One traceback: its exception line and the functions of its frames, outermost first.

    ``functions`` holds None for a frame without a function (a SyntaxError's own line);
    the import machinery's and runpy's frames are left out.
    """

    exception: str  # "ModuleNotFoundError: No module named 'flakymod'", or "(traceback cut off)"
    functions: tuple[str | None, ...]

    @property
    def kind(self) -> str:
        """The exception's class name, without its module (``requests.ConnectionError`` -> ConnectionError)."""
        match = _EXCEPTION.match(self.exception)
        return match["name"].rsplit(".", 1)[-1] if match else ""

    @property
    def at_module_level(self) -> bool:
        return all(f in ("<module>", None) for f in self.functions)

    @property
    def could_not_run(self) -> bool:
        """Whether the run died before it could test anything (see the module's docstring)."""
        return self.kind in COULD_NOT_RUN or (self.kind in AT_MODULE_LEVEL and self.at_module_level)


def last_traceback(text: str) -> Traceback | None:
    """The last traceback in ``text`` (a stderr tail, a log's tail), or None.

    A SyntaxError in the main script prints no "Traceback" header, only the file, the line
    and the error: that counts when it ends ``text``.
    """
    lines = text.splitlines()
    start = max((i for i, line in enumerate(lines) if line.rstrip() == MARKER), default=None)
    if start is None:
        return _bare_syntax_error(lines)
    functions: list[str | None] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        if line[0].isspace():
            frame = _FRAME.match(line)
            if frame and not _machinery(frame["file"]):
                functions.append(frame["function"])
            continue
        return Traceback(line.strip(), tuple(functions))
    return Traceback("(traceback cut off)", tuple(functions))


def _bare_syntax_error(lines: list[str]) -> Traceback | None:
    """``  File "app.py", line 3`` ... ``SyntaxError: ...`` as the last lines, without a header."""
    ending = [line for line in lines if line.strip()][-6:]
    if not ending or not _BARE_SYNTAX.match(ending[-1]):
        return None
    if not any(_FRAME.match(line) for line in ending[:-1]):
        return None
    return Traceback(ending[-1].strip(), (None,))


def _machinery(file: str) -> bool:
    """Frames of the import system and of ``python -m``, not of the target's own code."""
    return (
        file.startswith("<frozen ")
        or file.endswith(("runpy.py", "importlib/__init__.py"))
        or "/importlib/_bootstrap" in file
    )

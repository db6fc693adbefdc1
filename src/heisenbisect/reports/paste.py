"""paste.md: one self-contained markdown a user pastes into an upstream issue (SGLang, vLLM, ...).

What maintainers ask reporters for, and what report.md cannot give pasted: report.md links to
files beside it (the plot, the logs) and shows the machine's absolute paths, which break or leak
on GitHub. paste.md holds the conclusion, the rate table, the spec in a collapsed block, the
environment, by-hand commands with paths relative to the spec's folder, and one failing run's
evidence inline (its log's tail; for a serving target its bad request and response): no link,
and every path of the machine that ran it rewritten relative to the spec's folder.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from heisenbisect.reports import environment as environment_section
from heisenbisect.targets.log_tail import read_tail

SCRIPT_BYTES = 20_000  # a target's script shown in the paste: one small file, not a project
SCRIPT_LANGUAGES = {".py": "python", ".sh": "bash", ".bash": "bash"}
LOG_TAIL_LINES = 40
LOG_TAIL_BYTES = 6000
EVIDENCE_CHARS = 4000


class Scrub:
    """Rewrites the machine's absolute paths: the spec's folder (and the folders below it) as
    relative paths, the home folder as ``~``, a virtual environment as ``<venv>``, a study folder
    outside the spec's as ``<study folder>``."""

    def __init__(self, spec_dir: Path, study_root: Path | None = None):
        places = {
            (str(spec_dir.resolve()), "."),
            (str(spec_dir.absolute()), "."),
            (str(Path.home()), "~"),
        }
        if (
            sys.prefix != sys.base_prefix
        ):  # a virtual environment's interpreter, as a spec may name it
            places.add((sys.prefix, "<venv>"))
        if study_root is not None and not study_root.resolve().is_relative_to(spec_dir.resolve()):
            places.add((str(study_root.resolve()), "<study folder>"))  # --out elsewhere
        self.places = sorted(places, key=lambda place: -len(place[0]))

    def __call__(self, text: str) -> str:
        for absolute, shown in self.places:
            if absolute in ("/", "."):
                continue
            # whole path components only: /tmp/a is not /tmp/ab's start
            text = re.sub(
                re.escape(absolute) + r"(?![^/\s'\"`:;,)\]])", shown.replace("\\", "\\\\"), text
            )
        return text


def relative(path: Path, spec_dir: Path) -> str:
    """``path`` as seen from the spec's folder."""
    return os.path.relpath(path.resolve(), spec_dir.resolve())


def spec_lines(spec_path: Path, scrub: Scrub) -> list[str]:
    """The spec file verbatim (paths scrubbed), collapsed: it maps every factor to its flag."""
    try:
        text = spec_path.read_text(errors="replace")
    except OSError:
        return []
    code = scrub(text).rstrip("\n").replace("```", "` ` `")
    return collapsed(f"The spec: <code>{spec_path.name}</code>", "yaml", code)


def script_lines(argv: list[str], folder: Path, spec_dir: Path, scrub: Scrub) -> list[str]:
    """The target's script, collapsed, when its command names exactly one file of the spec's folder
    (or below) and it is small: what a maintainer needs to rerun from the paste alone. Nothing when
    the command names none or several (a project is not pasted) or the file is large."""
    named = []
    for word in argv[1:] if len(argv) > 1 else argv:
        path = (folder / word).resolve() if not Path(word).is_absolute() else Path(word).resolve()
        if path.is_file() and path.is_relative_to(spec_dir.resolve()) and path not in named:
            named.append(path)
    if len(named) != 1 or named[0].stat().st_size > SCRIPT_BYTES:
        return []
    try:
        text = named[0].read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    code = scrub(text).rstrip("\n").replace("```", "` ` `")
    language = SCRIPT_LANGUAGES.get(named[0].suffix, "")
    shown = relative(named[0], spec_dir)
    return collapsed(f"The target's script: <code>{shown}</code>", language, code)


def environment_lines(environment: dict | None) -> list[str]:
    """The environment table without the host's name (a private detail an issue does not need)."""
    if not environment:
        return ["## Environment", "", "Not recorded (a store older than this record).", ""]
    return environment_section.markdown_lines(environment, with_host=False)


def log_tail(log_path: str | None) -> str | None:
    """The last lines of a log, at most `LOG_TAIL_LINES` and `LOG_TAIL_BYTES`."""
    text = read_tail(log_path, LOG_TAIL_BYTES) if log_path else None
    return None if text is None else "\n".join(text.splitlines()[-LOG_TAIL_LINES:])


def bad_session(log_path: str) -> dict | None:
    """A serving target's first bad session with its request and response (``*.evidence.json``)."""
    path = Path(log_path)
    found = path.with_name(path.stem + ".evidence.json")
    try:
        evidence = json.loads(found.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sessions = [s for s in evidence.get("sessions") or [] if s.get("evidence")]
    if not sessions:
        return None
    return {
        "server": evidence.get("server"),
        "workload": evidence.get("workload"),
        "session": sessions[0],
    }


def failing_run_lines(log_path: str | None, scrub: Scrub) -> list[str]:
    """One failing run's evidence, inline: its log's tail and, for a serving target, its bad session."""
    tail = log_tail(log_path)
    if tail is None:
        return []
    name = Path(log_path or "").name
    lines = [
        "## One failing run",
        "",
        f"The last lines of its log (`{name}`):",
        "",
        "```",
        scrub(tail).replace("```", "` ` `"),
        "```",
        "",
    ]
    if session := bad_session(log_path or ""):
        text = json.dumps(session, indent=2, ensure_ascii=False)
        cut = (
            f"\n... ({len(text) - EVIDENCE_CHARS} more characters in the run's evidence file)"
            if len(text) > EVIDENCE_CHARS
            else ""
        )
        code = scrub(text[:EVIDENCE_CHARS]) + cut
        lines += collapsed("Its first bad session: the request and the response", "json", code)
    return lines


def collapsed(summary: str, language: str, code: str) -> list[str]:
    """A code block folded under ``summary``: GitHub shows the summary and opens the block on a click."""
    return [
        "<details><summary>" + summary + "</summary>",
        "",
        "```" + language,
        code,
        "```",
        "",
        "</details>",
        "",
    ]


def without_links(text: str) -> str:
    """Markdown links and images to local files replaced by their text: a paste has no files beside it."""
    text = re.sub(r"!\[([^\]]*)\]\((?!https?://)[^)]*\)", "", text)
    return re.sub(r"\[([^\]]*)\]\((?!https?://)[^)]*\)", r"\1", text)


def from_report(
    report: str,
    spec_path: Path,
    study_root: Path,
    environment: dict | None,
    failing_log: str | None,
    target: tuple[list[str], Path] | None = None,
) -> str:
    """A paste made from a rendered report (group screening's): its links and images dropped, its
    Environment section without the host, the spec, the ``target``'s script (its argv and folder)
    and one failing run added, paths rewritten."""
    scrub = Scrub(spec_path.parent, study_root)
    script = script_lines(*target, spec_path.parent, scrub) if target else []
    sections = re.split(r"(?m)^(?=## )", report.rstrip("\n") + "\n")
    kept = [s for s in sections if not s.startswith("## Environment")]
    at = next((i for i, s in enumerate(kept) if s.startswith("## Reproduce")), len(kept))
    added = (
        "\n".join([*spec_lines(spec_path, scrub), *script, *environment_lines(environment)]) + "\n"
    )
    text = (
        "".join(kept[:at])
        + added
        + "".join(kept[at:])
        + "\n"
        + "\n".join(failing_run_lines(failing_log, scrub))
    )
    return without_links(scrub(text))

"""A streamed chat completion put back together the way the OpenAI Python client does it.

Agent frameworks stream, and a server's streaming tool-call parser (incremental JSON
arguments, special tokens split across deltas) is a different code path from the
non-streamed one. The client's rule (``openai/lib/streaming/_deltas.py``,
``accumulate_delta``): strings are concatenated, numbers added, dicts merged key by key,
lists of objects merged by their ``index``; ``index`` and ``type`` are replaced, not
concatenated. So a server that sends a tool call's ``name`` or ``id`` twice gives the client
``get_weatherget_weather``, which is what an agent then tries to call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class StreamFormatError(ValueError):
    """The bytes are not a chat-completion event stream: the transport, not the parser, failed."""


class DeltaError(StreamFormatError):
    """A delta the client cannot merge (a tool call without an integer ``index``): the OpenAI
    client raises on it, so the agent's turn is lost; a corrupted response, not an outage."""


def accumulate_delta(acc: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Merge one ``delta`` into the snapshot ``acc`` (in place, returned), by the client's rules."""
    for key, value in delta.items():
        if key not in acc or acc[key] is None:
            acc[key] = value
            continue
        current = acc[key]
        if key in ("index", "type"):
            acc[key] = value
        elif isinstance(current, str) and isinstance(value, str):
            acc[key] = current + value
        elif (
            isinstance(current, (int, float))
            and isinstance(value, (int, float))
            and not isinstance(current, bool)
        ):
            acc[key] = current + value
        elif isinstance(current, dict) and isinstance(value, dict):
            acc[key] = accumulate_delta(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            if all(isinstance(x, (str, int, float)) for x in current):
                current.extend(value)
                continue
            for entry in value:
                if not isinstance(entry, dict) or not isinstance(entry.get("index"), int):
                    raise DeltaError(f"list delta entry without an integer index: {entry!r:.120}")
                index = entry["index"]
                if index < len(current):
                    current[index] = accumulate_delta(current[index], entry)
                else:
                    current.insert(index, entry)
        # any other pair of types: the client keeps the old value, and so do we
    return acc


@dataclass
class StreamedCompletion:
    """The raw chunks of one streamed response, and the message they add up to."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        self.chunks.append(chunk)
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                accumulate_delta(self.message, _copy(delta))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def deltas(self) -> list[dict[str, Any]]:
        """Each chunk's ``choices[0].delta``, in order (empty ones included)."""
        out = []
        for chunk in self.chunks:
            for choice in chunk.get("choices") or []:
                if (
                    isinstance(choice, dict)
                    and choice.get("index", 0) == 0
                    and isinstance(choice.get("delta"), dict)
                ):
                    out.append(choice["delta"])
        return out


def parse_event_line(line: str) -> dict[str, Any] | None:
    """One server-sent-events line: the chunk it carries, or None (comments, blanks, ``[DONE]``)."""
    line = line.strip()
    if not line or line.startswith(":") or not line.startswith("data:"):
        return None
    data = line[len("data:") :].strip()
    if data == "[DONE]":
        return None
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError as exc:
        raise StreamFormatError(f"event is not JSON ({exc.msg}): {data!r:.120}") from None
    if not isinstance(chunk, dict):
        raise StreamFormatError(f"event is not a JSON object: {data!r:.120}")
    if "error" in chunk and "choices" not in chunk:
        raise StreamFormatError(
            f"the server sent an error event: {json.dumps(chunk['error'])[:200]}"
        )
    return chunk


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))

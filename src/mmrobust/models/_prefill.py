"""Where a request's assistant prefill goes in a chat body (``--model-arg prefill=``)."""

from __future__ import annotations

from typing import Any

from mmrobust.models.base import Request


def place_prefill(
    request: Request,
    mode: str,
    content: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    *,
    strip: bool = False,
) -> dict[str, Any]:
    """Put ``request.assistant_prefill`` where ``mode`` (``--model-arg prefill=``) says; shared
    by the chat backends (``openai:``, ``anthropic:``).

    ``drop`` sends none and returns ``{"prefill_dropped": True}`` (recorded with the row);
    ``user`` appends it as a text part of the user turn's ``content``; any other mode
    (``message``, ``continue``) appends a final assistant turn to ``messages`` (``strip``:
    without trailing whitespace, which the Messages API refuses). No prefill: ``{}``, nothing
    changed. ``continue``'s server flags are the backend's own.
    """
    text = request.assistant_prefill
    if not text:
        return {}
    if mode == "drop":
        return {"prefill_dropped": True}
    if mode == "user":
        content.append({"type": "text", "text": text})
    else:
        messages.append({"role": "assistant", "content": text.rstrip() if strip else text})
    return {}


__all__ = ["place_prefill"]

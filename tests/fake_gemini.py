"""The Gemini wire format of the loopback fake server (``tests/fake_openai_server.py``).

What the public API reference says a ``models.generateContent`` request and reply look like
(https://ai.google.dev/api/generate-content; the key: https://ai.google.dev/api,
"Authentication"), as the fake checks and renders them:

* :func:`request_problems`: every reason the real API would refuse a body with 400
  ``INVALID_ARGUMENT`` that we can check offline: unknown fields (either JSON spelling,
  ``inline_data`` / ``inlineData``), a ``Content`` whose role is not ``user``/``model`` or
  without parts, a ``Part`` with no or two data fields, an ``inline_data`` blob whose
  ``data`` is not strict base64, whose MIME type the API does not take, or whose bytes are
  not of that type (a JPEG starts ``FF D8 FF``, an MP4 has ``ftyp`` at byte 4), and
  ``generationConfig`` / ``thinkingConfig`` fields of the wrong name or type.
* :func:`reply_body` / :func:`error_body`: a ``Reply``'s meaning as a
  ``GenerateContentResponse`` (``candidates[0].content.parts[].text``, ``finishReason``,
  ``usageMetadata``) or as Google's error envelope (``{"error": {"code", "message",
  "status"}}``).
* :func:`flat_parts`: a request's user parts in the shape the other tests read
  (``{"type": "text"}`` / ``{"type": "inline_data", "mime_type", "data"}``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

PATH_SUFFIX = ":generateContent"
"""``POST {base_url}/models/{model}:generateContent``."""
KEY_HEADER = "x-goog-api-key"

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
VIDEO_TYPES = frozenset(
    {"video/mp4", "video/mpeg", "video/mov", "video/avi", "video/x-flv", "video/mpg",
     "video/webm", "video/wmv", "video/3gpp"}
)  # fmt: skip
"""MIME types the API takes inline (the reference's image and video understanding pages)."""

_TOP = {"contents", "tools", "toolConfig", "safetySettings", "systemInstruction",
        "generationConfig", "cachedContent"}  # fmt: skip
_DATA = {"text", "inlineData", "fileData", "functionCall", "functionResponse",
         "executableCode", "codeExecutionResult"}  # fmt: skip
_PART_EXTRA = {"thought", "thoughtSignature", "videoMetadata", "partMetadata"}
_NUMBERS = {"temperature": float, "topP": float, "topK": int, "maxOutputTokens": int,
            "candidateCount": int, "seed": int, "presencePenalty": float,
            "frequencyPenalty": float}  # fmt: skip
_CONFIG = {*_NUMBERS, "stopSequences", "responseMimeType", "responseSchema", "thinkingConfig",
           "mediaResolution", "responseModalities", "responseLogprobs", "logprobs"}  # fmt: skip
_THINKING = {"thinkingBudget": int, "includeThoughts": bool, "thinkingLevel": str}
_MAGIC = {"image/jpeg": (0, b"\xff\xd8\xff"), "image/png": (0, b"\x89PNG"),
          "video/mp4": (4, b"ftyp")}  # fmt: skip

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                404: "NOT_FOUND", 409: "ABORTED", 413: "INVALID_ARGUMENT",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
                504: "DEADLINE_EXCEEDED"}  # fmt: skip
"""HTTP status -> ``google.rpc.Code`` name, as the API pairs them."""
FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}
"""The OpenAI finish reasons ``Reply.ok`` takes -> ``Candidate.FinishReason``."""


def _camel(key: str) -> str:
    """``inline_data`` -> ``inlineData`` (the API reads either spelling of a field)."""
    head, *rest = key.split("_")
    return head + "".join(w.title() for w in rest)


def _fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {_camel(k): v for k, v in obj.items()}


def request_problems(body: Any) -> list[str]:
    """Why the API would refuse ``body`` (empty: a valid ``GenerateContentRequest``)."""
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    top = _fields(body)
    problems = [f'Unknown name "{k}"' for k in top if k not in _TOP]
    contents = top.get("contents")
    if not isinstance(contents, list) or not contents:
        return [*problems, "contents is required"]
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role", "user") not in ("user", "model"):
            problems.append(f"contents[{i}]: role must be user or model")
            continue
        problems += _parts_problems(content.get("parts"), f"contents[{i}]")
    if "systemInstruction" in top:
        system = top["systemInstruction"]
        parts = system.get("parts") if isinstance(system, dict) else None
        problems += _parts_problems(parts, "systemInstruction")
    return problems + _config_problems(top.get("generationConfig", {}))


def _parts_problems(parts: Any, where: str) -> list[str]:
    if not isinstance(parts, list) or not parts:
        return [f"{where}: parts must be a non-empty list"]
    problems = []
    for j, part in enumerate(parts):
        fields = _fields(part) if isinstance(part, dict) else {}
        data = [k for k in fields if k in _DATA]
        unknown = [k for k in fields if k not in _DATA | _PART_EXTRA]
        if len(data) != 1 or unknown:
            problems.append(f"{where}.parts[{j}]: one data field, no unknown ones ({list(fields)})")
        elif data == ["inlineData"]:
            problems += _blob_problems(fields["inlineData"], f"{where}.parts[{j}]")
        elif data == ["text"] and not isinstance(fields["text"], str):
            problems.append(f"{where}.parts[{j}].text is not a string")
    return problems


def _blob_problems(blob: Any, where: str) -> list[str]:
    fields = _fields(blob) if isinstance(blob, dict) else {}
    if set(fields) != {"mimeType", "data"}:
        return [f"{where}.inline_data needs exactly mime_type and data ({list(fields)})"]
    mime = fields["mimeType"]
    if mime not in IMAGE_TYPES | VIDEO_TYPES:
        return [f"{where}: unsupported MIME type {mime!r}"]
    try:
        raw = base64.b64decode(str(fields["data"]), validate=True)
    except (binascii.Error, ValueError):
        return [f"{where}.inline_data.data is not base64"]
    offset, magic = _MAGIC.get(mime, (0, b""))
    if raw[offset : offset + len(magic)] != magic:
        return [f"{where}: the bytes are not {mime}"]
    return []


def _config_problems(config: Any) -> list[str]:
    if not isinstance(config, dict):
        return ["generationConfig is not an object"]
    fields = _fields(config)
    problems = [f'generationConfig: Unknown name "{k}"' for k in fields if k not in _CONFIG]
    for key, kind in _NUMBERS.items():
        value = fields.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, kind))):
            problems.append(f"generationConfig.{key} is not a {kind.__name__}")
    thinking = fields.get("thinkingConfig", {})
    for key, value in (_fields(thinking) if isinstance(thinking, dict) else {"?": 0}).items():
        if key not in _THINKING or not isinstance(value, _THINKING[key]):
            problems.append(f"thinkingConfig.{key}: unknown or of the wrong type")
    return problems


def error_body(status: int, message: str, *, reason: str | None = None) -> dict[str, Any]:
    """Google's error envelope for HTTP ``status`` (``reason``: an ``ErrorInfo`` detail)."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return {"error": error}


def reply_body(
    text: str | None, prompt_tokens: int, completion_tokens: int, finish: str
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` with one candidate saying ``text`` (``None``: a
    candidate with no parts; ``""``: one empty text part)."""
    content: dict[str, Any] = {"role": "model"}
    if text is not None:
        content["parts"] = [{"text": text}]
    return {
        "candidates": [
            {"content": content, "finishReason": FINISH.get(finish, finish), "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": completion_tokens,
            "totalTokenCount": prompt_tokens + completion_tokens,
        },
        "modelVersion": "test",
    }


def flat_parts(body: Any) -> list[dict[str, Any]]:
    """The last ``user`` turn's parts: ``{"type": "text", "text"}`` and ``{"type":
    "inline_data", "mime_type", "data"}`` (other parts: ``{"type": <its field>}``)."""
    contents = body.get("contents") if isinstance(body, dict) else None
    users = [c for c in contents or [] if isinstance(c, dict) and c.get("role", "user") == "user"]
    out: list[dict[str, Any]] = []
    for part in users[-1].get("parts") or [] if users else []:
        fields = _fields(part) if isinstance(part, dict) else {}
        if "text" in fields:
            out.append({"type": "text", "text": fields["text"]})
        elif isinstance(fields.get("inlineData"), dict):
            blob = _fields(fields["inlineData"])
            out.append({"type": "inline_data", "mime_type": blob.get("mimeType"),
                        "data": blob.get("data")})  # fmt: skip
        else:
            out.append({"type": next(iter(fields), "?")})
    return out


__all__ = [
    "FINISH",
    "IMAGE_TYPES",
    "KEY_HEADER",
    "PATH_SUFFIX",
    "STATUS_NAMES",
    "VIDEO_TYPES",
    "error_body",
    "flat_parts",
    "reply_body",
    "request_problems",
]

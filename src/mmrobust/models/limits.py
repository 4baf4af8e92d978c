"""Server limits: rejections that will repeat for every sample, recognised by their message.

A server that refuses a request (HTTP 4xx) usually refuses *that* request
(an image it cannot decode): the sample gets the final status ``rejected``.
Some refusals are a limit of the server's configuration that every sample
of the run hits alike; asking the other samples only repeats the refusal,
and a run that answers only the samples under the limit (short clips) would
be biased. These are recognised here; the runner (``run.process.StopRules``)
stops at the first count limit (``images``, ``videos``), and at a ``context``
limit (which depends on the sample: wide or long clips) only when nearly all
of the first samples hit it, else it stores those samples ``rejected`` and
goes on; either way with the server's message and the fix:

========== ====================================================== ==============================
kind       server message (vLLM, OpenAI-compatible, Gemini API)   fix
========== ====================================================== ==============================
images     ``At most 8 image(s) may be provided in one prompt.``  ``--frames N`` / server's
                                                                  ``--limit-mm-per-prompt``
videos     ``At most 0 video(s) may be provided in one prompt.``, send frames as images
           ``... does not support video input``                   (no ``video=true``)
context    ``maximum context length is 4096 tokens``,             fewer ``--frames``, smaller
           ``prompt (length N) is longer than the maximum model   ``image_max_side``, server's
           length``, ``input token count (N) exceeds the          ``--max-model-len``
           maximum number of tokens allowed (M)``
========== ====================================================== ==============================

vLLM's wording: ``vllm/multimodal/parse.py`` (``At most {limit} {modality}(s)
may be provided in one prompt.``) and its OpenAI server's context-length error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

LimitKind = Literal["images", "videos", "context"]

_MM_COUNT = re.compile(r"at most (\d+) (image|video)\(?s?\)? may be provided", re.IGNORECASE)
_NO_VIDEO = re.compile(
    r"(does not support video|video input(?:s)? (?:is |are )?not supported|"
    r"no video (?:processor|support))",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"(maximum context length is \d+|longer than the maximum model length|"
    r"context_length_exceeded|exceeds? the (?:model's )?(?:maximum )?context (?:length|window)|"
    r"exceeds the maximum number of tokens allowed)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ServerLimit:
    """A recognised limit of the server.

    Attributes:
        kind: ``images``, ``videos`` or ``context``.
        fix: one sentence telling the user what to change.
    """

    kind: LimitKind
    fix: str

    def as_extra(self) -> dict[str, Any]:
        """The JSON form stored in ``Response.extra["server_limit"]``."""
        return {"kind": self.kind, "fix": self.fix}


def recognise_limit(message: str, *, n_images: int = 0, n_videos: int = 0) -> ServerLimit | None:
    """The server limit a rejection's ``message`` names, or ``None`` (a sample-specific refusal).

    Args:
        message: the server's error text (body of the 4xx reply).
        n_images: image parts the refused request carried (frames).
        n_videos: video parts it carried.
    """
    count = _MM_COUNT.search(message)
    if count is not None:
        limit, modality = int(count.group(1)), count.group(2).lower()
        if modality == "image":
            if limit == 0:
                fix = (
                    "the served model takes no images: send the clip as one video "
                    "(--model-arg video=true) if it takes video (vLLM serves LLaVA-NeXT-Video "
                    "video-only), else serve a vision model or start the server with "
                    "--limit-mm-per-prompt '{\"image\": 8}'"
                )
            else:
                fix = (
                    f"the server takes at most {limit} images per prompt and this request "
                    f"had {n_images}: pass --frames {limit} (or --max-frames {limit} with "
                    "--fps), or start the server with --limit-mm-per-prompt "
                    f"'{{\"image\": {max(n_images, limit + 1)}}}'"
                )
            return ServerLimit("images", fix)
        return ServerLimit("videos", _video_fix(limit, n_videos))
    if _NO_VIDEO.search(message):
        return ServerLimit("videos", _video_fix(0, n_videos))
    if _CONTEXT.search(message):
        return ServerLimit(
            "context",
            "the prompt with its frames is longer than the model's context: use fewer "
            "--frames or a smaller --model-arg image_max_side, or start the server with a "
            "larger --max-model-len",
        )
    return None


def _video_fix(limit: int, n_videos: int) -> str:
    if limit == 0:
        return (
            "the served model takes no video input: send frames as images (leave out "
            "--model-arg video=true; hf: video_input=images)"
        )
    return (
        f"the server takes at most {limit} videos per prompt: start it with "
        f"--limit-mm-per-prompt '{{\"video\": {max(n_videos, limit + 1)}}}'"
    )


__all__ = ["LimitKind", "ServerLimit", "recognise_limit"]

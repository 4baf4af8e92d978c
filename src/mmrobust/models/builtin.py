"""The built-in backends, one :class:`~mmrobust.models.backend_spec.BackendSpec` each.

Registered by :mod:`mmrobust.models.spec` when it is imported. Factories are lazy
``"module:function"`` names, so importing mmrobust never imports torch or an HTTP client.
"""

from __future__ import annotations

from mmrobust.models.backend_spec import BackendSpec
from mmrobust.settings_doc import Option

_MEDIA_SETTINGS = (
    Option(
        "media",
        "str",
        "none",
        "what the runner prepares: none, decoded frames "
        "(e.g. to measure window coverage) or the file path",
        ["none", "frames", "path"],
    ),
    Option("delay_s", "float", 0.0, "seconds to sleep per request (resume and concurrency tests)"),
)

BUILT_IN_BACKENDS: tuple[BackendSpec, ...] = (
    BackendSpec(
        "constant",
        "mmrobust.models.baselines:make_constant",
        light=True,
        settings=_MEDIA_SETTINGS,
        arg="the answer: a letter (A) or an option key (none, middle, reject)",
        arg_name="answer",
        doc="always the same answer (constant:A is 'Yes' to every tamper question)",
        media_doc="none (or decoded frames / the file path: `media=`)",
    ),
    BackendSpec(
        "random",
        "mmrobust.models.baselines:make_random",
        light=True,
        settings=_MEDIA_SETTINGS,
        arg="optional seed (default 0)",
        arg_name="seed",
        doc="a uniform random letter, deterministic per sample and seed",
        media_doc="none (or decoded frames / the file path: `media=`)",
    ),
    BackendSpec(
        "forensic",
        "mmrobust.models.forensic:make",
        media=("video",),
        light=True,
        settings=(
            Option(
                "prior",
                "str",
                "none",
                "location prior: none (pixels only) or middle "
                "(favour a window in the middle of the clip; docs/forensic.md)",
                ["none", "middle"],
            ),
        ),
        doc="the pixel-only classical tamper detector (docs/forensic.md)",
        media_doc="the video file, decoded in-process (video only)",
    ),
    BackendSpec(
        "blind-overlap",
        "mmrobust.models.blind:make_overlap",
        light=True,
        doc="text-only word-overlap baseline (MMR no-image floor)",
        media_doc="none (text only)",
    ),
    BackendSpec(
        "blind-embed",
        "mmrobust.models.blind:make_embed",
        settings=(
            Option("device", "str", "cpu", "torch device of the sentence embedder"),
            Option("batch_size", "int", 64, "texts embedded per batch"),
        ),
        doc="text-only sentence-embedding baseline (needs sentence-transformers)",
        media_doc="none (text only)",
    ),
    BackendSpec(
        "openai",
        "mmrobust.models.openai_compat:make",
        placement="api",
        frame_encoding="mmrobust.models.openai_compat:frame_encoding",
        options="mmrobust.models.openai_compat:OpenAIOptions",
        arg="the served model name (required)",
        arg_name="served-name",
        doc="any server that speaks OpenAI chat completions (vLLM, SGLang, LM Studio, Ollama, "
        "TGI, hosted APIs)",
        media_doc="sampled frames as base64 JPEG `image_url` parts, or the video file as one "
        "`video_url` part (`video=true`)",
    ),
    BackendSpec(
        "anthropic",
        "mmrobust.models.anthropic:make",
        placement="api",
        frame_encoding="mmrobust.models.anthropic:frame_encoding",
        options="mmrobust.models.anthropic:AnthropicOptions",
        arg="the Claude model name (required)",
        arg_name="model",
        doc="Anthropic's native Messages API (`POST /v1/messages`; ANTHROPIC_API_KEY)",
        media_doc="sampled frames as base64 JPEG `image` blocks",
    ),
    BackendSpec(
        "hf",
        "mmrobust.models.hf:make",
        placement="gpu",
        options="mmrobust.models.hf:HFOptions",
        arg="a hub id or a local checkpoint folder (required)",
        arg_name="hub-id-or-folder",
        doc="a local transformers checkpoint run in this process (`AutoProcessor` + "
        "`AutoModelForImageTextToText`; pip install -e '.[hf]')",
        media_doc="sampled frames as a list of images, or the processor's native video input "
        "(`video_input=video`)",
    ),
)
"""mmrobust's own backends, in the order the docs list them."""

__all__ = ["BUILT_IN_BACKENDS"]

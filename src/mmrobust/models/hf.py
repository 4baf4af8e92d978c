"""``hf:<hub-id-or-local-path>``: local Hugging Face vision-language models.

``AutoProcessor`` + ``AutoModelForImageTextToText`` and the processor's chat
template; greedy decoding by default. Works for the families whose processor
takes interleaved images (Qwen2-VL / Qwen2.5-VL, LLaVA-OneVision, SmolVLM /
Idefics3, InternVL in HF format). torch and transformers are the optional
``hf`` extra and are imported only when a model is built.

Media: ``Request.frames`` (``(H, W, 3) uint8 RGB``, time order) become one
``{"type": "image"}`` part each, before the prompt text, and a list of PIL
images for the processor (``video_input=images``, the default). With
``video_input=video`` the frames go in as one clip through the processor's
native video input (``{"type": "video"}`` plus ``videos=[(T, H, W, 3)]``),
for processors that have a video processor (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
LLaVA-OneVision, SmolVLM2, InternVL, LLaVA-NeXT-Video; in transformers 5 these need
``torchvision``). The clip's real timing goes with it as ``video_metadata``
(source fps, the sampled frame indices, total frames, duration) and
``do_sample_frames=False``, so the processor neither re-samples the frames nor
invents their times (Qwen2.5-VL's ``second_per_grid_ts``, Qwen3-VL's
``<t seconds>`` and SmolVLM2's ``Frame from mm:ss`` come from the true times).

Special tokens: when the chat template already writes the tokenizer's BOS (Gemma 3),
the text is tokenized without adding another (as ``apply_chat_template(tokenize=True)``
does), so the prompt has one ``<bos>``.

Hub access follows huggingface_hub: ``HF_HUB_OFFLINE=1`` (or a local folder)
never touches the network.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Json

from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE
from mmrobust.media.jpeg import cap_frame
from mmrobust.models._adapter import maybe_apply_adapter
from mmrobust.models._hf_inputs import (
    build_messages,
    video_call,
    video_metadata,
    video_pixel_cap,
)
from mmrobust.models._hf_load import (
    hub_unreachable_but_cached,
    local_digest,
    offline,
    processor_digest,
)
from mmrobust.models._options import parse_options
from mmrobust.models._reasoning import (
    ReasoningMode,
    default_max_tokens,
    drop_reasoning,
    is_reasoning_template,
)
from mmrobust.models._torchvision import torchvision_fix, torchvision_problem
from mmrobust.models.base import MediaInput, Model, Placement, Request, Response, repeat_seed
from mmrobust.status import Status

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    import torch

_DTYPES = ("auto", "float32", "float16", "bfloat16")


class HFOptions(BaseModel):
    """``--model-arg`` settings of the ``hf`` backend (strings are converted).

    Attributes:
        dtype: ``auto`` (the checkpoint's), ``float32``, ``float16``, ``bfloat16``.
        device: ``auto`` (cuda, then mps, then cpu) or a torch device (``cuda:1``).
        device_map: passed to ``from_pretrained`` instead of moving the model
            (``auto`` shards over GPUs; needs ``accelerate``).
        batch_size: requests per ``generate`` call (left-padded).
        max_new_tokens: cap on generated tokens.
        temperature: 0 (greedy, default); > 0 samples with ``seed``.
        seed: torch seed set before each generate call (mixed with the repeat index under
            ``--repeats``: ``models.base.repeat_seed``).
        video_input: ``images`` (frames as a list of images) or ``video``
            (the processor's native video input).
        image_max_side: pixels; frames are downscaled so the longer side is
            at most this before the processor sees them (0: as decoded). 1024 by
            default (``frame_size.DEFAULT_IMAGE_MAX_SIDE``), as on ``openai:`` /
            ``anthropic:`` and in ``finetune --image-max-side`` (one default, so the
            same model sees the same pixels on every backend and in training).
        revision: hub revision (branch, tag or commit).
        trust_remote_code: allow checkpoint code (off by default).
        chat_template: path of a Jinja chat template overriding the processor's.
        processor_kwargs: JSON object for ``AutoProcessor.from_pretrained``
            (``'{"max_pixels": 401408}'``).
        model_kwargs: JSON object for ``from_pretrained`` of the model
            (``'{"attn_implementation": "sdpa"}'``).
        adapter: a PEFT adapter folder (``mmrobust finetune`` output) merged into
            the model after loading (needs ``peft``).
        chat_template_kwargs: JSON object of extra chat-template variables for
            ``apply_chat_template`` (``'{"enable_thinking": false}'``).
        reasoning: ``keep`` (default) or ``drop``: remove closed ``<think>`` blocks at
            the start of a reply before it is stored (``models/_reasoning.py``).

    ``max_new_tokens`` is 128 unless set, or 4096 when the chat template used is a
    reasoning template and ``chat_template_kwargs`` does not turn thinking off.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    device: str = "auto"
    device_map: str | None = None
    batch_size: int = Field(1, ge=1)
    max_new_tokens: int = Field(128, ge=1)
    temperature: float = Field(0.0, ge=0)
    seed: int = 0
    video_input: Literal["images", "video"] = "images"
    image_max_side: int = Field(DEFAULT_IMAGE_MAX_SIDE, ge=0)
    revision: str | None = None
    trust_remote_code: bool = False
    chat_template: Path | None = None
    processor_kwargs: Json[dict[str, Any]] | None = None
    model_kwargs: Json[dict[str, Any]] | None = None
    adapter: Path | None = None
    chat_template_kwargs: Json[dict[str, Any]] | None = None
    reasoning: ReasoningMode = "keep"


def _resolve_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


class HFModel(Model):
    """A transformers image-text-to-text model with its processor.

    Args:
        model_id: hub id or local folder.
        options: validated settings (see ``HFOptions``).

    Raises:
        ValueError: the checkpoint or processor cannot be loaded (one line),
            or the processor has no chat template.
        ImportError: torch/transformers are not installed (``pip install -e '.[hf]'``).
    """

    placement: ClassVar[Placement] = "gpu"
    media_input: ClassVar[MediaInput] = "frames"
    model: Any
    processor: Any

    def __init__(self, model_id: str, options: HFOptions) -> None:
        try:
            import torch
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                f"the hf backend needs torch and transformers: pip install -e '.[hf]' ({exc})"
            ) from None
        # a torchvision that does not import breaks transformers' imports too: check first
        problem = torchvision_problem()
        if problem is not None and "not installed" not in problem:
            raise ImportError(torchvision_fix(problem))
        try:
            import transformers
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                f"the hf backend needs torch and transformers: pip install -e '.[hf]' ({exc})"
            ) from None

        self.model_id = model_id
        self.options = options
        self.name = f"hf:{model_id}"
        self.batch_size = options.batch_size
        self.max_concurrency = 1
        self._lock = threading.Lock()
        self._versions = {"transformers": transformers.__version__, "torch": torch.__version__}
        self.device = _resolve_device(options.device)

        common: dict[str, Any] = {"trust_remote_code": options.trust_remote_code}
        if options.revision:
            common["revision"] = options.revision
        if offline() or hub_unreachable_but_cached(model_id, options.revision):
            common["local_files_only"] = True
        model_kwargs: dict[str, Any] = {**common, "dtype": options.dtype}
        if options.device_map:
            model_kwargs["device_map"] = options.device_map
        model_kwargs.update(options.model_kwargs or {})
        try:
            self.processor = AutoProcessor.from_pretrained(
                model_id, **common, **(options.processor_kwargs or {})
            )
            self.model = AutoModelForImageTextToText.from_pretrained(model_id, **model_kwargs)
        except ImportError as exc:
            if problem is not None:  # the processor needs the missing torchvision
                raise ImportError(torchvision_fix(problem)) from None
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ImportError(f"hf: cannot load {model_id!r}: {reason}") from None
        except (OSError, ValueError, KeyError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"hf: cannot load {model_id!r}: {reason}") from exc
        self.model, self._adapter = maybe_apply_adapter(self.model, options.adapter)
        if not options.device_map:
            self.model.to(self.device)
        self.model.eval()

        self._chat_template: str | None = None
        if options.chat_template is not None:
            try:
                self._chat_template = Path(options.chat_template).read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"hf: cannot read chat_template: {exc}") from exc
        elif not getattr(self.processor, "chat_template", None):
            raise ValueError(
                f"hf: {model_id!r} has no chat template; pass --model-arg chat_template=FILE.jinja"
            )
        if (
            options.video_input == "video"
            and getattr(self.processor, "video_processor", None) is None
        ):
            raise ValueError(
                f"hf: video_input=video needs a processor with a video input; "
                f"{type(self.processor).__name__} has none (use video_input=images)"
            )
        tokenizer = getattr(self.processor, "tokenizer", None)
        if tokenizer is not None:
            tokenizer.padding_side = "left"  # decoder-only batched generation
        eos = self.model.generation_config.eos_token_id
        self._eos_ids: set[int] = set(
            eos if isinstance(eos, list) else [eos] if eos is not None else []
        )
        self._commit = getattr(self.model.config, "_commit_hash", None)
        self._digest = local_digest(Path(model_id))
        template = self._chat_template or self.processor.chat_template
        if isinstance(template, dict):  # several named templates: the default one is used
            template = template.get("default", json.dumps(template, sort_keys=True))
        self._template_sha256 = hashlib.sha256(str(template).encode()).hexdigest()[:16]
        self.max_new_tokens = (
            options.max_new_tokens
            if "max_new_tokens" in options.model_fields_set
            else default_max_tokens(
                options.max_new_tokens,
                kwargs=options.chat_template_kwargs,
                detected=is_reasoning_template(template),
            )
        )
        self._processor_sha256 = processor_digest(self.processor)
        self._pixel_cap = video_pixel_cap(self.processor)

    # -- public API --------------------------------------------------------------------

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer requests in batches of ``batch_size``; a failing batch is retried one by one.

        A request that still fails gets ``model_error`` (one-line reason); the
        others are answered.
        """
        out: list[Response] = []
        with self._lock:
            for start in range(0, len(requests), self.batch_size):
                chunk = list(requests[start : start + self.batch_size])
                try:
                    out.extend(self._generate_batch(chunk))
                except Exception:
                    if len(chunk) == 1:
                        out.append(self._failed(chunk[0]))
                    else:
                        out.extend(self._one_by_one(chunk))
        return out

    def fingerprint(self) -> dict[str, Any]:
        """Checkpoint identity and the settings that change answers.

        Includes sha256 prefixes of the chat template actually used (the
        checkpoint's or ``chat_template=``) and of the processor configuration as
        loaded (image/video processor settings, ``processor_kwargs`` applied), so
        editing either asks stored samples again instead of reusing them.
        """
        o = self.options
        return {
            "name": self.name,
            "backend": "hf",
            "model": self.model_id,
            "revision": o.revision,
            "commit": self._commit,
            "local_digest": self._digest,
            "dtype": o.dtype,
            "max_new_tokens": self.max_new_tokens,
            "temperature": o.temperature,
            "seed": o.seed if o.temperature > 0 else None,
            "video_input": o.video_input,
            **(
                {"cap_pixels_per_frame": self._pixel_cap}
                if o.video_input == "video" and self._pixel_cap is not None
                else {}
            ),
            "image_max_side": o.image_max_side,
            "chat_template": self._chat_template,
            "chat_template_sha256": self._template_sha256,
            "processor_config_sha256": self._processor_sha256,
            "processor_kwargs": o.processor_kwargs,
            **({"adapter": self._adapter} if self._adapter else {}),
            **({"chat_template_kwargs": o.chat_template_kwargs} if o.chat_template_kwargs else {}),
            **({"reasoning": o.reasoning} if o.reasoning != "keep" else {}),
            **self._versions,
        }

    def close(self) -> None:
        """Drop the model and free accelerator memory."""
        import torch

        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- internals ---------------------------------------------------------------------

    def _one_by_one(self, chunk: list[Request]) -> list[Response]:
        out = []
        for request in chunk:
            try:
                out.extend(self._generate_batch([request]))
            except Exception:
                out.append(self._failed(request))
        return out

    def _failed(self, request: Request) -> Response:
        import sys

        exc = sys.exc_info()[1]
        text = str(exc).strip().splitlines()[0] if exc and str(exc).strip() else ""
        reason = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        return Response(text="", status=Status.MODEL_ERROR, error=f"generate failed: {reason}")

    def _frames(self, request: Request) -> list[np.ndarray]:
        """``Request.frames`` capped at ``image_max_side`` (``media.jpeg.cap_frame``, the
        resize ``finetune`` applies to its training pixels too)."""
        frames = []
        for frame in request.frames:
            if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
                raise ValueError(f"expected (H, W, 3) uint8 RGB frames, got {frame.shape}")
            frames.append(cap_frame(frame, self.options.image_max_side))
        return frames

    def _prompt(self, request: Request, n_frames: int) -> str:
        messages = build_messages(request, n_frames, self.options.video_input)
        kwargs: dict[str, Any] = {
            **(self.options.chat_template_kwargs or {}),
            "add_generation_prompt": True,
            "tokenize": False,
        }
        if self._chat_template is not None:
            kwargs["chat_template"] = self._chat_template
        text = self.processor.apply_chat_template(messages, **kwargs)
        if not isinstance(text, str):  # some processors return a list for one conversation
            text = text[0]
        return text + (request.assistant_prefill or "")

    def _inputs(self, chunk: list[Request]) -> tuple[Any, list[list[np.ndarray]]]:
        """Processor outputs (on the model's device) for a batch, and the frames of each request.

        ``video_input=video``: each request with 2 or more frames is one clip
        ``(T, H, W, 3) uint8`` with its ``video_metadata`` (see the module docstring).
        """
        from PIL import Image

        frames = [self._frames(r) for r in chunk]
        texts = [self._prompt(r, len(f)) for r, f in zip(chunk, frames, strict=True)]
        call: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        bos = getattr(getattr(self.processor, "tokenizer", None), "bos_token", None)
        if bos and all(t.startswith(bos) for t in texts):
            call["add_special_tokens"] = False  # the template wrote BOS already (Gemma 3)
        if self.options.video_input == "video":
            # clips go in as videos; single frames (image samples) stay images
            clips = [(r, f) for r, f in zip(chunk, frames, strict=True) if len(f) > 1]
            singles = [Image.fromarray(f[0]) for f in frames if len(f) == 1]
            if clips:
                call.update(
                    video_call(
                        [f for _, f in clips],
                        [video_metadata(r, f) for r, f in clips],
                        self._pixel_cap,
                    )
                )
                if "video_metadata" not in call:  # frames not decoded by the runner
                    log.warning("hf: video_input=video without the clip's fps and frame indices")
            if singles:
                call["images"] = singles
        elif any(frames):
            call["images"] = [[Image.fromarray(x) for x in f] for f in frames]
        inputs = self.processor(**call)
        self._warn_context(int(inputs["input_ids"].shape[1]))
        return inputs.to(self.model.device), frames

    def _warn_context(self, n_tokens: int) -> None:
        """Warn once, before ``generate``, when the prompt (media tokens included) passes the
        model's context (``max_position_embeddings`` of its text config), naming the fix."""
        config = getattr(self.model, "config", None)
        text = getattr(config, "text_config", None) or config
        context = getattr(text, "max_position_embeddings", None)
        if not isinstance(context, int) or n_tokens <= context or getattr(self, "_warned", False):
            return
        self._warned = True
        log.warning(
            "hf: the prompt is %d tokens (media included), past the model's context of %d: "
            "pass fewer --frames or a smaller --model-arg image_max_side (now %d)",
            n_tokens, context, self.options.image_max_side,
        )  # fmt: skip

    def _generate_batch(self, chunk: list[Request]) -> list[Response]:
        import torch

        started = time.monotonic()
        inputs, frames = self._inputs(chunk)
        gen: dict[str, Any] = {"max_new_tokens": self.max_new_tokens}
        if self.options.temperature > 0:
            gen.update(do_sample=True, temperature=self.options.temperature)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        torch.manual_seed(repeat_seed(self.options.seed, chunk[0].repeat))  # one repeat a batch
        with torch.inference_mode():
            output = self.model.generate(**inputs, **gen)
        prompt_len = int(inputs["input_ids"].shape[1])
        new_tokens = output[:, prompt_len:]
        decoded = self.processor.batch_decode(new_tokens, skip_special_tokens=True)
        elapsed = (time.monotonic() - started) / len(chunk)
        mask = inputs.get("attention_mask")
        responses = []
        for i, text in enumerate(decoded):
            extra: dict[str, Any] = {"n_images": len(frames[i])}
            if self.options.reasoning == "drop":
                text, _, removed = drop_reasoning(text, None)
                if removed:
                    extra["reasoning_dropped_chars"] = removed
            responses.append(
                Response(
                    text=text.strip(),
                    status=Status.OK,
                    latency_s=elapsed,
                    prompt_tokens=int(mask[i].sum()) if mask is not None else prompt_len,
                    completion_tokens=self._count_generated(new_tokens[i]),
                    extra=extra,
                )
            )
        return responses

    def _count_generated(self, tokens: torch.Tensor) -> int:
        ids = tokens.tolist()
        for pos, tok in enumerate(ids):
            if tok in self._eos_ids:
                return pos + 1
        return len(ids)


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``hf:<hub-id-or-local-path>`` (registered in ``mmrobust.models.spec``).

    Raises:
        ValueError: no model id, a path that does not exist, a bad ``--model-arg``, or a
            checkpoint that cannot be loaded.
        ImportError: the ``hf`` extra is not installed.
    """
    if not arg:
        raise ValueError("hf needs a hub id or a local folder: --model hf:<id-or-path>")
    # a path (not a hub id "owner/name") that is not there: say so before torch is imported
    if (arg.startswith(("/", "~", ".")) or arg.count("/") > 1) and not (
        Path(arg).expanduser().exists()
    ):
        raise ValueError(
            f"hf: no checkpoint folder at {arg} (a hub model is named owner/name, e.g. "
            "hf:Qwen/Qwen2.5-VL-3B-Instruct)"
        )
    return HFModel(arg, parse_options(HFOptions, args, "hf"))


__all__ = ["HFModel", "HFOptions", "build_messages", "make", "video_metadata"]

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
for processors that have a video processor (Qwen2-VL, LLaVA-OneVision,
SmolVLM; in transformers 5 these need ``torchvision``).

Hub access follows huggingface_hub: ``HF_HUB_OFFLINE=1`` (or a local folder)
never touches the network.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Json

from mmrobust.models._adapter import maybe_apply_adapter
from mmrobust.models._encode import cap_size
from mmrobust.models._options import parse_options
from mmrobust.models.base import MediaInput, Model, Request, Response, place_media
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
        seed: torch seed set before each generate call.
        video_input: ``images`` (frames as a list of images) or ``video``
            (the processor's native video input).
        image_max_side: pixels; frames are downscaled so the longer side is
            at most this before the processor sees them (0: as decoded).
        revision: hub revision (branch, tag or commit).
        trust_remote_code: allow checkpoint code (off by default).
        chat_template: path of a Jinja chat template overriding the processor's.
        processor_kwargs: JSON object for ``AutoProcessor.from_pretrained``
            (``'{"max_pixels": 401408}'``).
        model_kwargs: JSON object for ``from_pretrained`` of the model
            (``'{"attn_implementation": "sdpa"}'``).
        adapter: a PEFT adapter folder (``mmrobust finetune`` output) merged into
            the model after loading (needs ``peft``).
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
    image_max_side: int = Field(0, ge=0)
    revision: str | None = None
    trust_remote_code: bool = False
    chat_template: Path | None = None
    processor_kwargs: Json[dict[str, Any]] | None = None
    model_kwargs: Json[dict[str, Any]] | None = None
    adapter: Path | None = None


def build_messages(request: Request, n_frames: int, video_input: str) -> list[dict[str, Any]]:
    """Chat messages in the HF multimodal format for one request.

    One ``{"type": "image"}`` part per frame (or one ``{"type": "video"}``
    part when ``video_input == "video"`` and there are 2 or more frames), then the
    prompt text (with ``request.media_offset`` k: ``prompt[:k]``, the media,
    ``prompt[k:]``); a system message first when the request has one. Pure.
    """
    media: list[dict[str, Any]] = []
    if n_frames:
        if video_input == "video" and n_frames > 1:
            media.append({"type": "video"})
        else:
            media.extend({"type": "image"} for _ in range(n_frames))
    parts = place_media(request, media, lambda t: {"type": "text", "text": t})
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
    messages.append({"role": "user", "content": parts})
    return messages


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


def _local_digest(path: Path) -> str | None:
    """sha256 over ``config.json`` and the names and sizes of the weight files of a local folder."""
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    config = path / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    for item in sorted(path.iterdir()):
        if item.suffix in {".safetensors", ".bin", ".json"} and item.is_file():
            digest.update(f"{item.name}:{item.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


class HFModel(Model):
    """A transformers image-text-to-text model with its processor.

    Args:
        model_id: hub id or local folder.
        options: validated settings (see ``HFOptions``).

    Raises:
        ValueError: the checkpoint or processor cannot be loaded (one line),
            or the processor has no chat template.
        ImportError: torch/transformers are not installed (``pip install 'mmrobust[hf]'``).
    """

    media_input: ClassVar[MediaInput] = "frames"
    model: Any
    processor: Any

    def __init__(self, model_id: str, options: HFOptions) -> None:
        try:
            import torch
            import transformers
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                f"the hf backend needs torch and transformers: pip install 'mmrobust[hf]' ({exc})"
            ) from exc

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
        if _offline() or _hub_unreachable_but_cached(model_id, options.revision):
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
        self._digest = _local_digest(Path(model_id))

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
        """Checkpoint identity and the settings that change answers."""
        o = self.options
        return {
            "name": self.name,
            "backend": "hf",
            "model": self.model_id,
            "revision": o.revision,
            "commit": self._commit,
            "local_digest": self._digest,
            "dtype": o.dtype,
            "max_new_tokens": o.max_new_tokens,
            "temperature": o.temperature,
            "seed": o.seed if o.temperature > 0 else None,
            "video_input": o.video_input,
            "image_max_side": o.image_max_side,
            "chat_template": self._chat_template,
            "processor_kwargs": o.processor_kwargs,
            **({"adapter": self._adapter} if self._adapter else {}),
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
        import cv2

        frames = []
        for frame in request.frames:
            if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
                raise ValueError(f"expected (H, W, 3) uint8 RGB frames, got {frame.shape}")
            h, w = frame.shape[:2]
            size = cap_size(w, h, self.options.image_max_side)
            if size != (w, h):
                frame = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
            frames.append(frame)
        return frames

    def _prompt(self, request: Request, n_frames: int) -> str:
        messages = build_messages(request, n_frames, self.options.video_input)
        kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
        if self._chat_template is not None:
            kwargs["chat_template"] = self._chat_template
        text = self.processor.apply_chat_template(messages, **kwargs)
        if not isinstance(text, str):  # some processors return a list for one conversation
            text = text[0]
        return text + (request.assistant_prefill or "")

    def _generate_batch(self, chunk: list[Request]) -> list[Response]:
        import torch
        from PIL import Image

        started = time.monotonic()
        frames = [self._frames(r) for r in chunk]
        texts = [self._prompt(r, len(f)) for r, f in zip(chunk, frames, strict=True)]
        call: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        if self.options.video_input == "video":
            # clips go in as videos; single frames (image samples) stay images
            videos = [np.stack(f) for f in frames if len(f) > 1]
            singles = [Image.fromarray(f[0]) for f in frames if len(f) == 1]
            if videos:
                call["videos"] = videos
            if singles:
                call["images"] = singles
        elif any(frames):
            call["images"] = [[Image.fromarray(x) for x in f] for f in frames]
        inputs = self.processor(**call).to(self.model.device)
        gen: dict[str, Any] = {"max_new_tokens": self.options.max_new_tokens}
        if self.options.temperature > 0:
            gen.update(do_sample=True, temperature=self.options.temperature)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        torch.manual_seed(self.options.seed)
        with torch.inference_mode():
            output = self.model.generate(**inputs, **gen)
        prompt_len = int(inputs["input_ids"].shape[1])
        new_tokens = output[:, prompt_len:]
        decoded = self.processor.batch_decode(new_tokens, skip_special_tokens=True)
        elapsed = (time.monotonic() - started) / len(chunk)
        mask = inputs.get("attention_mask")
        responses = []
        for i, text in enumerate(decoded):
            responses.append(
                Response(
                    text=text.strip(),
                    status=Status.OK,
                    latency_s=elapsed,
                    prompt_tokens=int(mask[i].sum()) if mask is not None else prompt_len,
                    completion_tokens=self._count_generated(new_tokens[i]),
                    extra={"n_images": len(frames[i])},
                )
            )
        return responses

    def _count_generated(self, tokens: torch.Tensor) -> int:
        ids = tokens.tolist()
        for pos, tok in enumerate(ids):
            if tok in self._eos_ids:
                return pos + 1
        return len(ids)


def _hub_unreachable_but_cached(model_id: str, revision: str | None) -> bool:
    """Check a hub id before loading, so a typo or a missing network fails in seconds.

    Returns ``True`` when the hub cannot be reached but the model is in the local
    cache (load it from there), ``False`` when loading may go ahead normally (a
    local folder, offline mode, or the hub answered).

    Raises:
        ValueError: no such model on the hub, or the hub is unreachable and the
            model is not cached (instead of minutes of download retries).
    """
    if Path(model_id).exists() or _offline():
        return False
    from huggingface_hub import model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        model_info(model_id, revision=revision, timeout=10)
        return False
    except GatedRepoError:
        return False  # needs a token; from_pretrained reports that itself
    except RepositoryNotFoundError:
        raise ValueError(
            f"hf: {model_id!r} is neither a local folder nor a model on the Hugging Face hub"
        ) from None
    except Exception as exc:  # network failure: fall back to the local cache
        cached = try_to_load_from_cache(model_id, "config.json", revision=revision)
        if isinstance(cached, str):
            log.warning("hf: hub unreachable (%s); loading %s from the local cache", exc, model_id)
            return True
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"hf: cannot reach the Hugging Face hub for {model_id!r} ({reason}) and it is not "
            "in the local cache; pass a local folder, or download it first"
        ) from None


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``hf:<hub-id-or-local-path>`` (registered in ``mmrobust.models.spec``).

    Raises:
        ValueError: no model id, a bad ``--model-arg``, or a checkpoint that cannot be loaded.
        ImportError: the ``hf`` extra is not installed.
    """
    if not arg:
        raise ValueError("hf needs a hub id or a local folder: --model hf:<id-or-path>")
    return HFModel(arg, parse_options(HFOptions, args, "hf"))


__all__ = ["HFModel", "HFOptions", "build_messages", "make"]

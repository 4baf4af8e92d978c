"""Conversations to model inputs, with the loss on the assistant turns only.

Family-agnostic, through the processor's own chat template and call:

1. :func:`to_messages` turns a :class:`~mmrobust.finetune.data.Conversation`
   into the HF multimodal chat format (``{"type": "image"}`` parts where the
   ``<image>`` marks were, as ``hf:`` sends them at evaluation; with
   ``--video-input video`` the frames of one clip are one ``{"type": "video"}``
   part, given to the processor as a clip with its frame times,
   :mod:`mmrobust.finetune.video`).
2. :class:`ChatRenderer` renders the whole conversation with the chat template
   and finds each assistant turn's character span by rendering the prefixes
   (messages before the turn with the generation prompt; through the turn).
   The span is the answer plus the template's end-of-turn token (so the
   model learns to stop), trailing whitespace excluded. A template that writes
   nothing after the answer (LLaVA-NeXT-Video's Vicuna style ``USER: ...
   ASSISTANT: A``) gets the tokenizer's EOS after each answer, inside the span,
   as LLaVA's own training writes ``</s>`` (issue 31 item 2: the span was ``' A'``
   alone and the model never learnt to stop). A template that is not
   prefix-preserving is refused with a clear error.
3. The text is tokenized once without image expansion (offsets give the
   trainable tokens) and once by the processor with the images (the real
   inputs); :func:`align_labels` carries the trainable marks over with a
   linear-time subsequence alignment (the model ids are the plain ids with
   image placeholders expanded), so image-token expansion, whatever the family
   does, never shifts a label. Every trainable token must be found. Special
   tokens follow ``hf:`` evaluation's rule (:func:`add_special_tokens`): the
   tokenizer's own (BOS) are added unless the template wrote BOS itself (Gemma 3),
   so training ids start as evaluation's do (``<s> USER: ...`` for LLaVA-NeXT-Video).
4. :func:`prepare_rows` measures first: a conversation whose plain token count
   (a lower bound of the model's, images not yet expanded) is past
   ``--max-length`` is skipped and counted before the processor or the
   alignment ever sees it (issue 27 item 10: one 2 MB turn used to stall the
   run in ``difflib``).

This is the "instructions are masked, only the response is used to compute
the loss" rule of the MMR paper (section 5, Training).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrobust.finetune.data import IMAGE_MARK, Conversation, Problem, VideoTiming
from mmrobust.finetune.pixels import load_images
from mmrobust.finetune.video import VideoInput, clip_call, is_video, timing_json, timing_of
from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE

IGNORE_INDEX = -100
"""Label of tokens outside the loss (the value PyTorch's cross-entropy ignores)."""


class TemplateError(ValueError):
    """The chat template cannot be used for training (one line, with the fix)."""


def to_messages(conversation: Conversation, *, video: bool = False) -> list[dict[str, Any]]:
    """HF multimodal chat messages of one conversation (pure).

    ``"<image>\\nWhat is it?"`` becomes ``[{"type": "image"}, {"type": "text",
    "text": "What is it?"}]`` (the newline next to a mark is dropped); answers
    are one text part. ``video``: the first mark becomes the one ``{"type": "video"}``
    part and the other marks (the clip's other frames) are dropped, as ``hf:``'s
    ``build_messages`` sends a clip with ``video_input=video``.
    """
    messages: list[dict[str, Any]] = []
    marks = 0
    for turn in conversation.turns:
        parts: list[dict[str, Any]] = []
        pieces = turn.text.split(IMAGE_MARK)
        for index, piece in enumerate(pieces):
            if index > 0:
                marks += 1
                if not video:
                    parts.append({"type": "image"})
                elif marks == 1:
                    parts.append({"type": "video"})
            text = piece.strip("\n") if len(pieces) > 1 else piece
            if text.strip():
                parts.append({"type": "text", "text": text})
        messages.append({"role": turn.role, "content": parts})
    return messages


@dataclass(frozen=True)
class Rendered:
    """A conversation rendered by the chat template.

    Attributes:
        text: the full text (image marks of the template, not yet expanded).
        spans: ``[start, end)`` character spans of the assistant turns.
    """

    text: str
    spans: tuple[tuple[int, int], ...]


class ChatRenderer:
    """Renders conversations with a processor's chat template (or an override).

    Raises:
        TemplateError: the processor has no chat template and none is given.
    """

    def __init__(self, processor: Any, chat_template: str | None = None) -> None:
        self.processor = processor
        self.chat_template = chat_template or getattr(processor, "chat_template", None)
        if not self.chat_template:
            raise TemplateError(
                "the processor has no chat template; pass --chat-template FILE.jinja"
            )

    def _apply(self, messages: Sequence[dict[str, Any]], generation_prompt: bool) -> str:
        text = self.processor.apply_chat_template(
            list(messages),
            chat_template=self.chat_template,
            add_generation_prompt=generation_prompt,
            tokenize=False,
        )
        if not isinstance(text, str):  # some processors return a list for one conversation
            text = text[0]
        return str(text)

    def render(self, conversation: Conversation, *, video: bool = False) -> Rendered:
        """Full text and assistant spans (EOS added after answers the template leaves open).

        ``video``: the conversation's frames are one video part (:func:`to_messages`).

        Raises:
            TemplateError: rendering a prefix of the conversation does not give a
                prefix of the full text (the template rewrites earlier turns).
        """
        messages = to_messages(conversation, video=video)
        full = self._apply(messages, False)
        spans: list[tuple[int, int]] = []
        open_ends: list[int] = []  # span ends where the template wrote no end-of-turn token
        eos = getattr(getattr(self.processor, "tokenizer", None), "eos_token", None)
        for index, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            before = self._apply(messages[:index], True)
            through = self._apply(messages[: index + 1], False).rstrip()
            if not (full.startswith(through) and through.startswith(before)):
                raise TemplateError(
                    "the chat template is not prefix-preserving (rendering the first turns does "
                    "not give the start of the whole conversation), so assistant turns cannot be "
                    "located; pass a training template with --chat-template FILE.jinja"
                )
            if len(through) > len(before):
                spans.append((len(before), len(through)))
                answer = "".join(p.get("text", "") for p in message["content"]).strip()
                if eos and answer and through.endswith(answer):
                    open_ends.append(len(through))
        return _close_turns(full, spans, open_ends, eos or "")


def _close_turns(
    text: str, spans: Sequence[tuple[int, int]], open_ends: Sequence[int], eos: str
) -> Rendered:
    """Insert ``eos`` at each position of ``open_ends`` (span ends), spans shifted (pure)."""
    if not open_ends:
        return Rendered(text, tuple(spans))
    cut = sorted(set(open_ends))
    pieces, last = [], 0
    for at in cut:
        pieces += [text[last:at], eos]
        last = at
    pieces.append(text[last:])

    def shift(position: int) -> int:  # an insertion at a span's end falls inside that span
        return position + len(eos) * sum(at <= position for at in cut)

    return Rendered("".join(pieces), tuple((shift(s), shift(e)) for s, e in spans))


def add_special_tokens(tokenizer: Any, text: str) -> bool:
    """``hf:`` evaluation's rule: the tokenizer adds its special tokens (BOS) unless the
    text already starts with BOS (a template that writes it, Gemma 3); ``models/hf.py``."""
    bos = getattr(tokenizer, "bos_token", None)
    return not (bos and text.startswith(bos))


def trainable_tokens(
    offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]
) -> list[bool]:
    """Per token: does its character range lie inside an assistant span (pure)."""
    marks = []
    for start, end in offsets:
        marks.append(end > start and any(s <= start and end <= e for s, e in spans))
    return marks


def align_labels(
    plain_ids: Sequence[int], trainable: Sequence[bool], model_ids: Sequence[int]
) -> tuple[list[int], int]:
    """Labels for ``model_ids`` (the processor's expanded ids) from the plain tokenization.

    Args:
        plain_ids: token ids of the rendered text without image expansion.
        trainable: per plain token, whether it is in the loss.
        model_ids: the ids the model gets (image placeholders expanded).

    Returns:
        ``(labels, missing)``: ``labels[j]`` is ``model_ids[j]`` for tokens
        aligned to a trainable plain token, else :data:`IGNORE_INDEX`;
        ``missing`` counts trainable plain tokens with no aligned model token
        (0 for a sound alignment).

    Alignment: the leftmost embedding of ``plain_ids`` as a subsequence of
    ``model_ids`` (each plain token goes to the first equal model token after
    the previous one's), found in ``O(len(plain_ids) + len(model_ids))`` with
    per-id position lists. Image expansion only inserts model tokens, and no
    expansion sits inside an assistant turn, so every answer token lands on its
    own model token. An expansion that also re-tokenizes a neighbour (Gemma 3 writes
    ``\n\n`` around each image, so the plain ``\n`` before it becomes ``\n\n\n``)
    leaves that plain token without its model token; the leftmost embedding then runs
    ahead to a later equal token and loses the answers, so :class:`Encoder` retries
    from the end (the same alignment on the reversed sequences), where the answers lie.
    """
    labels = [IGNORE_INDEX] * len(model_ids)
    positions: dict[int, list[int]] = defaultdict(list)
    for j, token in enumerate(model_ids):
        positions[int(token)].append(j)
    cursor: dict[int, int] = {}  # per id: index into positions[id] (only moves forward)
    nxt = found = 0
    for i, token in enumerate(plain_ids):
        where = positions.get(int(token))
        if not where:
            continue
        c = cursor.get(int(token), 0)
        while c < len(where) and where[c] < nxt:  # each position is passed once in all
            c += 1
        if c >= len(where):
            cursor[int(token)] = c
            continue
        j = where[c]
        cursor[int(token)] = c + 1
        nxt = j + 1
        if trainable[i]:
            labels[j] = model_ids[j]
            found += 1
    return labels, sum(trainable) - found


class Encoder:
    """Turns rendered conversations into model inputs with assistant-only labels.

    Args:
        processor: the model's processor (tokenizer + image processor).
        processor_call: extra keyword arguments for every processor call.
        image_max_side: cap in pixels on the longer side of every image and video frame,
            applied as ``hf:`` evaluation applies its ``image_max_side``
            (:mod:`mmrobust.finetune.pixels`); 0: as read.
    """

    def __init__(
        self,
        processor: Any,
        processor_call: dict[str, Any] | None = None,
        *,
        image_max_side: int = DEFAULT_IMAGE_MAX_SIDE,
    ) -> None:
        self.processor = processor
        self.image_max_side = image_max_side
        self.tokenizer = getattr(processor, "tokenizer", processor)
        if not getattr(self.tokenizer, "is_fast", False):
            raise TemplateError(
                "training needs a fast tokenizer (offsets), this processor has none"
            )
        self.processor_call = dict(processor_call or {})
        from mmrobust.models._hf_inputs import video_pixel_cap

        self.pixel_cap = video_pixel_cap(processor)  # as hf: evaluation passes it

    def plain(self, rendered: Rendered) -> tuple[list[int], list[bool]]:
        """Token ids of the rendered text (no image expansion) and their trainable marks."""
        enc = self.tokenizer(
            rendered.text,
            add_special_tokens=add_special_tokens(self.tokenizer, rendered.text),
            return_offsets_mapping=True,
        )
        return list(enc["input_ids"]), trainable_tokens(enc["offset_mapping"], rendered.spans)

    def encode(
        self,
        rendered: Sequence[Rendered],
        images: Sequence[Sequence[Path]],
        videos: Sequence[VideoTiming | None] | None = None,
    ) -> dict[str, Any]:
        """One padded batch (right padding): the processor's tensors plus ``labels``.

        Args:
            rendered: the rendered conversations.
            images: each conversation's image files (read and capped as ``hf:``
                evaluation shows them, :mod:`mmrobust.finetune.pixels`).
            videos: per conversation, the clip timing when its images go in as one
                native video (rendered with ``video=True``), else ``None``; such clips
                reach the processor as ``hf:`` evaluation sends them
                (:func:`mmrobust.finetune.video.clip_call`); ``run_finetune`` never
                mixes clips and images in one batch (``video.data_problem``).

        Raises:
            ValueError: a trainable token could not be aligned (never silently mislabelled).
            OSError: an image cannot be read.
        """
        import torch

        timings = list(videos) if videos is not None else [None] * len(images)
        side = self.image_max_side
        pictures = [
            load_images(p, side) if t is None else [] for p, t in zip(images, timings, strict=True)
        ]
        clips = [(p, t) for p, t in zip(images, timings, strict=True) if t is not None]
        call: dict[str, Any] = {
            "text": [r.text for r in rendered],
            "return_tensors": "pt",
            "padding": True,
            "padding_side": "right",
            "add_special_tokens": all(add_special_tokens(self.tokenizer, r.text) for r in rendered),
            **self.processor_call,
        }
        if clips:
            call.update(
                clip_call([p for p, _ in clips], [t for _, t in clips], side, self.pixel_cap)
            )
        if any(pictures):  # per row ([] for a clip's row): Qwen2-VL and SmolVLM2 take it
            call["images"] = pictures
        batch = self.processor(**call)
        input_ids = batch["input_ids"]
        mask = batch.get("attention_mask")
        labels = torch.full_like(input_ids, IGNORE_INDEX)
        for row, item in enumerate(rendered):
            length = int(mask[row].sum()) if mask is not None else input_ids.shape[1]
            ids = input_ids[row, :length].tolist()
            plain_ids, trainable = self.plain(item)
            row_labels, missing = align_labels(plain_ids, trainable, ids)
            if missing:  # a plain token merged by the expansion (Gemma 3's '\n\n\n'): from the end
                back, missing = align_labels(plain_ids[::-1], trainable[::-1], ids[::-1])
                row_labels = back[::-1]
            if missing:
                raise ValueError(
                    f"{missing} answer tokens could not be aligned with the model input"
                )
            labels[row, :length] = torch.tensor(row_labels, dtype=input_ids.dtype)
        out = dict(batch)
        out["labels"] = labels
        return out


def prepare_rows(
    conversations: Sequence[Conversation],
    renderer: ChatRenderer,
    encoder: Encoder,
    max_length: int,
    problems: list[Problem],
    *,
    progress: bool = False,
    video_input: VideoInput = "images",
) -> list[dict[str, Any]]:
    """Render and encode each conversation once; keep the trainable ones as dataset rows.

    ``video_input="video"``: a conversation with clip timing and 2+ frames is rendered
    and encoded as one native video (:mod:`mmrobust.finetune.video`).

    A sample whose image cannot be read, that is longer than ``max_length``
    tokens (images included), whose answer tokens cannot be aligned, or that
    has no answer tokens is appended to ``problems`` and left out; nothing is
    truncated. Length is measured first on the plain tokenization (no image
    expansion, so never more than the model's count): a sample already past
    ``max_length`` there is ``too_long`` without calling the processor.

    Raises:
        TemplateError: the chat template cannot locate assistant turns (all samples would fail).
    """
    from rich.progress import track

    rows = []
    for conversation in track(conversations, description="checking data", disable=not progress):
        timing = conversation.video if is_video(conversation, video_input) else None
        rendered = renderer.render(conversation, video=timing is not None)
        n_plain = len(encoder.plain(rendered)[0])
        if n_plain > max_length:  # measured before the processor and the alignment
            detail = f"{n_plain} tokens before image expansion > max_length {max_length}"
            problems.append(Problem("too_long", conversation.id, detail))
            continue
        try:
            batch = encoder.encode([rendered], [conversation.images], [timing])
        except OSError as exc:
            problems.append(Problem("unreadable_image", conversation.id, str(exc).splitlines()[0]))
            continue
        except ValueError as exc:
            problems.append(Problem("unaligned", conversation.id, str(exc).splitlines()[0]))
            continue
        n_tokens = int(batch["input_ids"].shape[1])
        n_labels = int((batch["labels"] != IGNORE_INDEX).sum())
        if n_tokens > max_length:
            problems.append(
                Problem("too_long", conversation.id, f"{n_tokens} tokens > max_length {max_length}")
            )
            continue
        if n_labels == 0:
            problems.append(Problem("no_answer_tokens", conversation.id, "no answer tokens"))
            continue
        rows.append(
            {
                "id": conversation.id,
                "text": rendered.text,
                "spans": [list(s) for s in rendered.spans],
                "image_paths": [str(p) for p in conversation.images],
                "video": timing_json(timing),
                "n_tokens": n_tokens,
                "n_labels": n_labels,
            }
        )
    return rows


class Collator:
    """``data_collator`` for the trainer: rows carry ``text``, ``spans``, ``image_paths``
    and ``video`` (the clip timing as JSON, ``""`` for images)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        rendered = [
            Rendered(r["text"], tuple((int(s), int(e)) for s, e in r["spans"])) for r in rows
        ]
        images = [[Path(p) for p in r["image_paths"]] for r in rows]
        return self.encoder.encode(rendered, images, [timing_of(r.get("video", "")) for r in rows])


__all__ = [
    "IGNORE_INDEX",
    "ChatRenderer",
    "Collator",
    "Encoder",
    "Rendered",
    "TemplateError",
    "add_special_tokens",
    "align_labels",
    "load_images",
    "prepare_rows",
    "to_messages",
    "trainable_tokens",
]

"""Trivial baselines: ``constant:<answer>`` and ``random[:seed]``.

They anchor every table: ``constant:A`` ("Yes" to everything) scores
F1 = 2/3 on balanced tamper data, ``constant:B`` scores 0, and ``random``
shows chance. On ``--task type|when|leading`` questions ``constant:<key>``
(``constant:none``, ``constant:middle``, ``constant:reject``) always gives the
same *meaning*, whatever the option order: the class-prior baseline;
``constant:A`` always gives the same letter, which the seeded option order
turns into a uniform guess. Both are text-only (``media_input = "none"``) unless
``--model-arg media=frames`` asks the runner to decode frames anyway (for
harness benchmarks and end-to-end tests of the frame path).

Model args (both): ``media`` = ``none`` | ``frames`` | ``path``;
``delay_s`` = seconds to sleep per request (tests of resume and
concurrency); ``temperature`` is accepted and ignored (``--temperature`` given to a
suite of models), a rule draws no tokens. ``random`` is deterministic per sample: the letter depends
only on the seed, the sample id and the repeat (``--repeats``; repeat 0 as
without repeats), so a resumed run answers the same.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mmrobust.models.base import FrameFormat, MediaInput, Model, Request, Response


def _parse_common(args: Mapping[str, str]) -> tuple[MediaInput, float]:
    unknown = set(args) - {"media", "delay_s", "temperature"}  # temperature: nothing to sample
    if unknown:
        raise ValueError(f"unknown --model-arg for baselines: {', '.join(sorted(unknown))}")
    media = args.get("media", "none")
    if media not in ("none", "frames", "path"):
        raise ValueError(f"--model-arg media must be none, frames or path, not {media!r}")
    try:
        delay = float(args.get("delay_s", "0"))
    except ValueError as exc:
        raise ValueError(f"--model-arg delay_s must be a number: {exc}") from None
    return media, delay  # type: ignore[return-value]


class _RuleModel(Model):
    """A baseline whose reply is a pure function of the request (``_reply``)."""

    media_input: ClassVar[MediaInput] = "none"
    frame_format: ClassVar[FrameFormat] = "jpeg"  # never looks at pixels: skip decoding JPEGs
    max_concurrency = 4
    delay_s: float = 0.0

    def _reply(self, req: Request) -> str:
        raise NotImplementedError

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer every request with ``_reply`` (one ``Response`` per request)."""
        out = []
        for req in requests:
            t0 = time.perf_counter()
            if self.delay_s:
                time.sleep(self.delay_s)
            out.append(Response(text=self._reply(req), latency_s=time.perf_counter() - t0))
        return out


class ConstantModel(_RuleModel):
    """Always gives the same answer.

    Args:
        answer: an option letter (``"A"``), an option key of ``--task`` questions
            (``"none"``, ``"middle"``, ``"reject"``: ``Request.option_keys``) or an
            option text (``"Yes"``); keys and texts are matched case-insensitively
            against each request's options, and the reply is that option's letter.
        delay_s: seconds to sleep per request.
    """

    def __init__(self, answer: str, delay_s: float = 0.0) -> None:
        self.answer = answer
        self.delay_s = delay_s
        self.name = f"constant:{answer}"

    def _reply(self, req: Request) -> str:
        if self.answer in req.options:
            return self.answer
        for letter, key in req.option_keys.items():
            if key.lower() == self.answer.strip().lower():
                return letter
        for letter, text in req.options.items():
            if text.strip().lower() == self.answer.strip().lower():
                return letter
        return self.answer

    def cannot_answer(
        self, options: Sequence[Mapping[str, str]], keys: Sequence[Mapping[str, str]] = ()
    ) -> str | None:
        """The answer is neither a letter, an option key nor an option text of any sample."""
        wanted = self.answer.strip().lower()
        if any(k.lower() == wanted for ks in keys for k in ks.values()):
            return None
        for opts in options:
            if self.answer in opts or any(t.strip().lower() == wanted for t in opts.values()):
                return None
        letters = sorted({k for opts in options for k in opts})
        known = sorted({k for ks in keys for k in ks.values()})
        as_key = f", an option key ({', '.join(known)})" if known else ""
        return (
            f"constant:{self.answer} answers {self.answer!r}, which is neither an option letter "
            f"({', '.join(letters)}){as_key} nor an option text of any sample: every answer "
            "would be a parse failure"
        )

    def fingerprint(self) -> dict[str, Any]:
        """Name and answer (the delay and media input do not change answers)."""
        return {"name": "constant", "answer": self.answer}


class RandomModel(_RuleModel):
    """Picks a uniformly random option letter, deterministically per (seed, sample id,
    repeat): each of ``--repeats`` asks draws anew, the same draw on every run; repeat 0
    draws as a run without repeats."""

    def __init__(self, seed: int = 0, delay_s: float = 0.0) -> None:
        self.seed = seed
        self.delay_s = delay_s
        self.name = f"random:{seed}"

    def _reply(self, req: Request) -> str:
        letters = list(req.options)
        if not letters:
            return ""
        key = f"{self.seed}\0{req.sample_id}" + (f"\0{req.repeat}" if req.repeat else "")
        digest = hashlib.sha256(key.encode()).digest()
        return letters[int.from_bytes(digest[:8], "big") % len(letters)]

    def fingerprint(self) -> dict[str, Any]:
        """Name and seed."""
        return {"name": "random", "seed": self.seed}


def _with_media(cls: type[Model], media: MediaInput) -> type[Model]:
    if media == cls.media_input:
        return cls
    return type(f"{cls.__name__}_{media}", (cls,), {"media_input": media})


def make_constant(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``constant:<answer>``.

    Raises:
        ValueError: no answer given, or bad model args.
    """
    if not arg:
        raise ValueError("constant needs an answer: constant:A or constant:Yes")
    media, delay = _parse_common(args)
    cls = _with_media(ConstantModel, media)
    model: Model = cls(arg, delay)  # type: ignore[call-arg]
    return model


def make_random(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``random[:seed]`` (seed defaults to 0).

    Raises:
        ValueError: a non-integer seed, or bad model args.
    """
    try:
        seed = int(arg) if arg else 0
    except ValueError:
        raise ValueError(f"random:<seed> needs an integer seed, not {arg!r}") from None
    media, delay = _parse_common(args)
    cls = _with_media(RandomModel, media)
    model: Model = cls(seed, delay)  # type: ignore[call-arg]
    return model


__all__ = ["ConstantModel", "RandomModel", "make_constant", "make_random"]

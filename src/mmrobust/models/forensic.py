"""``--model forensic``: the pixel-only tamper detector (``mmrobust.forensic``) as a ``Model``.

:class:`ForensicDetector` reads ``Request.video`` itself (``media_input =
"path"``), asks the library for the clip's verdict
(:func:`mmrobust.forensic.detector.analyse_video`) and answers the benchmark
question with the option whose text is "Yes" when the clip is tampered.
Questions of ``--task type|when|leading`` carry option keys
(``Request.option_keys``); the same verdict answers them
(:func:`mmrobust.tasks.answer_from_detection`, the one import of ``tasks`` on
the detector's path): its predicted type, the third of its predicted window,
and a leading premise accepted only when the premise's effect is its own
predicted type. When none of its candidate types is an option it replies so in
words (a ``parse_fail``, as any reply outside the options).

``make(arg, args)`` builds a ``ForensicDetector``; ``--model-arg prior=middle``
turns the location prior on (off by default). The decision never reads the file
name, container, codec, bitrate, fps or duration metadata; the fps is read with
``probe`` *after* deciding, only to express the predicted window in seconds.
See ``docs/forensic.md``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from mmrobust.forensic.detector import (
    PRIORS,
    Verdict,
    analyse_video,
    decide,
    ranked_types,
)
from mmrobust.forensic.thresholds import DEFAULT, THRESHOLDS_VERSION, Thresholds
from mmrobust.models.base import MediaInput, MediaKind, Model, Request, Response
from mmrobust.status import Status
from mmrobust.tasks.answer import answer_from_detection

_KNOWN_ARGS = ("prior",)


def _yes_no_letters(options: Mapping[str, str]) -> tuple[str, str]:
    """Letters of the "Yes" and "No" options (case-insensitive, options may be permuted).

    Raises:
        ValueError: either option is missing.
    """
    yes = [k for k, v in options.items() if v.strip().rstrip(".").lower() == "yes"]
    no = [k for k, v in options.items() if v.strip().rstrip(".").lower() == "no"]
    if len(yes) != 1 or len(no) != 1:
        raise ValueError(f"options must contain one 'Yes' and one 'No', got {dict(options)}")
    return yes[0], no[0]


class ForensicDetector(Model):
    """Classical pixel-only tamper detector (see ``docs/forensic.md``).

    Args:
        thresholds: decision thresholds (default: the calibrated ``DEFAULT``).
        prior: "none" (default) or "middle" (location prior).
    """

    media_input: ClassVar[MediaInput] = "path"
    media_kinds: ClassVar[tuple[MediaKind, ...]] = ("video",)  # it reads the clip's pixels
    name = "forensic"

    def __init__(self, thresholds: Thresholds = DEFAULT, prior: str = "none") -> None:
        if prior not in PRIORS:
            raise ValueError(f"unknown prior {prior!r}; expected one of {PRIORS}")
        self.thresholds = thresholds
        self.prior = prior

    def fingerprint(self) -> dict[str, Any]:
        """Name, thresholds version and hash, and the location prior."""
        return {
            "name": self.name,
            "thresholds_version": THRESHOLDS_VERSION,
            "thresholds_sha": self.thresholds.digest(),
            "prior": self.prior,
        }

    def analyse_video(self, path: Path) -> Verdict:
        """:func:`mmrobust.forensic.detector.analyse_video` with this model's thresholds and prior.

        Raises:
            MediaError: unreadable or undecodable video, or fewer than ``MIN_FRAMES`` frames.
        """
        return analyse_video(path, self.thresholds, self.prior)

    def _answer(self, req: Request) -> Response:
        from mmrobust.media import MediaError, probe

        t0 = time.perf_counter()
        yes = no = ""
        if not req.option_keys:  # the yes/no question; task questions answer by key
            try:
                yes, no = _yes_no_letters(req.options)
            except ValueError as exc:
                return Response(text="", status=Status.MODEL_ERROR, error=str(exc))
        if req.video is None:
            return Response(text="", status=Status.MEDIA_ERROR, error="request has no video")
        try:
            v = self.analyse_video(Path(req.video))
        except MediaError as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Response(
                text="", status=Status.MEDIA_ERROR, error=msg, latency_s=time.perf_counter() - t0
            )
        window = None
        fps = 0.0
        if v.start_frame is not None and v.end_frame is not None:
            # seconds only for reporting (and a leading question's duration), read after deciding
            try:
                fps = float(probe(Path(req.video), count_frames=False).fps)
            except MediaError:
                fps = 0.0
            window = {
                "start_frame": v.start_frame,
                "end_frame": v.end_frame,
                "start_s": round(v.start_frame / fps, 4) if fps > 0 else None,
                "end_s": round(v.end_frame / fps, 4) if fps > 0 else None,
            }
        signals = dict(v.signals)
        signals["top"] = [
            {"kind": c.kind, "start": c.start, "end": c.end, "score": round(c.score, 3)}
            for c in v.candidates[:3]
        ]
        extra = {
            "score": round(v.score, 4),
            "pred_type": v.pred_type,
            "pred_window": window,
            "prior": self.prior,
            "signals": signals,
        }
        text = yes if v.tampered else no
        if req.option_keys:
            letter = answer_from_detection(
                req.option_keys,
                tampered=v.tampered,
                types=ranked_types(v),
                window=(v.start_frame, v.end_frame)
                if v.start_frame is not None and v.end_frame is not None
                else None,
                n_frames=v.frames,
                fps=fps,
            )
            # None: its type is not an option (a set without that effect); the reply says so
            # and, like any reply outside the options, is a parse failure
            text = letter or f"tampered: {v.pred_type}, not among the options"
        return Response(text=text, latency_s=time.perf_counter() - t0, extra=extra)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer each request; per-clip failures become ``media_error`` responses."""
        return [self._answer(r) for r in requests]


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory registered as ``forensic`` in ``mmrobust.models.spec``.

    Args:
        arg: must be ``None`` (``forensic`` takes no ``:arg``).
        args: ``prior`` = "none" (default) or "middle".

    Raises:
        ValueError: an ``:arg``, an unknown key, or an unknown prior.
    """
    if arg:
        raise ValueError(f"forensic takes no ':{arg}'; use --model-arg prior=middle")
    unknown = sorted(set(args) - set(_KNOWN_ARGS))
    if unknown:
        raise ValueError(f"unknown forensic model args {unknown}; known: {list(_KNOWN_ARGS)}")
    prior = args.get("prior", "none")
    if prior not in PRIORS:
        raise ValueError(f"bad prior {prior!r}; expected one of {list(PRIORS)}")
    return ForensicDetector(prior=prior)


__all__ = [
    "DEFAULT",
    "PRIORS",
    "THRESHOLDS_VERSION",
    "ForensicDetector",
    "Thresholds",
    "Verdict",
    "analyse_video",
    "decide",
    "make",
]

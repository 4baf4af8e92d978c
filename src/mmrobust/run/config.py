"""The configuration of one eval run (:class:`EvalConfig`) and its validation.

Everything ``mmrobust eval`` takes is one :class:`EvalConfig`; the same object is
the ``config`` block of ``run.json``. :meth:`EvalConfig.validate` is the one
place options are checked (the CLI and a notebook get the same one-line
errors), and :func:`frame_cache` turns ``--cache-dir``/``--cache-size`` into the
frame cache. Nothing here touches a model, a dataset or the run folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.media.sampling import FramePolicy
from mmrobust.official import tamper_reference
from mmrobust.prompts import PromptConfig

OPTION_STYLES = ("paper", "vlmevalkit")
"""``--option-style`` values: ``A. Yes`` (the paper's) or ``(A) Yes`` (VLMEvalKit's)."""

FAILURE_POLICIES = ("exclude", "wrong")
"""``--failures`` values: how metrics count parse failures (rescore)."""


@dataclass
class EvalConfig:
    """Everything ``mmrobust eval`` takes (also the ``config`` block of ``run.json``).

    ``official`` switches to the reference protocol: for tamper data
    VLMEvalKit's prompt (system text of the ``reference`` version; question,
    frames, instruction; ``(A) Yes`` options; prefill), 8 segment-centre
    frames with the reference's repeats on short clips, its decision rules,
    every failed row scored as wrong; for MMR the record's raw question text,
    MMR's extractor and pairing by file position.

    ``reference`` names the VLMEvalKit version official tamper mode reproduces
    (:func:`mmrobust.official.tamper_reference`; default: the integration
    commit ``eb58e9e``, the paper's numbers). Recorded in ``run.json``.

    ``task`` picks the question asked about each clip of a tamper dataset:
    ``detect`` (the paper's yes/no question, default), ``type``, ``when`` or
    ``leading`` (``mmrobust.tasks``, docs/tasks.md); ``seed`` also seeds their
    option order and the leading presuppositions.

    ``repeats`` asks every question that many times (rows keyed by their repeat index;
    the family's metrics on repeat 0, the ``stability`` block over all: docs/evaluation.md).
    ``temperature``, when given, is the backend's ``temperature`` setting (the same as
    ``--model-arg temperature=T``).
    """

    data: str
    model: str
    out: str
    model_args: dict[str, str] = field(default_factory=dict)
    format: str | None = None
    images: str | None = None
    text_only: bool = False
    prompt: str | None = None
    option_style: str = "paper"
    permute: int = 0
    task: str = "detect"
    frames: int = 8
    fps: float | None = None
    max_frames: int | None = None
    extract: str = "lenient"
    official: bool = False
    limit: int | None = None
    workers: int | None = None
    seed: int = 0
    cache_dir: str | None = None
    cache_size: str | None = None
    n_resamples: int = 1000
    judge: str | None = None
    judge_args: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    retry_failed: bool = False
    repeats: int = 1
    temperature: float | None = None

    def validate(self) -> None:
        """Check every option before any work (the CLI and notebooks share it).

        A URL's user and password in ``model_args`` / ``judge_args`` is held in memory from
        here on (``***@`` in its place; ``models/credentials.py``).

        Raises:
            ValueError: a literal credential in the model or judge spec or their settings
                (one line naming ``api_key_env``); an unknown ``extract`` mode or
                ``option_style``; a negative ``--permute`` or ``--bootstrap``; ``--fps`` that is
                not a finite positive number (``0``, ``inf``, ``nan``); bad ``--frames`` /
                ``--max-frames``; task options that do not fit ``task``; a bad ``--cache-size``;
                ``--repeats`` below 1; ``--temperature`` negative, not finite, or not the
                ``temperature`` of ``--model-arg``.
            UnknownNameError: an unknown ``reference`` version or task.
        """
        from mmrobust.extract import EXTRACT_MODES
        from mmrobust.models.credentials import check_spec, hold_args
        from mmrobust.tasks import check_task_options

        check_spec(self.model)  # a credential never reaches run.json, the report or Ray
        self.model_args = hold_args(self.model_args)
        if self.judge:
            check_spec(self.judge)
        self.judge_args = hold_args(self.judge_args, "--judge-arg")
        if self.extract not in EXTRACT_MODES:
            raise ValueError(
                f"--extract must be one of {', '.join(EXTRACT_MODES)}, not {self.extract!r}"
            )
        if self.option_style not in OPTION_STYLES:
            raise ValueError(
                f"--option-style must be paper or vlmevalkit, not {self.option_style!r}"
            )
        for name, value in (("--permute", self.permute), ("--bootstrap", self.n_resamples)):
            if value < 0:
                raise ValueError(f"{name} must be 0 or more, not {value}")
        self.policy()  # --frames / --fps / --max-frames
        self._check_sampling()
        check_task_options(self.task, prompt=self.prompt, official=self.official)
        if self.reference is not None:
            tamper_reference(self.reference)  # an unknown version fails before any work
        if self.cache_size:
            from mmrobust.media.cache import parse_size

            parse_size(self.cache_size)

    def _check_sampling(self) -> None:
        """``--repeats`` and ``--temperature`` (which becomes ``model_args["temperature"]``)."""
        if self.repeats < 1:
            raise ValueError(f"--repeats must be 1 or more, not {self.repeats}")
        if self.temperature is None:
            return
        t = self.temperature
        if not math.isfinite(t) or t < 0:
            raise ValueError(f"--temperature must be a finite number of 0 or more, not {t}")
        given = self.model_args.get("temperature")
        if given is not None:
            try:
                same = float(given) == t
            except ValueError:
                same = False
            if not same:
                raise ValueError(
                    f"--temperature {t:g} and --model-arg temperature={given} disagree: give one"
                )
        self.model_args = {**self.model_args, "temperature": f"{t:g}"}

    def policy(self) -> FramePolicy:
        """The frame sampling policy these options describe.

        Raises:
            ValueError: ``--fps`` not a finite positive number, ``--frames`` or
                ``--max-frames`` below 1.
        """
        if self.official:
            return FramePolicy(mode="segments", n_frames=8, short_clips="repeat")
        return FramePolicy.choose(self.frames, self.fps, self.max_frames)

    def prompt_config(self) -> PromptConfig:
        """The prompt configuration these options describe."""
        style = "vlmevalkit" if self.official else self.option_style
        return PromptConfig(
            template=self.prompt,  # type: ignore[arg-type]
            option_style=style,  # type: ignore[arg-type]
            permute=self.permute,
            official=self.official,
            reference=tamper_reference(self.reference).name if self.official else None,
        )

    def extract_mode(self) -> str:
        """The extraction mode (``official`` when ``official`` is set)."""
        return "official" if self.official else self.extract

    def failures(self) -> str:
        """Metric failure policy: reference scoring counts parse failures as wrong."""
        return "wrong" if self.official else "exclude"


def check_rescore_options(extract_mode: str | None, failures: str | None) -> None:
    """Validate ``rescore``'s ``--extract`` and ``--failures`` (``None``: the run's).

    Raises:
        ValueError: an unknown extraction mode or failure policy.
    """
    from mmrobust.extract import EXTRACT_MODES

    if extract_mode is not None and extract_mode not in EXTRACT_MODES:
        raise ValueError(
            f"--extract must be one of {', '.join(EXTRACT_MODES)}, not {extract_mode!r}"
        )
    if failures is not None and failures not in FAILURE_POLICIES:
        raise ValueError(f"--failures must be exclude or wrong, not {failures!r}")


def default_cache_dir() -> Path:
    """``<mmrobust cache>/frames``: ``$MMROBUST_CACHE``, ``$XDG_CACHE_HOME/mmrobust`` or
    ``~/.cache/mmrobust`` (``mmrobust.paths.cache_root``)."""
    from mmrobust.paths import frame_cache_dir

    return frame_cache_dir()


def frame_cache(config: EvalConfig) -> Any:
    """The ``FrameCache`` ``--cache-dir``/``--cache-size`` describe, or ``None`` (``none`` or
    a size of 0).

    Raises:
        ValueError: ``--cache-size`` is not a size.
    """
    from mmrobust.media.cache import DEFAULT_MAX_BYTES, FrameCache, parse_size

    size = parse_size(config.cache_size) if config.cache_size else DEFAULT_MAX_BYTES
    if (config.cache_dir or "").strip().lower() in ("none", "off") or size == 0:
        return None
    return FrameCache(Path(config.cache_dir) if config.cache_dir else default_cache_dir(), size)


def scratch_size(config: EvalConfig) -> int:
    """The size cap of the temporary frame cache a run or suite uses when the persistent one
    is off: ``--cache-size`` when it is a positive size, else the default cap."""
    from mmrobust.media.cache import DEFAULT_MAX_BYTES, parse_size

    size = parse_size(config.cache_size) if config.cache_size else 0
    return size or DEFAULT_MAX_BYTES


__all__ = [
    "FAILURE_POLICIES",
    "OPTION_STYLES",
    "EvalConfig",
    "check_rescore_options",
    "default_cache_dir",
    "frame_cache",
    "scratch_size",
]

"""The benchmark-family protocol: everything that differs between benchmark families.

A *benchmark family* is what ``Sample.benchmark`` names ("tamper", "mmr",
"tamper-type", "tamper-when", "tamper-leading", "generic", or one a user
registers): the default prompt template, how its stored rows are scored, the lines
``eval`` prints, its Markdown section, leaderboards, figures, its place in the
report and the sample browser, and the sentence that states how failed answers
count. Nothing outside :mod:`mmrobust.families` compares ``benchmark`` to a string;
every caller asks the family (:func:`mmrobust.families.get_family`).

A family is one frozen :class:`BenchmarkFamily` value. Its behaviour is given as
callables; the built-in families point at functions in ``metrics/`` (the maths) and
``report/`` (tables, figures) through :func:`lazy` (``"module:attr"``, imported on
first call, as :class:`mmrobust.registry.Registry` does), so this package imports no
higher layer and ``metrics`` / ``prompts`` / ``extract`` can ask it without an import
cycle. A user's family passes plain functions (``tests/test_family_seam.py`` is a
worked example; docs/extending.md).

Styled after inspect_ai's ``@task`` and lighteval's ``LightevalTaskConfig``: one
declaration per benchmark, in one small module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only for annotations: nothing here imports report/ or metrics/
    from mmrobust.records import ScoredRecord

Metrics = Mapping[str, Any]
"""A ``metrics.json`` dict."""


def resolve(path: str) -> Any:
    """The attribute ``attr`` of module ``module`` for ``"module:attr"`` (imported now).

    Raises:
        ImportError / AttributeError: no such module or attribute.
    """
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def lazy(path: str) -> Callable[..., Any]:
    """A callable standing for ``"module:attr"``, imported on its first call.

    The built-in families name their scorers and report builders this way so that
    importing a family imports neither ``metrics`` nor ``report``.
    """
    cache: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not cache:
            cache.append(resolve(path))
        return cache[0](*args, **kwargs)

    call.__qualname__ = call.__name__ = f"lazy[{path}]"
    call.__doc__ = f"Calls ``{path}`` (imported on first call)."
    return call


@dataclass(frozen=True)
class ScoreOptions:
    """What ``eval`` / ``rescore`` choose about scoring, for :attr:`BenchmarkFamily.score_options`.

    Attributes:
        failures: ``"exclude"`` (failed rows left out where the metric allows) or ``"wrong"``.
        n_resamples: bootstrap resamples for confidence intervals (0: none).
        seed: bootstrap seed.
        defects: the loader's data defects (``metrics.json`` ``defects``).
        official: ``--extract official``: the reference's scoring rules.
    """

    failures: str = "exclude"
    n_resamples: int = 1000
    seed: int = 0
    defects: Sequence[str] = ()
    official: bool = False


def no_options(options: ScoreOptions) -> dict[str, Any]:
    """:attr:`BenchmarkFamily.score_options` of a scorer that takes no keyword arguments."""
    return {}


def _no_lines(metrics: Metrics) -> list[str]:
    return []


def _no_headline(metrics: Metrics) -> str:
    return ""


def _no_section(groups: Sequence[Any], out: Path, paths: Any) -> list[str]:
    return []


def _no_tables(group: Any, published: bool) -> list[Any]:
    return []


def _no_notes(records: Sequence[ScoredRecord]) -> list[str]:
    return []


@dataclass(frozen=True)
class CardSection:
    """What a family contributes to the robustness card (``mmrobust.report.card``).

    The built-in sections (``detection``, ``type``, ``when``, ``leading``, ``mmr``) are
    drawn by the card itself from the section name; any other family gives ``entries``
    and ``columns``, and the card draws its table with its chance levels beside it.

    Attributes:
        section: the key of its rows in the card JSON and the page's anchor (``"pope"``).
        title: the section's heading on the card page.
        entries: ``run -> [row]``: the rows one run contributes (a ``report.view.RunView``
            in; dicts out, each holding the ``columns``' keys, scores in percent).
        columns: ``((key, heading), ...)``: the columns of its table, in order.
        chance: ``run -> {label: percent}``: what a guess scores on the same questions,
            shown grey beside each row (``metrics.chance`` has the shared levels).
        note: a sentence under the table (how to read it).
    """

    section: str
    title: str = ""
    entries: Callable[[Any], list[dict[str, Any]]] | None = None
    columns: tuple[tuple[str, str], ...] = ()
    chance: Callable[[Any], Mapping[str, float | None]] | None = None
    note: str = ""


@dataclass(frozen=True)
class BenchmarkFamily:
    """One benchmark family: its id and every behaviour that differs per family.

    Attributes:
        id: the ``Sample.benchmark`` / ``metrics.json`` ``benchmark`` string it owns.
        title: a few words for people ("MVTamperBench tamper detection").
        score: ``(records, **kw) -> metrics dict`` (the maths lives in ``metrics/``);
            the dict has ``benchmark``, ``n_samples``, ``parse_fail_rate``, ``error_rate``.
        score_options: ``ScoreOptions -> kw`` for ``score`` (what of ``--failures``,
            ``--n-resamples``, ``--seed``, defects and official mode the scorer takes).
        failure_rule: ``failures -> sentence``: how failed answers count, shown in
            the HTML run metadata (docs/failures.md).
        default_template: the prompt template when ``--prompt`` is not given
            (a name of :data:`mmrobust.prompts.TEMPLATES`).
        summary: ``metrics -> lines`` that ``eval`` / ``rescore`` print between the
            head line and the parse-fail/error line.
        headline: ``metrics -> "F1 66.7%"``: the family's score in a few characters
            (``mmrobust demo``'s table, ``report``'s console summary).
        markdown: ``(groups, out, paths) -> Markdown lines``: writes the family's
            tables and figures for all its leaderboards (``groups``: the
            :class:`mmrobust.report.view.RunGroup` of this family, one per dataset)
            into ``out`` and records them in ``paths`` (a ``ReportPaths``).
        leaderboards: ``(group, published) -> [report.html.Table]``: the HTML
            tables of one group (``published``: add the paper's reference rows).
        compare_notes: ``records -> lines`` that ``compare`` prints under the
            paired test (e.g. what answering Yes to every clip would score).
        paired: scored in pairs (sizes are shown as pairs, not samples).
        streams: ``score`` reads its records once, in one pass (any iterable, not only a
            list): ``eval`` and ``rescore`` then hand it a generator of the run's rows
            streamed from the store, so scoring memory does not grow with the rows.
        order: position of its leaderboards in the report (lower first).
        browser_rank: position of its samples in the sample browser (lower first).
        label_suffix: appended to a run's label outside its own leaderboard
            (`` (--task type)``).
        media_word: what the model was shown, for ``mmrobust demo``'s table
            (``"images"``); empty: the frame policy.
        tamper_clips: its samples are tamper clips (``--task`` questions can be
            derived from it; ``mmrobust audit`` audits it).
        official_prompt: ``--official`` sends VLMEvalKit's MVTamperBench framing.
        official_extract: ``(text, options, answer, reference) -> Extraction`` for
            ``--extract official``; ``None``: VLMEvalKit's yes/no matcher.
        reference: ``reference name -> dict`` recorded as the reference an official
            run reproduces; ``None``: the family has no reference scorer.
        published: ``(info) -> bool``: whether a run (its ``run.json``) was made
            on the published benchmark, so its leaderboards show the paper's rows
            by default; ``None``: the family has no published rows.
        loaders: data formats the family brings (name -> loader), registered in
            :data:`mmrobust.datasets.base.FORMATS` by ``register_family`` (and for a family
            registered lazily, before the first lookup of a format).
        card: its section of the robustness card (:class:`CardSection`); ``None``: its
            runs are not on the card (the card says so).
    """

    id: str
    title: str
    score: Callable[..., dict[str, Any]]
    score_options: Callable[[ScoreOptions], dict[str, Any]] = no_options
    failure_rule: Callable[[str], str] = lambda failures: (
        "failed answers count as wrong in accuracy"
    )
    default_template: str = "plain"
    summary: Callable[[Metrics], list[str]] = _no_lines
    headline: Callable[[Metrics], str] = _no_headline
    markdown: Callable[[Sequence[Any], Path, Any], list[str]] = _no_section
    leaderboards: Callable[[Any, bool], list[Any]] = _no_tables
    compare_notes: Callable[[Sequence[ScoredRecord]], list[str]] = _no_notes
    paired: bool = False
    streams: bool = False
    order: int = 50
    browser_rank: int = 2
    label_suffix: str = ""
    media_word: str = ""
    tamper_clips: bool = False
    official_prompt: bool = False
    official_extract: Callable[..., Any] | None = None
    reference: Callable[[str | None], dict[str, Any] | None] | None = None
    published: Callable[[Mapping[str, Any]], bool] | None = None
    loaders: Mapping[str, Any] = field(default_factory=dict)
    card: CardSection | None = None

    def size(self, metrics: Metrics) -> str:
        """``"12 pairs"`` or ``"24 samples"``: how many were scored."""
        if self.paired:
            return f"{metrics.get('pairs')} pairs"
        return f"{metrics.get('n_samples')} samples"


__all__ = [
    "BenchmarkFamily",
    "CardSection",
    "Metrics",
    "ScoreOptions",
    "lazy",
    "no_options",
    "resolve",
]

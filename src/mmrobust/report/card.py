"""Robustness cards: one page and one JSON per model over all of its runs in a report.

:func:`write_cards` writes ``<report>/cards/<model>.html`` and ``<model>.json``
(names from :func:`mmrobust.safenames.folder_names`: credentials scrubbed, safe,
collision-free) for each model of the report (a text-only run is its own card,
``"<spec> (text only)"``). Each card gathers, per dataset the model was run on:

* **detection** (``tamper`` runs, MVTamperBench section 4.1): the run's Overall F1 over
  all its clips (position ``all``, the run's own ``metrics.json``), then, when the data
  holds several positions, the F1 of the tampered clips at each window position
  (``Sample.meta["position"]``: ``start`` / ``middle`` / ``end``), each scored with
  every original clip, with its
  bootstrap 95% CI (the run's resamples and seed, clustered by group as the run's own
  F1), the window coverage (share of tampered clips of which the model saw a frame inside
  the window; for a ``dropping`` seam the rule of
  :func:`mmrobust.media.sampling.window_coverage`), the parse-fail rate over the row's
  clips (tampered and originals alike), the chance levels of the same clips by the same metric (always "Yes" and a
  fair coin: the F1 per tamper type on that type's clips plus all originals, then the
  mean; :func:`mmrobust.metrics.chance.detection_chance`) and the leak-audit ceiling
  when an ``audit.json`` of that dataset is given (the best F1 any single metadata field
  or the all-fields classifier reaches: ``mmrobust audit``);
* **type** / **when** (``--task``): accuracy and macro-F1 with their CIs and the
  run's chance levels (uniform guess, majority class; ``metrics["chance"]``);
* **leading** (``--task leading``) and **mmr** (MMR, arXiv:2406.10638 section 3):
  RA and MR with their CIs; chance is a uniform guess on both questions of a pair, by
  MMR's definitions (:func:`mmrobust.metrics.chance.pair_chance`);
* **nearest published**: the 3 rows of MVTamperBench Table 7 (by overall F1) or MMR
  Table 2 (by RA) closest to the run, only when the run was made on the released
  benchmark (``BenchmarkFamily.published``: the hub id, the data sha256); otherwise
  the card says why they are not shown.

Every score in a card (JSON and page) is a percentage (``units: "percent"``).
Layer: reads :class:`mmrobust.report.view.RunView` values; imports metrics and the
published tables, nothing above ``report``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.report.stability import stability_entry, stability_line
from mmrobust.report.view import RunView, tally_rows
from mmrobust.safenames import folder_names

CARD_DIR = "cards"
"""The cards' folder inside the report folder."""

NEAREST = 3
"""Published rows shown as the nearest to a run."""


@dataclass(frozen=True)
class CardPaths:
    """One written card: its key (the model spec), the page and the JSON."""

    key: str
    html: Path
    json: Path


def card_key(run: RunView) -> str:
    """The card a run belongs to: its model spec, `` (text only)`` for runs that sent no media."""
    return run.model + (" (text only)" if run.text_only else "")


def _pc(x: Any, scale: float = 100.0) -> float | None:
    """``x * scale`` rounded to 2 decimals (``None`` for a missing or non-finite value)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x) * scale
    except (TypeError, ValueError):
        return None
    return round(v, 2) if v == v and abs(v) != float("inf") else None


def _ci(bounds: Any, scale: float = 100.0) -> list[float | None] | None:
    if not isinstance(bounds, Sequence) or len(bounds) != 2:
        return None
    return [_pc(bounds[0], scale), _pc(bounds[1], scale)]


def _where(run: RunView, report_dir: Path, card_dir: Path) -> dict[str, Any]:
    """The dataset and the run folder (relative to the card) of a card row."""
    import os

    return {
        "dataset": run.dataset_name,
        "data_sha256": str(run.info.get("dataset", {}).get("data_hash", "")),
        "run_dir": os.path.relpath(run.run_dir.resolve(), card_dir.resolve()),
    }


def _audit_ceiling(run: RunView, audits: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The best metadata-only F1 of the audit of this run's dataset (name or source), if any."""
    ds = run.info.get("dataset", {})
    for a in audits:
        same = a.get("dataset") in (run.dataset, run.dataset_name) or (
            a.get("source") and a.get("source") == ds.get("source")
        )
        if not same:
            continue
        best: tuple[float, str] | None = None
        classifier = a.get("classifier") or {}
        candidates = [(classifier.get("f1"), f"all-fields classifier ({classifier.get('model')})")]
        candidates += [
            (f.get("f1"), f"field {name}") for name, f in (a.get("fields") or {}).items()
        ]
        for f1, what in candidates:
            if f1 is not None and (best is None or f1 > best[0]):
                best = (float(f1), what)
        if best is None:  # too few clips for any field's rule or the classifier
            return {"f1": None, "by": f"the audit of {a.get('dataset')} scored no field"}
        return {"f1": _pc(best[0]), "by": best[1]}
    return None


@dataclass
class _Covered:
    """Counts of tampered clips and their window coverage, gathered row by row."""

    n: int = 0
    known: int = 0
    inside: int = 0

    def add(self, row: Any) -> None:
        """Count one row (a ``StoredRow`` or ``ScoredRecord``: its ``window_covered``)."""
        self.n += 1
        if row.window_covered is not None:
            self.known += 1
            self.inside += int(bool(row.window_covered))

    @classmethod
    def of(cls, rows: Iterable[Any]) -> _Covered:
        """The counts of ``rows``."""
        c = cls()
        for r in rows:
            c.add(r)
        return c


def _detection_entry(
    position: str, metrics: Mapping[str, Any], rows: Iterable[Any] | _Covered, n_original: int
) -> dict[str, Any]:
    """One detection row: the F1 of ``metrics`` (a tamper ``metrics.json``-shaped dict over
    ``rows``' tampered clips and the originals), its CI, the parse-fail rate over the same
    clips (tampered and originals: the run-level ``parse_fail_rate``, not a type's, which
    counts the type's tampered clips only), and the chance levels of the same clips by the
    same definition (:func:`mmrobust.metrics.chance.detection_chance_of_metrics`:
    macro over the types, each type with all originals)."""
    from mmrobust.metrics.chance import detection_chance_of_metrics

    guess = detection_chance_of_metrics(metrics)
    covered = _Covered.of(rows) if not isinstance(rows, _Covered) else rows
    return {
        "position": position,
        "f1": _pc((metrics.get("f1") or {}).get("overall")),
        "ci95": _ci((metrics.get("f1_ci95") or {}).get("overall")),
        "n_tampered": covered.n,
        "n_original": n_original,
        "window_coverage": _pc(covered.inside / covered.known) if covered.known else None,
        "parse_fail_rate": _pc(metrics.get("parse_fail_rate")),
        "chance": {
            "coin_flip": _pc(guess["coin_flip"]["overall"]),
            "always_yes": _pc(guess["always_yes"]["overall"]),
        },
    }


def _detection(run: RunView, audits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Detection F1 of a tamper run over all its clips (``position`` ``all``: the run's own
    ``metrics.json``), then per window position when the data records several (see the
    module docstring)."""
    from mmrobust.metrics.tamper import tamper_metrics

    boot = run.metrics.get("bootstrap") or {}
    n_boot, seed = int(boot.get("n_resamples", 1000)), int(boot.get("seed", 0))
    failures = run.metrics.get("failures", "exclude")
    tampered, n_original, positions = _Covered(), 0, Counter[str]()
    for (ttype, position), n, known, inside in tally_rows(
        run.rows, ("$.tamper_type", "$.meta.position")
    ):  # counted by SQLite for a run folder: no row is read
        if ttype == "original":
            n_original += n
            continue
        tampered.n, tampered.known, tampered.inside = (
            tampered.n + n,
            tampered.known + known,
            tampered.inside + inside,
        )
        if position:
            positions[str(position)] += n
    ceiling = _audit_ceiling(run, audits)
    out = [_detection_entry("all", run.metrics, tampered, n_original)]
    if not positions or list(positions.values()) == [tampered.n]:  # one position with every
        return [{**e, "leak_audit_ceiling": ceiling} for e in out]
    # tampered clip would repeat "all"; else a second pass for the positions' F1 (records kept)
    originals: list[Any] = []
    levels: dict[str, list[Any]] = {}
    for row in run.rows:
        if row.sample.tamper_type == "original":
            originals.append(row.to_record())
        elif row.sample.meta.get("position"):
            levels.setdefault(str(row.sample.meta["position"]), []).append(row.to_record())
    order = {"start": 0, "middle": 1, "end": 2}
    for pos in sorted(levels, key=lambda p: (order.get(p, 3), p)):
        records = levels[pos]
        m = tamper_metrics([*records, *originals], failures=failures, n_resamples=n_boot, seed=seed)
        out.append(_detection_entry(pos, m, records, len(originals)))
    return [{**e, "leak_audit_ceiling": ceiling} for e in out]


def _multiclass(run: RunView) -> dict[str, Any]:
    m = run.metrics
    ci = m.get("ci95") or {}
    chance = m.get("chance") or {}
    return {
        "accuracy": _pc(m.get("accuracy")),
        "accuracy_ci95": _ci(ci.get("accuracy")),
        "macro_f1": _pc(m.get("macro_f1")),
        "macro_f1_ci95": _ci(ci.get("macro_f1")),
        "n": m.get("n_scored", m.get("n_samples")),
        "chance": {
            "uniform_guess": _pc(chance.get("accuracy")),
            "majority_class": _pc(chance.get("majority")),
        },
    }


def pair_chance(run: RunView) -> dict[str, float | None]:
    """RA and MR (percent) of a uniform guess on both questions of each pair of a run
    (``Sample.group`` pairs a ``positive`` and a ``negative`` question), by MMR's own
    definitions (:func:`mmrobust.metrics.chance.pair_chance`; ``k``: the options asked)."""
    from mmrobust.metrics.chance import pair_chance as guess_pairs

    pairs: dict[str, dict[str, int]] = {}
    for row in run.rows:
        pol = row.sample.polarity
        if pol in ("positive", "negative") and row.options:
            pairs.setdefault(row.sample.group or row.sample.id, {})[pol] = len(row.options)
    guess = guess_pairs((p["positive"], p["negative"]) for p in pairs.values() if len(p) == 2)
    return {k: _pc(v, 1.0) for k, v in guess.items()}


def _pairs(run: RunView) -> dict[str, Any]:
    m = run.metrics
    ci = m.get("ci") or {}
    return {
        "RA": _pc(m.get("RA"), 1.0),
        "RA_ci95": _ci(ci.get("RA"), 1.0),
        "MR": _pc(m.get("MR"), 1.0),
        "MR_ci95": _ci(ci.get("MR"), 1.0),
        "pairs": m.get("pairs"),
        "chance": pair_chance(run),
    }


def _published(run: RunView) -> dict[str, Any]:
    """The nearest published rows, or why none are shown (see the module docstring)."""
    from mmrobust.report.published import table2_metrics, table7_metrics

    check = run.family.published
    if check is None:
        return {"shown": False, "why": "no published table for this benchmark"}
    if not check(run.info):
        where = (
            "the released MVTamperBench (its hub id)"
            if card_section(run) == "detection"
            else "the released MMR-benchmark.json (its sha256)"
        )
        return {
            "shown": False,
            "why": f"the published rows were measured on {where}; this run's data "
            f"({run.dataset_name}) is not it, so they would not compare",
        }
    if card_section(run) == "detection":
        ours = run.metrics.get("f1", {}).get("overall")
        rows = [(name, m["f1"]["overall"]) for name, m in table7_metrics().items()]
        near = sorted(rows, key=lambda r: abs(r[1] - (ours or 0.0)))[:NEAREST]
        return {"shown": True, "rows": [{"model": n, "f1": _pc(f)} for n, f in near]}
    ours = run.metrics.get("RA")
    rows2 = [(name, m["RA"], m["MR"]) for name, m in table2_metrics().items()]
    near2 = sorted(rows2, key=lambda r: abs(r[1] - (ours or 0.0)))[:NEAREST]
    return {"shown": True, "rows": [{"model": n, "RA": ra, "MR": mr} for n, ra, mr in near2]}


def card_section(run: RunView) -> str | None:
    """The card section of a run: its family's hook (``BenchmarkFamily.card``, a
    ``CardSection``), never a benchmark string or a family flag: ``detection`` (``tamper``),
    ``type`` / ``when`` / ``leading`` (the ``--task`` families), ``mmr``, or a section a
    family of its own declares; ``None``: the family declares none, so not on the card."""
    card = run.family.card
    return card.section if card is not None else None


SECTIONS = ("detection", "type", "when", "leading", "mmr")
"""The card's built-in sections, in page order (a section with no run is left out); a
family's own section follows them, drawn from its ``CardSection`` (:func:`_own_rows`)."""


def _own_rows(run: RunView) -> list[dict[str, Any]]:
    """The rows a family's own card section gives for ``run`` (``CardSection.entries``),
    each with the section's chance levels (``CardSection.chance``, percent)."""
    card = run.family.card
    if card is None or card.entries is None:
        return []
    chance = dict(card.chance(run)) if card.chance is not None else {}
    return [{**row, "chance": chance} for row in card.entries(run)]


def _own_section(run: RunView) -> dict[str, Any]:
    """How the page draws a family's own section: title, columns, chance labels, note."""
    card = run.family.card
    assert card is not None
    return {
        "section": card.section,
        "title": card.title or run.family.title,
        "columns": [list(c) for c in card.columns],
        "note": card.note,
    }


def card_data(
    key: str,
    runs: Sequence[RunView],
    report_dir: Path,
    audits: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The card of one model (``key``) over its ``runs``: the JSON written beside the page.

    Returns:
        ``{"model", "units": "percent", "detection": [...], "type": [...], "when": [...],
        "leading": [...], "mmr": [...], "notes": [...], "sections": [...]}``: one entry per
        run (per window position for ``detection``), each with ``dataset``, ``data_sha256``,
        ``run_dir`` (relative to the card), its scores, CIs and chance levels; ``detection``
        and ``mmr`` entries also carry ``published`` (``shown``, ``rows`` or ``why``). A
        family's own section (``CardSection`` with ``entries``) adds its rows under its
        ``section`` key and its ``title``, ``columns`` and ``note`` to ``sections``. Runs
        asked with ``--repeats`` add a ``stability`` list (one row per run, any family:
        :func:`mmrobust.report.stability.stability_entry` and its ``line``).
    """
    card_dir = report_dir / CARD_DIR
    data: dict[str, Any] = {"model": key, "units": "percent", "notes": [], "sections": []}
    for s in SECTIONS:
        data[s] = []
    for run in runs:
        where = _where(run, report_dir, card_dir)
        if run.interrupted:
            data["notes"].append(f"{run.dataset_name} ({run.family.title}): {run.interrupted}")
        section = card_section(run)
        if section == "detection":
            for entry in _detection(run, audits):
                data["detection"].append({**where, **entry, "published": _published(run)})
        elif section in ("type", "when"):
            data[section].append({**where, **_multiclass(run)})
        elif section == "leading":
            data["leading"].append({**where, **_pairs(run)})
        elif section == "mmr":
            data["mmr"].append({**where, **_pairs(run), "published": _published(run)})
        elif section is not None and run.family.card is not None and run.family.card.entries:
            if section not in data:
                data[section] = []
                data["sections"].append(_own_section(run))
            data[section].extend({**where, **row} for row in _own_rows(run))
        else:
            data["notes"].append(f"{run.dataset_name}: {run.family.title} runs are not on the card")
        stability = stability_entry(run.metrics)
        if stability is not None:  # --repeats: every family's runs, one row each
            row = {**where, "family": run.family.title, "line": stability_line(run.metrics)}
            data.setdefault("stability", []).append({**row, **stability})
    return data


def write_cards(
    runs: Sequence[RunView],
    report_dir: str | Path,
    audits: Sequence[Mapping[str, Any]] = (),
    *,
    title: str = "mmrobust report",
) -> dict[str, CardPaths]:
    """Write one card page and JSON per model of ``runs`` into ``report_dir/cards/``.

    Args:
        runs: the report's runs.
        report_dir: the report folder (the cards link back to its ``index.html``).
        audits: loaded ``audit.json`` files (:func:`mmrobust.report.audit.load_audit`).
        title: the report's title (in each card's header).

    Returns:
        card key (model spec) -> its paths, in the order the models first appear.

    Raises:
        OSError: the folder cannot be written.
    """
    from mmrobust.report.html import _asset, _env

    out = Path(report_dir)
    card_dir = out / CARD_DIR
    card_dir.mkdir(parents=True, exist_ok=True)
    by_key: dict[str, list[RunView]] = {}
    for run in runs:
        by_key.setdefault(card_key(run), []).append(run)
    names = folder_names(list(by_key))
    template = _env().get_template("card.html.j2")
    written: dict[str, CardPaths] = {}
    for key, model_runs in by_key.items():
        data = card_data(key, model_runs, out, audits)
        paths = CardPaths(key, card_dir / f"{names[key]}.html", card_dir / f"{names[key]}.json")
        write_text(paths.json, json.dumps(data, indent=2) + "\n")
        html = template.render(
            card=data, title=title, css=_asset("report.css"), json_name=paths.json.name
        )
        write_text(paths.html, html)
        written[key] = paths
    return written


def card_links(runs: Sequence[RunView], labels: Sequence[str], cards: Mapping[str, CardPaths],
               report_dir: str | Path) -> dict[str, str]:  # fmt: skip
    """Leaderboard row label -> its card's page, relative to ``report_dir`` (for the links)."""
    import os

    out: dict[str, str] = {}
    for run, label in zip(runs, labels, strict=True):
        paths = cards.get(card_key(run))
        if paths is not None:
            out[label] = Path(os.path.relpath(paths.html, report_dir)).as_posix()
    return out


__all__ = [
    "CARD_DIR",
    "CardPaths",
    "card_data",
    "card_key",
    "card_links",
    "card_section",
    "pair_chance",
    "write_cards",
]

"""Tasks ``type``, ``when`` and ``leading`` (issue 20): truths, hand-computed scores, option order,
baselines at their analytic chance values, run keys and the CLI.

Hand-built manifests (text only: no clip is decoded) carry known truths; a scripted model
answers by option *key* (``Request.option_keys``) or by option text, so every expected
confusion matrix, RA/MR and derived detection F1 below is computed by hand from the script.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets import load_dataset
from mmrobust.datasets.base import Dataset
from mmrobust.extract import extract
from mmrobust.metrics import compute_metrics
from mmrobust.models.base import MediaInput, Model, Request, Response
from mmrobust.models.baselines import ConstantModel, RandomModel
from mmrobust.models.blind import OverlapModel
from mmrobust.prompts import PromptConfig, build_prompt
from mmrobust.runner import EvalConfig, RunConflictError, run_eval, run_key
from mmrobust.schema import Sample, Window
from mmrobust.status import Status
from mmrobust.store import ResultStore, RunKey, StoredRow
from mmrobust.tasks import (
    META_KEY,
    answer_from_detection,
    derive_task,
    load_templates,
    option_keys,
    third_of,
    when_truth,
)
from mmrobust.tasks.templates import parse_templates
from mmrobust.tasks.truth import straddles
from tests.runs import stored_rows

# --------------------------------------------------------------------------- helpers


def clip(
    source: str,
    ttype: str,
    *,
    window: tuple[int, int] | None = None,
    n: int = 90,
    tag: str = "",
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One manifest line (the fields ``load_manifest`` reads)."""
    w = None
    if ttype != "original":
        s, e = window if window is not None else (40, 50)
        w = {"start_frame": s, "end_frame": e, "start_s": s / 30, "end_s": e / 30}
    return {
        "id": f"{source}__{ttype}{tag}",
        "source": f"/videos/{source}.mp4",
        "source_sha256": f"sha-{source}",
        "video": f"videos/{source}/{ttype}{tag}.mp4",
        "video_sha256": "0" * 64,
        "tamper_type": ttype,
        "params": params or {},
        "window_output": w,
        "frames_output": n,
        "fps": "30",
    }


def write_manifest(folder: Path, records: Sequence[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    return folder


def load(folder: Path) -> Dataset:
    return load_dataset(folder, text_only=True)


class Scripted(Model):
    """Answers each question as scripted: an option key, ``accept`` (any key but
    ``reject``), or ``!text`` (that raw reply). ``by_text`` replies with the option's text."""

    media_input: ClassVar[MediaInput] = "none"
    name = "scripted"

    def __init__(self, answers: dict[str, str], *, by_text: bool = False) -> None:
        self.answers = answers
        self.by_text = by_text

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "answers": sorted(self.answers.items()), "text": self.by_text}

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            want = self.answers[r.sample_id]
            if want.startswith("!"):
                out.append(Response(want[1:]))
                continue
            letter = next(
                k
                for k, key in r.option_keys.items()
                if key == want or (want == "accept" and key != "reject")
            )
            out.append(Response(r.options[letter] if self.by_text else letter))
        return out


def evaluate(
    tmp: Path, data: Path, task: str, model: Model, name: str, **kw: Any
) -> dict[str, Any]:
    config = EvalConfig(
        data=str(data), model=model.name, out=str(tmp / name), text_only=True, task=task,
        n_resamples=0, **kw,
    )  # fmt: skip
    return run_eval(config, progress=False, model=model).metrics


KEY = RunKey("m", "p", "f")


def score_directly(dataset: Dataset, task: str, model: Model, **kw: Any) -> dict[str, Any]:
    """The runner's per-sample path without the store: prompt, request with option keys,
    the model, lenient extraction, ``StoredRow.to_record``, metrics."""
    ds = derive_task(dataset, task)
    records = []
    for s in ds.samples:
        p = build_prompt(s, PromptConfig())
        req = Request(
            sample_id=s.id, prompt=p.text, question=p.question, options=p.options,
            option_keys=option_keys(s, p.options),
        )  # fmt: skip
        ex = extract(model.generate([req])[0].text, p.options)
        row = StoredRow(
            sample=s, key=KEY, status=ex.status, letter=ex.letter, answer=p.answer,
            options=p.options,
        )  # fmt: skip
        records.append(row.to_record())
    return compute_metrics(records, ds.benchmark, n_resamples=0, **kw)


def comparable(metrics: dict[str, Any]) -> dict[str, Any]:
    """Everything but the run block and the recorded bootstrap seed (``--seed`` also seeds it)."""
    return {k: v for k, v in metrics.items() if k not in ("run", "complete", "bootstrap")}


# --------------------------------------------------------------------------- when truth


@pytest.mark.parametrize(
    ("start", "end", "n", "third", "straddle"),
    [
        (0, 30, 90, "beginning", False),  # fills the first third exactly
        (14, 45, 90, "beginning", True),  # centre 29.5: across the border, more of it before
        (15, 45, 90, "middle", True),  # centre 30.0 exactly on the border: the later third
        (16, 46, 90, "middle", True),
        (29, 29, 90, "beginning", False),  # a dropping seam just before the border
        (30, 30, 90, "middle", True),  # a seam on the border
        (58, 61, 90, "middle", True),  # centre 59.5
        (59, 61, 90, "end", True),  # centre 60.0 on the second border
        (60, 90, 90, "end", False),
        (90, 90, 90, "end", False),  # dropping at the very end: the seam is the clip's end
        (0, 0, 90, "beginning", False),
        (32, 34, 100, "beginning", True),  # border at 33.33: centre 33.0 before it
        (33, 34, 100, "middle", True),  # centre 33.5 after it
    ],
)
def test_when_third_on_and_across_the_borders(
    start: int, end: int, n: int, third: str, straddle: bool
) -> None:
    assert third_of(start, end, n) == third
    assert straddles(start, end, n) is straddle


def test_when_truth_from_the_manifest_and_its_errors() -> None:
    def sample(ttype: str, window: Window | None, meta: dict[str, Any]) -> Sample:
        return Sample(
            id="x", benchmark="tamper", question="q", options={"A": "Yes", "B": "No"},
            answer="A", tamper_type=ttype, window=window, meta=meta,
        )  # fmt: skip

    w = Window(start_frame=70, end_frame=80, start_s=0, end_s=0)
    assert when_truth(sample("rotation", w, {"frames_output": 90})) == "end"
    assert when_truth(sample("original", None, {})) == "nowhere"
    with pytest.raises(ValueError, match="window_output"):
        when_truth(sample("rotation", None, {"frames_output": 90}))
    # a released clip records only the position in its file name
    assert when_truth(sample("dropping", None, {"position": "start"})) == "beginning"
    assert when_truth(sample("rotation", None, {"position": "end"})) == "end"
    with pytest.raises(ValueError, match="frames_output"):
        when_truth(sample("rotation", w, {}))
    with pytest.raises(ValueError, match="not inside"):
        third_of(80, 100, 90)


# --------------------------------------------------------------------------- type


TYPE_SET = [
    clip("s1", "original"),
    clip("s1", "dropping", window=(45, 45)),
    clip("s1", "masking"),
    clip("s1", "rotation"),
    clip("s2", "original"),
    clip("s2", "dropping", window=(45, 45)),
    clip("s2", "masking"),
    clip("s2", "rotation"),
]
TYPE_SCRIPT = {
    "s1__original::type": "none",  # right
    "s1__dropping::type": "none",  # wrong (missed)
    "s1__masking::type": "masking",  # right
    "s1__rotation::type": "rotation",  # right
    "s2__original::type": "masking",  # wrong (false alarm)
    "s2__dropping::type": "dropping",  # right
    "s2__masking::type": "!I cannot tell from these frames",  # parse failure
    "s2__rotation::type": "dropping",  # wrong type, but detected
}


def test_type_confusion_matrix_and_scores_by_hand(tmp_path: Path) -> None:
    data = write_manifest(tmp_path / "set", TYPE_SET)
    m = evaluate(tmp_path, data, "type", Scripted(TYPE_SCRIPT), "run")
    assert m["benchmark"] == "tamper-type"
    assert m["classes"] == ["none", "dropping", "masking", "rotation"]
    # rows: truth, columns: prediction (the parse failure is left out by default)
    assert m["confusion"]["matrix"] == [[1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1]]
    assert m["accuracy"] == pytest.approx(4 / 7)
    assert m["balanced_accuracy"] == pytest.approx((1 / 2 + 1 / 2 + 1 + 1 / 2) / 4)
    # F1: none 2/4, dropping 2/4, masking 2/3, rotation 2/3
    assert m["macro_f1"] == pytest.approx((1 / 2 + 1 / 2 + 2 / 3 + 2 / 3) / 4)
    assert m["per_class"]["masking"]["precision"] == pytest.approx(1 / 2)
    assert m["per_class"]["rotation"]["recall"] == pytest.approx(1 / 2)
    assert m["parse_fail_rate"] == pytest.approx(1 / 8)
    # derived detection (any answer but none = Yes), per type on its clips + all originals:
    # dropping TP1 FN1 FP1 -> 1/2; masking TP1 FP1 -> 2/3; rotation TP2 FP1 -> 4/5
    det = m["detection"]["f1"]
    assert det["dropping"] == pytest.approx(1 / 2)
    assert det["masking"] == pytest.approx(2 / 3)
    assert det["rotation"] == pytest.approx(4 / 5)
    assert det["overall"] == pytest.approx((1 / 2 + 2 / 3 + 4 / 5) / 3)
    assert m["chance"]["accuracy"] == pytest.approx(1 / 4)

    # the reference's failure policy: the parse failure is a wrong answer (column no_answer)
    assert m["failures"] == "exclude"
    with ResultStore(tmp_path / "run") as store:
        records = [r.to_record() for r in store.rows()]
    wrong = compute_metrics(records, "tamper-type", failures="wrong", n_resamples=0)
    assert wrong["confusion"]["columns"][-1] == "no_answer"
    assert wrong["confusion"]["matrix"][2] == [0, 0, 1, 0, 1]
    assert wrong["accuracy"] == pytest.approx(4 / 8)
    assert wrong["macro_f1"] == pytest.approx((1 / 2 + 1 / 2 + 1 / 2 + 2 / 3) / 4)

    # every row keeps the prompt it was sent, and its question carries its own options
    rows = stored_rows(tmp_path / "run")
    prompt = rows["s1__rotation::type"]["prompt"]
    assert prompt.startswith("Which kind of tampering, if any, does this video show?\nOptions:\n")
    assert "Some frames are upside down" in prompt and "None: the video is not tampered" in prompt
    assert prompt.endswith("Answer with the option's letter from the given choices directly.")


def test_shuffled_option_order_scores_identically(tmp_path: Path) -> None:
    data = write_manifest(tmp_path / "set", TYPE_SET)
    base = evaluate(tmp_path, data, "type", Scripted(TYPE_SCRIPT), "a")
    orders = {
        json.dumps(s.meta[META_KEY]["order"]) for s in derive_task(load(data), "type").samples
    }
    assert len(orders) > 1  # the seeded order differs between clips
    seed7 = derive_task(load(data), "type", seed=7).samples
    assert [s.options for s in seed7] != [
        s.options for s in derive_task(load(data), "type").samples
    ]
    for name, kw, model in [
        ("seed7", {"seed": 7}, Scripted(TYPE_SCRIPT)),
        ("permute", {"permute": 2}, Scripted(TYPE_SCRIPT)),
        ("text", {"seed": 3, "permute": 1}, Scripted(TYPE_SCRIPT, by_text=True)),
    ]:
        other = evaluate(tmp_path, data, "type", model, name, **kw)
        assert comparable(other) == comparable(base), name


# --------------------------------------------------------------------------- when


def test_when_confusion_and_accuracy_per_type_by_hand(tmp_path: Path) -> None:
    records = [
        clip("s1", "original"),
        clip("s1", "rotation", window=(0, 10), tag="@start"),  # beginning
        clip("s1", "rotation", window=(40, 50), tag="@middle"),  # middle
        clip("s1", "masking", window=(80, 90), tag="@end"),  # end
        clip("s2", "original"),
        clip("s2", "masking", window=(15, 45), tag="@border"),  # centre 30: middle (straddles)
        clip("s2", "dropping", window=(90, 90), tag="@end"),  # seam at the end: end
    ]
    script = {
        "s1__original::when": "nowhere",  # right
        "s1__rotation@start::when": "beginning",  # right
        "s1__rotation@middle::when": "end",  # wrong
        "s1__masking@end::when": "end",  # right
        "s2__original::when": "middle",  # wrong
        "s2__masking@border::when": "beginning",  # wrong (the straddling one)
        "s2__dropping@end::when": "nowhere",  # wrong (missed)
    }
    data = write_manifest(tmp_path / "set", records)
    m = evaluate(tmp_path, data, "when", Scripted(script), "run")
    assert m["classes"] == ["beginning", "middle", "end", "nowhere"]
    assert m["confusion"]["matrix"] == [
        [1, 0, 0, 0],
        [1, 0, 1, 0],
        [0, 0, 1, 1],
        [0, 1, 0, 1],
    ]
    assert m["accuracy"] == pytest.approx(3 / 7)
    assert m["balanced_accuracy"] == pytest.approx((1 + 0 + 1 / 2 + 1 / 2) / 4)
    # F1: beginning 2/3, middle 0, end 2/4, nowhere 2/4
    assert m["macro_f1"] == pytest.approx((2 / 3 + 0 + 1 / 2 + 1 / 2) / 4)
    per_type = {t: v["accuracy"] for t, v in m["accuracy_per_type"].items()}
    assert per_type == pytest.approx(
        {"original": 1 / 2, "dropping": 0.0, "masking": 1 / 2, "rotation": 1 / 2}
    )
    assert m["straddling"] == 1
    assert m["warnings"] == []


def test_when_on_one_position_warns_and_a_missing_window_is_a_data_error(tmp_path: Path) -> None:
    bad = clip("s2", "rotation")
    bad["window_output"] = None
    data = write_manifest(tmp_path / "set", [clip("s1", "original"), clip("s1", "rotation"), bad])
    m = evaluate(tmp_path, data, "when", ConstantModel("middle"), "run")
    assert "middle third" in m["warnings"][0] and "--position start,middle,end" in m["warnings"][0]
    assert m["status_counts"] == {"ok": 2, "data_error": 1}
    assert m["n_scored"] == 2


# --------------------------------------------------------------------------- leading


def test_leading_pairs_ra_mr_by_hand(tmp_path: Path) -> None:
    records = [
        clip(s, t, window=(45, 45) if t == "dropping" else (40, 50))
        for s in ("s1", "s2")
        for t in ("original", "dropping", "rotation")
    ]
    data = write_manifest(tmp_path / "set", records)
    ds = derive_task(load(data), "leading")
    assert len(ds.samples) == 12 and ds.benchmark == "tamper-leading"
    negatives = {s.meta["clip_id"]: s for s in ds.samples if s.polarity == "negative"}
    presupposed = {c: s.category for c, s in negatives.items()}
    # a clip never presupposes its own effect; the two originals take both effects in turn
    assert presupposed["s1__dropping"] == presupposed["s2__dropping"] == "rotation"
    assert presupposed["s1__rotation"] == presupposed["s2__rotation"] == "dropping"
    assert {presupposed["s1__original"], presupposed["s2__original"]} == {"dropping", "rotation"}
    neg = negatives["s1__dropping"]
    assert neg.question == (
        "The frames in the middle of this video are upside down. "
        "How long does the upside-down part last?"
    )
    assert sorted(neg.options.values()) == [
        "About half a second", "About one second", "About two seconds",
        "No frame in this video is upside down",
    ]  # fmt: skip
    assert neg.options[neg.answer] == "No frame in this video is upside down"

    outcomes = {  # clip -> (positive answer, negative answer): outcome
        "s1__original": ("none", "reject"),  # UR
        "s1__dropping": ("dropping", "accept"),  # UF
        "s1__rotation": ("none", "reject"),  # NR
        "s2__original": ("none", "accept"),  # UF
        "s2__dropping": ("rotation", "accept"),  # NF
        "s2__rotation": ("rotation", "reject"),  # UR
    }
    script = {}
    for c, (pos, negative) in outcomes.items():
        script[f"{c}::leading:positive"] = pos
        script[f"{c}::leading:negative"] = negative
    m = evaluate(tmp_path, data, "leading", Scripted(script), "run")
    assert (m["UR"], m["UF"], m["NR"], m["NF"]) == (2, 2, 1, 1)
    assert m["RA"] == pytest.approx(round(100 * 2 / 6, 2))
    assert m["MR"] == pytest.approx(50.0)
    assert m["premise_accepted_rate"] == pytest.approx(3 / 6, abs=1e-4)
    # per presupposed effect: rotation <- s1/s2 dropping + one original; dropping <- the rotations
    # + the other original
    orig_on = {presupposed["s1__original"]: "UR", presupposed["s2__original"]: "UF"}
    expect = {
        "rotation": ["UF", "NF", orig_on["rotation"]],
        "dropping": ["NR", "UR", orig_on["dropping"]],
    }
    for y, outs in expect.items():
        got = m["by_presupposed"][y]
        assert [got[k] for k in ("UR", "UF", "NR", "NF")] == [
            outs.count(k) for k in ("UR", "UF", "NR", "NF")
        ]
    assert m["cells"]["none"][presupposed["s1__original"]]["UR"] == 1
    assert m["by_clip_type"]["dropping"]["UF"] == 1 and m["by_clip_type"]["dropping"]["NF"] == 1
    assert m["chance"] == {"RA": round(100 / (3 * 4), 2), "MR": 75.0}


def test_leading_never_presupposes_a_confusable_effect() -> None:
    t = load_templates()
    assert t.confusable_with("masking") == {"partial_mask"}
    assert "substitution" in t.confusable_with("dropping")
    records = [
        clip(s, e)
        for s in ("a", "b", "c")
        for e in ("original", "masking", "partial_mask", "rotation", "flip")
    ]
    samples = [
        Sample(
            id=r["id"],
            benchmark="tamper",
            question="q",
            options={"A": "Yes", "B": "No"},
            answer="A",
            tamper_type=r["tamper_type"],
            group=r["source_sha256"],
            window=Window(**r["window_output"]) if r["window_output"] else None,
            meta={"frames_output": 90},
        )
        for r in records
    ]
    ds = derive_task(Dataset("x", "tamper", samples), "leading")
    for s in ds.samples:
        if s.polarity == "negative":
            own = s.tamper_type
            assert s.category != own and s.category not in t.confusable_with(str(own)), s.id


# --------------------------------------------------------------------------- baselines


def balanced(n_sources: int, effects: Sequence[str]) -> list[dict[str, Any]]:
    return [clip(f"s{i}", e) for i in range(n_sources) for e in ("original", *effects)]


def balanced_when(n_sources: int) -> list[dict[str, Any]]:
    return [
        rec
        for i in range(n_sources)
        for rec in (
            clip(f"s{i}", "original"),
            clip(f"s{i}", "rotation", window=(0, 10), tag="@start"),
            clip(f"s{i}", "rotation", window=(40, 50), tag="@middle"),
            clip(f"s{i}", "rotation", window=(80, 90), tag="@end"),
        )
    ]


FIVE = ("dropping", "masking", "rotation", "substitution", "repetition")


def test_constant_baselines_score_their_analytic_values(tmp_path: Path) -> None:
    k = len(FIVE) + 1
    data = load(write_manifest(tmp_path / "type", balanced(12, FIVE)))
    none = score_directly(data, "type", ConstantModel("none"))
    assert none["accuracy"] == pytest.approx(1 / k)
    assert none["balanced_accuracy"] == pytest.approx(1 / k)
    assert none["macro_f1"] == pytest.approx(2 / (k * (k + 1)))  # F1(none) = 2/(k+1), others 0
    assert none["detection"]["f1"]["overall"] == 0.0  # never "Yes"
    assert none["degenerate"] == "always_none"
    rot = score_directly(data, "type", ConstantModel("rotation"))
    assert rot["accuracy"] == pytest.approx(1 / k)
    assert all(v == pytest.approx(2 / 3) for v in rot["detection"]["f1"].values())  # always "Yes"

    when = load(write_manifest(tmp_path / "when", balanced_when(12)))
    middle = score_directly(when, "when", ConstantModel("middle"))
    assert middle["accuracy"] == pytest.approx(1 / 4)
    assert middle["macro_f1"] == pytest.approx(2 / (4 * 5))
    assert middle["chance"]["accuracy"] == pytest.approx(1 / 4)

    lead = score_directly(data, "leading", ConstantModel("reject"))
    assert lead["negative_accuracy"] == 100.0 and lead["premise_accepted_rate"] == 0.0


def test_always_yes_detection_f1_on_an_unbalanced_set_is_reported_and_warned(
    tmp_path: Path,
) -> None:
    """Three positions beside one original per source: always "Yes" scores
    2t / (2t + o) = 6/7 (not the balanced 2/3), and the console says so."""
    from mmrobust.metrics.tamper import guess_f1
    from mmrobust.report.tables import summary_text

    assert guess_f1(3, 3) == pytest.approx(2 / 3)  # balanced: always Yes
    assert guess_f1(3, 1) == pytest.approx(6 / 7)
    assert guess_f1(5, 5, 5 / 6) == pytest.approx(2 * 5 / (3 * 5 + 1))  # uniform guess, K = 6
    assert guess_f1(0, 4) is None and guess_f1(3, 1, 0.0) is None

    data = load(write_manifest(tmp_path / "type", balanced_when(12)))  # 36 rotated, 12 originals
    rot = score_directly(data, "type", ConstantModel("rotation"))
    assert rot["detection"]["f1"]["overall"] == pytest.approx(6 / 7)
    assert rot["chance"]["always_yes_detection_f1"] == pytest.approx(6 / 7)
    k = len(rot["classes"])  # none, rotation
    q = (k - 1) / k
    assert rot["chance"]["detection_f1"] == pytest.approx(2 * 3 * q / (3 * (1 + q) + q))
    text = summary_text(rot)
    assert "always Yes 85.7)" in text
    assert "answering Yes to every clip scores F1 85.7 here (66.7 on a balanced set)" in text

    balanced_set = load(write_manifest(tmp_path / "bal", balanced(12, FIVE)))
    none = score_directly(balanced_set, "type", ConstantModel("none"))
    assert none["chance"]["always_yes_detection_f1"] == pytest.approx(2 / 3)
    assert "answering Yes to every clip" not in summary_text(none)  # balanced: no warning


@pytest.mark.parametrize(
    "model", [RandomModel(0), ConstantModel("A")], ids=["random", "constant-A"]
)
def test_letter_baselines_sit_at_chance_on_a_balanced_set(tmp_path: Path, model: Model) -> None:
    """``random`` and ``constant:A`` (a fixed letter over seeded option orders) are uniform
    guesses: their scores lie within 4 standard errors of the analytic chance values."""
    k = len(FIVE) + 1
    n_sources = 200
    data = load(write_manifest(tmp_path / "type", balanced(n_sources, FIVE)))
    n = n_sources * k
    m = score_directly(data, "type", model)
    se = math.sqrt((1 / k) * (1 - 1 / k) / n)
    assert abs(m["accuracy"] - 1 / k) < 4 * se
    assert m["chance"]["accuracy"] == pytest.approx(1 / k)
    # derived detection: "Yes" with probability (k-1)/k -> F1 per type 2E/(3E+1)
    e = k - 1
    assert m["chance"]["detection_f1"] == pytest.approx(2 * e / (3 * e + 1))
    assert abs(m["detection"]["f1"]["overall"] - 2 * e / (3 * e + 1)) < 0.03

    when = load(write_manifest(tmp_path / "when", balanced_when(n_sources)))
    w = score_directly(when, "when", model)
    se4 = math.sqrt(0.25 * 0.75 / (4 * n_sources))
    assert abs(w["accuracy"] - 1 / 4) < 4 * se4

    lead = score_directly(data, "leading", model)
    assert lead["chance"] == {"RA": round(100 / (k * 4), 2), "MR": 75.0}
    ra_se = 100 * math.sqrt((1 / (4 * k)) * (1 - 1 / (4 * k)) / n)
    assert abs(lead["RA"] - 100 / (4 * k)) < 4 * ra_se
    pos_right = lead["UR"] + lead["UF"]
    mr_se = 100 * math.sqrt(0.75 * 0.25 / pos_right)
    assert abs(lead["MR"] - 75.0) < 4 * mr_se


def test_blind_overlap_is_the_text_only_floor_that_rejects_every_premise(tmp_path: Path) -> None:
    data = load(write_manifest(tmp_path / "set", balanced(2, FIVE)))
    m = score_directly(data, "leading", OverlapModel())
    assert m["negative_accuracy"] == 100.0 and m["MR"] == 0.0


# --------------------------------------------------------------------------- detector answers


def test_answer_from_detection_for_each_task() -> None:
    type_keys = {"A": "rotation", "B": "none", "C": "masking"}
    common = {"n_frames": 90, "fps": 30.0}
    assert answer_from_detection(type_keys, tampered=False, types=[], window=None, **common) == "B"
    assert (
        answer_from_detection(type_keys, tampered=True, types=["masking"], window=(1, 2), **common)
        == "C"
    )
    # the predicted type is not an option: the next ranked candidate that is
    assert (
        answer_from_detection(
            type_keys, tampered=True, types=["flip", "rotation"], window=(1, 2), **common
        )
        == "A"
    )
    assert (
        answer_from_detection(type_keys, tampered=True, types=["flip"], window=None, **common)
        is None
    )
    when_keys = {"A": "end", "B": "nowhere", "C": "beginning", "D": "middle"}
    assert (
        answer_from_detection(when_keys, tampered=True, types=["x"], window=(60, 70), **common)
        == "A"
    )
    assert answer_from_detection(when_keys, tampered=False, types=[], window=None, **common) == "B"
    lead = {"A": "rotation:2s", "B": "reject", "C": "rotation:0.5s", "D": "rotation:1s"}
    assert (
        answer_from_detection(lead, tampered=True, types=["masking"], window=(0, 30), **common)
        == "B"
    )
    assert (
        answer_from_detection(lead, tampered=True, types=["rotation"], window=(0, 30), **common)
        == "D"
    )  # it sees the presupposed effect for 1 s: it accepts the premise
    assert (
        answer_from_detection(lead, tampered=True, types=["rotation"], window=(0, 12), **common)
        == "C"
    )


# --------------------------------------------------------------------------- templates


def test_template_file_wording_and_validation() -> None:
    t = load_templates()
    assert t.wording("rotation").type == "Some frames are upside down"
    assert t.wording("rotation", {"degrees": 90}).type == "Some frames are turned on their side"
    assert t.wording("masking", {"box": [0, 0, 0.5, 0.5]}).type.startswith("Part of the picture")
    assert t.wording("speed", {"factor": 0.5}).type == "A segment plays slower than the rest"
    assert "(sparkle)" in t.wording("sparkle").type  # an effect the file does not know
    assert set(t.effects) >= set(FIVE) | {
        "noise",
        "shuffle",
        "blur",
        "flip",
        "speed",
        "partial_mask",
    }
    for effect in t.effects.values():
        assert effect.source
    broken = json.loads(
        (Path(__file__).parents[1] / "src/mmrobust/data/tasks/questions.json").read_text()
    )
    broken["effects"]["rotation"]["premise"] = "The frames are upside down."
    with pytest.raises(ValueError, match=r"effects\.rotation.*part"):
        parse_templates(json.dumps(broken).encode())


# --------------------------------------------------------------------------- keys and CLI


def test_run_key_separates_tasks_and_a_task_never_resumes_another(tmp_path: Path) -> None:
    model = ConstantModel("A")
    cfg = EvalConfig(data="x", model="constant:A", out="y")
    keys = {
        t: run_key(model, cfg.prompt_config(), cfg.policy(), text_only=True, task=t)
        for t in ("detect", "type", "when", "leading")
    }
    assert len(set(keys.values())) == 4
    assert keys["detect"] == run_key(model, cfg.prompt_config(), cfg.policy(), text_only=True)

    data = write_manifest(tmp_path / "set", TYPE_SET)
    evaluate(tmp_path, data, "detect", ConstantModel("A"), "run")
    with pytest.raises(RunConflictError, match="task 'detect'"):
        evaluate(tmp_path, data, "type", ConstantModel("A"), "run")


def test_eval_cli_task_options(tmp_path: Path) -> None:
    data = write_manifest(tmp_path / "set", TYPE_SET)
    runner = CliRunner()
    base = ["eval", "--data", str(data), "--model", "constant:none", "--text-only"]
    ok = runner.invoke(app, [*base, "--task", "type", "--out", str(tmp_path / "r")])
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "r" / "run.json").read_text())["config"]["task"] == "type"
    assert "constant:none on set --task type (text only)" in ok.output  # the progress bar
    for extra, message in [
        (["--task", "kind"], "unknown task 'kind'"),
        (["--task", "type", "--official"], "--official reproduces"),
        (["--task", "when", "--prompt", "cot"], "--prompt cot applies to --task detect only"),
        (["--task", "type", "--data", "mmr-demo"], "is a mmr dataset"),
    ]:
        res = runner.invoke(app, [*base, *extra, "--out", str(tmp_path / "bad")])
        assert res.exit_code == 2, res.output
        assert message in res.output
    assert not (tmp_path / "bad").exists()
    res = runner.invoke(app, ["rescore", str(tmp_path / "r"), "--extract", "official"])
    assert res.exit_code == 2 and "a --task type run has no reference" in res.output


def test_a_store_from_before_the_prompt_column_still_reads_and_resumes(tmp_path: Path) -> None:
    import sqlite3

    data = write_manifest(tmp_path / "set", TYPE_SET)
    evaluate(tmp_path, data, "detect", ConstantModel("A"), "run")
    db_path = tmp_path / "run" / "results.sqlite"
    with sqlite3.connect(db_path) as db:  # rebuild the table as the old schema had it
        db.execute("ALTER TABLE results DROP COLUMN prompt")
    with ResultStore(db_path, readonly=True) as old:
        rows = old.rows()
        assert len(rows) == 8 and {r.prompt for r in rows} == {None}
    again = evaluate(tmp_path, data, "detect", ConstantModel("A"), "run")  # resumes, adds column
    assert again["n_samples"] == 8
    with sqlite3.connect(db_path) as db:
        assert "prompt" in {r[1] for r in db.execute("PRAGMA table_info(results)")}


# --------------------------------------------------------------------------- issue 28 replies
TYPE_OPTS = {
    "A": "None: the video is not tampered",
    "B": "Some frames are missing",
    "C": "Some frames are black",
    "D": "Some frames are upside down",
    "E": "Some frames come from a different video",
    "F": "A segment plays twice",
}
WHEN_OPTS = {
    "A": "The beginning (first third)",
    "B": "The middle (second third)",
    "C": "The end (last third)",
    "D": "None: the video is not tampered",
}
LEADING_OPTS = {"A": "About half a second", "B": "About one second", "C": "About two seconds",
                "D": "No frame in this video is upside down"}  # fmt: skip

# (options, reply, lenient, official-free strict); None is parse_fail
TASK_REPLIES: list[tuple[dict[str, str], str, str | None, str | None]] = [
    (TYPE_OPTS, "<think>\nOption B fits, but the black frames say C.\n</think>\n\nC", "C", "C"),
    (TYPE_OPTS, "Option B fits, but the black frames say C.\n</think>\nC", "C", "C"),
    (TYPE_OPTS, "<think>\nOption B fits, but the black", None, None),
    (TYPE_OPTS, "B or C", None, None),
    (TYPE_OPTS, "C, E", None, None),
    (TYPE_OPTS, "N/A", None, None),
    (TYPE_OPTS, "None", "A", None),  # the label of "None: the video is not tampered"
    (TYPE_OPTS, "A segment plays twice", "F", None),  # option text, not the letter A
    (TYPE_OPTS, "The answer is B. On second thought the frames are black, so C.", "C", "B"),
    (TYPE_OPTS, "Ｅ", "E", "E"),
    (WHEN_OPTS, "<think>\nA black frame near the start... or B?\n</think>\nAnswer: A", "A", "A"),
    (WHEN_OPTS, "A or B", None, None),
    (WHEN_OPTS, "I think B, but it could be C.", None, None),
    (WHEN_OPTS, "（Ｃ）", "C", "C"),
    (LEADING_OPTS, "<think>\nIf it were upside down it would last B... it is not.\n</think>\nD",
     "D", "D"),
    (LEADING_OPTS, "B or D", None, None),
    (LEADING_OPTS, "The answer is B. However, no frame is upside down, so D.", "D", "B"),
    (LEADING_OPTS, "<think>\nAbout one second, so B", None, None),
]  # fmt: skip


@pytest.mark.parametrize(("options", "reply", "lenient", "strict"), TASK_REPLIES)
def test_task_replies_of_reasoning_models_hedges_and_look_alikes(
    options: dict[str, str], reply: str, lenient: str | None, strict: str | None
) -> None:
    for mode, expected in (("lenient", lenient), ("strict", strict)):
        got = extract(reply, options, mode=mode, benchmark="tamper-type")
        assert got.letter == expected, (mode, reply, got)
        assert got.status is (Status.OK if expected else Status.PARSE_FAIL)


def test_task_reply_with_separate_reasoning_field() -> None:
    got = extract("D", LEADING_OPTS, benchmark="tamper-leading", reasoning="B? A? no: D")
    assert (got.letter, got.rule) == ("D", "strict:lone-letter")
    got = extract("", WHEN_OPTS, benchmark="tamper-when", reasoning="Frames 1-3 look")
    assert (got.letter, got.rule) == (None, "reasoning:cut")

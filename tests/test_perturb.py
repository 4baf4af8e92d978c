"""``mmrobust perturb`` and the ``consistency`` family on mmr-demo's photos and the bundled
clips: deterministic builds, frame-exact video windows, and every figure against a hand count."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mmrobust.datasets.base import load_dataset
from mmrobust.media.image import read_image
from mmrobust.models.base import Model, Request, Response
from mmrobust.perturb import PerturbError, perturb
from mmrobust.perturb.image import IMAGE_EFFECTS, EffectContext, apply_image_effect
from mmrobust.perturb.plan import media_seed
from mmrobust.runner import EvalConfig, run_eval

EFFECTS = ",".join(IMAGE_EFFECTS)
LIMIT = 5  # page.jpg, motorcycle.jpg (two questions each) and astronaut.jpg (answer A)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def demo_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("perturbed") / "set"
    perturb("mmr-demo", EFFECTS, out, severities="1,3,5", limit=LIMIT, jobs=2)
    return out


@pytest.mark.slow
def test_every_image_effect_at_three_severities_builds_byte_identical(
    demo_set: Path, tmp_path: Path
) -> None:
    again = perturb("mmr-demo", EFFECTS, tmp_path / "b", severities="1,3,5", limit=LIMIT)
    first, second = _files(demo_set), _files(tmp_path / "b")
    assert first == second
    # hand count: 3 photos x (clean + 8 effects x 3 severities) + 5 questions x 3 overlays
    assert sum(k.startswith("media/") for k in first) == 3 * (1 + 8 * 3) + 5 * 3 == 90
    assert again.questions == 5 * (1 + 9 * 3) == 140 and again.built == 90
    manifest = _rows(demo_set / "perturb.jsonl")
    assert {(r["effect"], r["severity"]) for r in manifest} >= {("jpeg", 5), ("clean", 0)}
    typo = [r for r in manifest if r["effect"] == "typographic"]
    assert all(
        r["details"]["font"] == "DejaVuSans.ttf" and r["details"]["colour"] == [255, 0, 0]
        for r in typo
    )
    # a re-run keeps every file (resume) and changes nothing
    resumed = perturb("mmr-demo", EFFECTS, tmp_path / "b", severities="1,3,5", limit=LIMIT)
    assert (resumed.built, resumed.resumed) == (0, 90) and _files(tmp_path / "b") == second
    # another seed draws other noise
    other = perturb("mmr-demo", "gaussian_noise", tmp_path / "c", severities="3", seed=1, limit=1)
    assert other.built == 2
    noise = [k for k in _files(tmp_path / "c") if "gaussian_noise" in k]
    assert noise and noise[0] not in first


def test_bad_input_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(PerturbError, match="did you mean gaussian_blur"):
        perturb("mmr-demo", "gausian_blur", tmp_path / "x")
    with pytest.raises(PerturbError, match="1-5"):
        perturb("mmr-demo", "jpeg", tmp_path / "x", severities="0,6")
    assert not (tmp_path / "x").exists()


def _metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def _pairs(demo_set: Path) -> list[tuple[dict, dict]]:
    rows = _rows(demo_set / "questions.jsonl")
    clean = {r["id"]: r for r in rows if r["meta"]["effect"] == "clean"}
    return [(clean[r["meta"]["clean_id"]], r) for r in rows if r["meta"]["effect"] != "clean"]


def test_constant_a_never_flips_and_always_resists(demo_set: Path, tmp_path: Path) -> None:
    run_eval(
        EvalConfig(data=str(demo_set), model="constant:A", out=str(tmp_path / "a")), progress=False
    )
    m = _metrics(tmp_path / "a")
    pairs = _pairs(demo_set)
    right = sum(c["answer"] == "A" for c, _ in pairs)
    assert m["benchmark"] == "consistency" and m["pairs"] == len(pairs) == 135
    assert m["flip_rate"] == 0.0 and m["flips"] == 0
    assert m["clean_right"] == right > 0 and m["resist_rate"] == 1.0
    assert m["accuracy_perturbed"] == sum(p["answer"] == "A" for _, p in pairs) / 135
    assert m["per_effect"]["jpeg"]["per_severity"]["5"]["pairs"] == 5
    assert set(m["per_effect"]) == set(IMAGE_EFFECTS)


def _random_letter(sample_id: str, options: Sequence[str], seed: int = 0) -> str:
    """random:<seed>'s rule, counted independently."""
    digest = hashlib.sha256(f"{seed}\0{sample_id}".encode()).digest()
    return list(options)[int.from_bytes(digest[:8], "big") % len(options)]


def test_random_flips_about_three_quarters_as_counted_by_hand(
    demo_set: Path, tmp_path: Path
) -> None:
    run_eval(
        EvalConfig(data=str(demo_set), model="random:0", out=str(tmp_path / "r")), progress=False
    )
    m = _metrics(tmp_path / "r")
    pairs = _pairs(demo_set)
    said = {r["id"]: _random_letter(r["id"], r["options"]) for pair in pairs for r in pair}
    flips = sum(said[c["id"]] != said[p["id"]] for c, p in pairs)
    clean_right = sum(said[c["id"]] == c["answer"] for c, _ in pairs)
    both = sum(said[c["id"]] == c["answer"] == said[p["id"]] for c, p in pairs)
    pert_right = sum(said[p["id"]] == p["answer"] for _, p in pairs)
    assert m["flips"] == flips and m["flip_rate"] == flips / 135
    assert m["resist_rate"] == (both / clean_right if clean_right else None)
    assert m["accuracy_drop"] == (clean_right - pert_right) / 135
    low, high = m["flip_rate_ci"]
    assert low <= 0.75 <= high and m["chance"]["random"]["flip_rate"] == 0.75
    mc = m["mcnemar"]
    assert mc["clean_only"] + mc["both_correct"] == clean_right
    assert mc["perturbed_only"] + mc["both_correct"] == pert_right


class OverlayReader(Model):
    """Answers the option whose text is written on the image, found by re-drawing every
    option at every severity onto the clean photo and matching the pixels; else ``A``."""

    media_input = "path"
    name = "overlay-reader"

    def __init__(self, sources: Sequence[tuple[str, np.ndarray]]) -> None:
        self.sources = sources

    def _read(self, req: Request) -> str:
        shown = read_image(req.image) if req.image else None
        for sha, clean in self.sources:
            if shown is None or shown.shape != clean.shape:
                continue
            for letter, text in req.options.items():
                for severity in range(1, 6):
                    seed = media_seed(0, sha, "typographic", severity, text, None, {})
                    ctx = EffectContext(rng=np.random.default_rng(seed), text=text)
                    drawn, _ = apply_image_effect("typographic", clean, severity, ctx)
                    if np.array_equal(drawn, shown):
                        return letter
        return "A"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(text=self._read(r)) for r in requests]


@pytest.mark.slow
def test_an_overlay_reading_model_scores_attack_success_100(demo_set: Path, tmp_path: Path) -> None:
    from mmrobust.tamper.manifest import sha256_file

    demo = load_dataset("mmr-demo")
    photos = {s.image for s in demo.samples[:LIMIT]}
    sources = [(sha256_file(p), read_image(p)) for p in sorted(photos)]
    cfg = EvalConfig(
        data=str(demo_set), model="overlay-reader", out=str(tmp_path / "o"), n_resamples=0
    )
    run_eval(cfg, progress=False, model=OverlayReader(sources))
    m = _metrics(tmp_path / "o")
    typo = m["per_effect"]["typographic"]
    assert typo["attack_pairs"] == 15 and typo["attack_success_rate"] == 1.0
    assert m["attack_success_rate"] == 1.0 and m["per_effect"]["jpeg"]["flip_rate"] == 0.0
    # hand count: the 15 typographic pairs flip from A unless the overlaid option is A
    overlays = [
        p["meta"]["overlay_option"]
        for _, p in _pairs(demo_set)
        if p["meta"]["effect"] == "typographic"
    ]
    assert typo["flips"] == sum(o != "A" for o in overlays) and m["flips"] == typo["flips"]


def test_video_effects_and_reverse_build_frame_exact(
    real_clips: dict[str, Path], tmp_path: Path
) -> None:
    from mmrobust.media.decode import iter_frames

    clip = min(real_clips.values(), key=lambda p: p.stat().st_size)
    data = tmp_path / "q.jsonl"
    data.write_text(
        json.dumps(
            {
                "id": "v1",
                "video": str(clip),
                "question": "Is it moving?",
                "options": ["Yes", "No"],
                "answer": "Yes",
            }
        )
        + "\n"
    )
    args = ("reverse,frame_rate,masking", tmp_path / "p")
    perturb(data, *args, severities="5")
    perturb(data, args[0], tmp_path / "p2", severities="5")
    assert _files(tmp_path / "p") == _files(tmp_path / "p2")
    rows = {r["effect"]: r for r in _rows(tmp_path / "p" / "perturb.jsonl")}
    clean = list(iter_frames(tmp_path / "p" / rows["clean"]["media"], max_side=64))
    rev = list(iter_frames(tmp_path / "p" / rows["reverse"]["media"], max_side=64))
    n = len(clean)
    assert len(rev) == n and rows["reverse"]["details"]["window_source"]["end_frame"] == n
    # reversed playback: output frame i is clean frame n-1-i (encoding noise only)
    err = [np.abs(rev[i].astype(int) - clean[n - 1 - i].astype(int)).mean() for i in (0, n // 2)]
    assert max(err) < 4 < np.abs(rev[0].astype(int) - clean[0].astype(int)).mean()
    fr = rows["frame_rate"]["details"]
    assert fr["frames_out"] == len(range(0, n, 8)) and fr["fps_out"] == str(
        __import__("fractions").Fraction(fr["fps_in"]) / 8
    )
    w = rows["masking"]["details"]["window_source"]
    masked = list(iter_frames(tmp_path / "p" / rows["masking"]["media"], max_side=64))
    dark = [i for i, f in enumerate(masked) if f.mean() < 20]
    assert dark == list(range(w["start_frame"], w["end_frame"]))
    run_eval(
        EvalConfig(
            data=str(tmp_path / "p"), model="constant:A", out=str(tmp_path / "r"), n_resamples=0
        ),
        progress=False,
    )
    m = _metrics(tmp_path / "r")
    assert m["pairs"] == 3 and m["flip_rate"] == 0.0 and m["resist_rate"] == 1.0


def _short_clip(real_clips: dict[str, Path], tmp_path: Path, n: int = 20) -> Path:
    """The first ``n`` frames of carphone_pristine (176x144) as a 25 fps clip, and its question."""
    from fractions import Fraction
    from itertools import islice

    from mmrobust.media.decode import iter_frames
    from mmrobust.media.writer import VideoWriter

    frames = list(islice(iter_frames(real_clips["carphone_pristine"]), n))
    clip = tmp_path / "short.mp4"
    with VideoWriter(clip, Fraction(25), frames[0].shape[1], frames[0].shape[0]) as writer:
        for f in frames:
            writer.write(f)
    data = tmp_path / "q.jsonl"
    row = {"id": "v1", "video": str(clip), "question": "A man?", "options": ["Yes", "No"]}
    data.write_text(json.dumps({**row, "answer": "Yes"}) + "\n")
    return data


def test_image_effects_apply_to_a_window_or_the_whole_clip_frame_exact(
    real_clips: dict[str, Path], tmp_path: Path
) -> None:
    from mmrobust.media.decode import iter_frames

    data = _short_clip(real_clips, tmp_path)
    perturb(data, "gaussian_noise,box_mask", tmp_path / "p", severities="1,5")
    perturb(data, "gaussian_noise,box_mask", tmp_path / "p2", severities="1,5")
    assert _files(tmp_path / "p") == _files(tmp_path / "p2")  # seeded per clip
    perturb(data, "box_mask", tmp_path / "w", severities="1", span="whole")
    rows = _rows(tmp_path / "p" / "perturb.jsonl") + _rows(tmp_path / "w" / "perturb.jsonl")
    got = {(r["effect"], r["severity"], r["details"].get("span")): r for r in rows}

    def frames(r: dict) -> list[np.ndarray]:
        root = tmp_path / ("w" if r["details"].get("span") == "whole" else "p")
        return list(iter_frames(root / r["media"]))

    clean = frames(got[("clean", 0, None)])
    assert len(clean) == 20
    # hand count: window share 0.1 of 20 frames = 2, centred at [9, 11); 0.6 = 12 at [4, 16)
    windows = {1: range(9, 11), 5: range(4, 16)}
    for (effect, severity, span), r in got.items():
        if effect == "clean":
            continue
        d = r["details"]
        touched = range(0, 20) if span == "whole" else windows[severity]
        assert (d["window_source"]["start_frame"], d["window_source"]["end_frame"]) == (
            touched.start,
            touched.stop,
        )
        assert d["frames_touched"] == len(touched) and d["frames_out"] == 20
        assert d["effect_params"]["value"] == IMAGE_EFFECTS[effect].value(severity)
        out = frames(r)
        if effect == "box_mask":  # the same box on every frame touched, and only there
            x0, y0, x1, y1 = d["effect_params"]["region"]
            assert min(f[y0:y1, x0:x1].mean() for f in clean) > 50
            dark = [i for i, f in enumerate(out) if f[y0:y1, x0:x1].mean() < 5]
            assert dark == list(touched)
        else:  # fresh noise on each frame of the window, the rest as clean (codec only)
            diff = [
                np.abs(a.astype(int) - b.astype(int)).mean()
                for a, b in zip(out, clean, strict=True)
            ]
            assert [i for i, e in enumerate(diff) if e > 8] == list(touched)
            assert not np.array_equal(out[touched[0]], out[touched[1]])
    assert {span for _, _, span in got} == {None, "window", "whole"}
    assert json.loads((tmp_path / "w" / "perturb.json").read_text())["span"] == "whole"
    with pytest.raises(PerturbError, match="leaves no frame"):
        perturb(data, "dropping", tmp_path / "d", span="whole")
    with pytest.raises(PerturbError, match="--span"):
        perturb(data, "box_mask", tmp_path / "d", span="middle")
    assert not (tmp_path / "d").exists()


def test_report_and_card_show_the_numbers_of_metrics_json(demo_set: Path, tmp_path: Path) -> None:
    from mmrobust.report.site import build_site

    for model in ("constant:A", "random:0"):
        run_eval(
            EvalConfig(
                data=str(demo_set), model=model, out=str(tmp_path / model[:4]), n_resamples=50
            ),
            progress=False,
        )
    build_site([tmp_path / "cons", tmp_path / "rand"], tmp_path / "rep", max_thumbs=0)
    md = (tmp_path / "rep" / "report.md").read_text()
    m = _metrics(tmp_path / "rand")
    row = next(line for line in md.splitlines() if line.startswith("| random:0 | 135 |"))
    assert f"| {100 * m['flip_rate']:.1f} | {100 * m['resist_rate']:.1f} |" in row
    assert (tmp_path / "rep" / "consistency_set.png").stat().st_size > 1000
    card = json.loads((tmp_path / "rep" / "cards" / "random-0.json").read_text())
    rows = {r["effect"]: r for r in card["consistency"]}
    assert rows["all"]["flip_rate"] == 100 * m["flip_rate"]
    assert rows["typographic"]["attack_success_rate"] == 100 * m["attack_success_rate"]
    assert rows["all"]["chance"]["random: flip rate"] == 75.0
    index = (tmp_path / "rep" / "index.html").read_text()
    assert "typographic" in index
    # the leaderboard's rows link to the two cards; each model's per-effect table (rows are
    # effects, not models) has no card column
    assert index.count('<th class="cardlink">Robustness card</th>') == 1
    assert index.count('title="robustness card of ') == 2
    assert "Timeline under each clip" not in index  # photos only: no clip timeline to explain


def _tiny_set(tmp_path: Path) -> Path:
    """Two 48x64 photos (one corrupt file) and a text-only question."""
    from PIL import Image

    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)).save(tmp_path / "a.png")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    rows = [
        {
            "id": "a",
            "image": "a.png",
            "question": "q",
            "options": ["x", "y", "z"],
            "answer": "x",
            "meta": {"answer_box": [0, 0, 64, 24]},
        },
        {"id": "b", "image": "bad.png", "question": "q", "options": ["x", "y"], "answer": "y"},
        {"id": "t", "question": "q", "options": ["x", "y"], "answer": "y"},
    ]
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def test_a_bad_image_is_recorded_and_the_build_goes_on(tmp_path: Path) -> None:
    res = perturb(_tiny_set(tmp_path), "typographic,box_mask", tmp_path / "p", severities="2")
    assert (res.built, res.failed, res.skipped, res.questions) == (3, 3, 1, 6)
    errors = _rows(tmp_path / "p" / "errors.jsonl")
    assert {e["effect"] for e in errors} == {"clean", "typographic", "box_mask"}
    rows = {r["key"]: r for r in _rows(tmp_path / "p" / "perturb.jsonl") if "details" in r}
    # the answer's box (top half) is left uncovered by the overlay and the mask
    for r in rows.values():
        if r["effect"] != "clean":
            assert r["details"]["region"][1] >= 24, r
    run_eval(
        EvalConfig(
            data=str(tmp_path / "p"), model="constant:A", out=str(tmp_path / "r"), n_resamples=0
        ),
        progress=False,
    )
    m = _metrics(tmp_path / "r")
    assert m["status_counts"] == {"ok": 3, "data_error": 3} and m["pairs"] == 4
    # pair b: both failed (no flip, both wrong); pair a: both "A" = x, right
    assert m["flips"] == 0 and m["accuracy_clean"] == 0.5 and m["resist_rate"] == 1.0


def test_a_build_cut_short_resumes_from_its_progress_log(tmp_path: Path) -> None:
    data = _tiny_set(tmp_path)
    seen: list[int] = []

    def stop_after_two(done: int, total: int) -> None:
        seen.append(done)
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        perturb(
            data, "jpeg,tilt,contrast", tmp_path / "p", severities="1,2", progress=stop_after_two
        )
    assert not (tmp_path / "p" / "perturb.jsonl").exists()
    res = perturb(data, "jpeg,tilt,contrast", tmp_path / "p", severities="1,2")
    assert res.resumed >= 2 and res.built + res.resumed == 7 and res.failed == 7
    assert not (tmp_path / "p" / ".perturb-progress.jsonl").exists()
    perturb(data, "jpeg,tilt,contrast", tmp_path / "q", severities="1,2")
    assert _files(tmp_path / "p") == _files(tmp_path / "q")


def test_the_command_refuses_bad_input_with_one_line_and_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mmrobust.cli import app

    res = CliRunner().invoke(
        app, ["perturb", str(_tiny_set(tmp_path)), "--effects", "jpg", "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "did you mean jpeg" in res.output
    assert not (tmp_path / "o").exists()
    ok = CliRunner().invoke(
        app,
        [
            "perturb",
            str(tmp_path / "q.jsonl"),
            "--effects",
            "jpeg",
            "--severity",
            "5",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    # one photo of two is corrupt: the rest is built, the exit (1, as tamper) says so
    assert ok.exit_code == 1 and "4 questions, 2 files built" in ok.output
    assert "2 failed, 1 samples without media" in ok.output

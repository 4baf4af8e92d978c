"""Bad dataset files and bad tamper sources that used to crash a load or silently corrupt a
build (issue 17 items 7, 8, 9, 10, 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrobust.datasets import DatasetError, load_dataset
from mmrobust.runner import EvalConfig, run_eval

DEEP = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit
NESTED = '{"k": ' * 300 + "1" + "}" * 300  # parses, but no sample may hold it


def _good(i: int) -> dict[str, object]:
    return {"id": f"s{i}", "question": "q", "options": ["Yes", "No"], "answer": "Yes"}


# -- item 7: deeply nested JSON is a record defect (or a clear dataset error) ----------------


def test_deeply_nested_jsonl_records_are_defects_and_the_run_goes_on(tmp_path: Path) -> None:
    lines = [json.dumps(_good(0)), DEEP, json.dumps({**_good(2), "meta": {"x": 1}})]
    lines.append(json.dumps(_good(3))[:-1] + ', "extra": ' + NESTED + "}")
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(lines) + "\n")
    ds = load_dataset(data)
    assert [s.id for s in ds.samples] == ["s0", "s2"]
    assert len(ds.defects) == 2
    assert "d.jsonl:2: skipped" in ds.defects[0] and "nested too deeply" in ds.defects[0]
    assert "d.jsonl:4: skipped" in ds.defects[1] and "deeper than 64 levels" in ds.defects[1]
    res = run_eval(
        EvalConfig(data=str(data), model="constant:A", out=str(tmp_path / "run"), n_resamples=0),
        progress=False,
    )
    assert res.n_new == 2 and len(res.metrics["defects"]) == 2


def test_deeply_nested_json_in_every_format_never_raises_recursion_error(tmp_path: Path) -> None:
    array = tmp_path / "array.json"  # a JSON array file: the whole file is unreadable
    array.write_text("[" + json.dumps(_good(0)) + ", " + DEEP + "]")
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(array, "jsonl")

    manifest = tmp_path / "set"
    manifest.mkdir()
    (manifest / "manifest.jsonl").write_text(DEEP + "\n")
    (manifest / "errors.jsonl").write_text(DEEP + "\n")
    assert "nested too deeply" in load_dataset(manifest).defects[0]

    mvtb = tmp_path / "mvtb"
    (mvtb / "json").mkdir(parents=True)
    (mvtb / "json" / "task_a.json").write_text(DEEP)
    row = {"video": "v.mp4", "question": "q", "candidates": ["Yes", "No"], "answer": "No"}
    (mvtb / "json" / "task_b.json").write_text(json.dumps([{**row, "x": json.loads(NESTED)}]))
    defects = load_dataset(mvtb, text_only=True).defects
    assert "task_a.json: unreadable" in defects[0] and "nested too deeply" in defects[0]
    assert "task_b.json[0]: skipped" in defects[1] and "deeper than 64" in defects[1]

    mmr = tmp_path / "MMR-benchmark.json"
    mmr.write_text("[" + DEEP + "]")
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(mmr, "mmr")


# -- item 8: MMR questions that are not 4-option questions are defects -----------------------


def test_mmr_fifth_option_and_repeated_d_are_defects_not_merged(tmp_path: Path) -> None:
    def pair(pid: str, question: str) -> list[dict[str, str]]:
        return [
            {
                "id": pid,
                "image": "x.jpg",
                "question": question,
                "ground_truth": "A",
                "question_type": qt,
            }
            for qt in ("POS", "NEG")
        ]

    records = pair("attribute/color&texture/01", "What colour?\nA. red\nB. blue\nC. green\nD. grey")
    records += pair("attribute/color&texture/02", "What colour?\nA. a\nB. b\nC. c\nD. d\nE. e")
    records += pair("attribute/shape/01", "Which shape?\nA. a\nB. b\nC. c\nD. d\nD. round")
    records += pair("attribute/shape/02", "Which shape? A. a B. b C. c D. d E. square")
    path = tmp_path / "MMR-benchmark.json"
    path.write_text(json.dumps(records))
    ds = load_dataset(path, text_only=True)
    ok = [s for s in ds.samples if not s.error]
    assert {s.group for s in ok} == {"attribute/color&texture/01"}
    assert ok[0].options == {"A": "red", "B": "blue", "C": "green", "D": "grey"}
    bad = {s.id: s.error for s in ds.samples if s.error}
    assert len(bad) == 6 and all("not a 4-option question" in e for e in bad.values())
    joined = "\n".join(ds.defects)
    assert "attribute/color&texture/02#pos: not a 4-option question: option E" in joined
    assert "attribute/shape/01#neg: not a 4-option question: option D given twice" in joined
    assert "attribute/shape/02#pos: not a 4-option question: option E" in joined


# -- item 9: a donor corrupt in its middle is checked before it is used ---------------------


def _corrupt_middle(src: Path, dst: Path) -> Path:
    """``src`` with 20 kB zeroed at 10%, 20%, ... 80% of the file: demuxes whole, and no
    window of it decodes (a donor is decoded from the keyframe before its window since issue 32,
    so one damaged spot early in the file no longer reaches the frames a window takes)."""
    data = bytearray(src.read_bytes())
    for tenth in range(1, 9):
        start = len(data) * tenth // 10
        data[start : start + 20_000] = bytes(20_000)
    dst.write_bytes(bytes(data))
    return dst


@pytest.mark.slow
def test_a_bad_donor_is_reported_once_and_good_sources_keep_substitution(
    real_clips: dict[str, Path], tmp_path: Path
) -> None:
    from mmrobust.schema.window import source_window
    from mmrobust.tamper import BuildConfig, build
    from mmrobust.tamper.effects import make_effect
    from mmrobust.tamper.plan import plan_sources

    bad = _corrupt_middle(real_clips["bikes"], tmp_path / "bad_donor.mp4")
    sources = [real_clips["carphone_pristine"], real_clips["carphone_distorted"]]
    donors = (bad, real_clips["bikes"])
    effects = (make_effect("substitution"),)
    # a seed for which both sources draw the bad donor first (the draw is seeded)
    for seed in range(64):
        config = BuildConfig(effects=effects, donors=donors, seed=seed, preset="ultrafast")
        plans, pool, errors = plan_sources(sources, config)
        assert not errors and len(pool) == 2  # the bad donor demuxes fine: probing cannot tell
        from mmrobust.tamper.plan import choose_donor

        n = [source_window(p.info.frame_count, p.info.fps, duration=1.0).n_frames for p in plans]
        if all(
            choose_donor(p, k, pool, seed)[0].path == bad for p, k in zip(plans, n, strict=True)
        ):
            break
    else:  # pragma: no cover - 64 seeds, each 1/4
        pytest.fail("no seed draws the bad donor for both sources")
    report = build(sources, tmp_path / "out", config)
    subs = [e for e in report.entries if e.tamper_type == "substitution"]
    assert len(subs) == 2 and {e.donor.source for e in subs if e.donor} == {
        str(real_clips["bikes"])
    }
    assert [(e.source, e.variant) for e in report.errors] == [(str(bad), "substitution")]
    assert "donor unusable" in report.errors[0].reason
    lines = (tmp_path / "out" / "errors.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["source"] == str(bad)


# -- item 10: an unreadable sub-folder is an error, not a silent gap ------------------------


def test_unreadable_subfolder_is_reported_in_errors_jsonl(
    real_clips: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import shutil

    from mmrobust.tamper.sources import discover_sources

    tree = tmp_path / "videos"
    (tree / "ok").mkdir(parents=True)
    (tree / "locked").mkdir()
    shutil.copy(real_clips["carphone_distorted"], tree / "ok" / "a.mp4")
    shutil.copy(real_clips["carphone_distorted"], tree / "locked" / "b.mp4")
    real_scandir = os.scandir

    def scandir(path: object = ".") -> object:  # EACCES as for a chmod 000 folder (we are root)
        if str(path).rstrip("/").endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    files, errors = discover_sources([tree])
    assert [f.name for f in files] == ["a.mp4"]
    assert [(e.source, e.reason) for e in errors] == [
        (str(tree / "locked"), "cannot read folder: Permission denied")
    ]
    from mmrobust.tamper import build

    report = build([tree], tmp_path / "out")
    rows = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    locked = [r for r in rows if r["source"] == str(tree / "locked")]
    assert len(locked) == 1 and "Permission denied" in locked[0]["reason"] and report.entries


# -- item 12: `tamper --jobs 2` killed leaves no worker running -----------------------------


def _children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_killed_tamper_jobs_leaves_no_worker_running(
    real_clips: dict[str, Path], tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "mmrobust.cli", "tamper", *map(str, real_clips.values())]
    cmd += ["--out", str(tmp_path / "out"), "--jobs", "2", "-q", "--preset", "ultrafast"]
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and parent.poll() is None:
            workers = {w for w in _children(parent.pid) if "spawn_main" in _cmdline(w)}
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2, "the workers never started"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        gone_by = time.monotonic() + 60  # a condition: a busy machine is slower to notice
        while time.monotonic() < gone_by and any(_alive(w) for w in workers):
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "workers outlived their parent"
    finally:
        for w in workers:  # never leave a process behind, whatever the outcome
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""

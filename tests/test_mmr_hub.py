"""``--data hf:BAAI/Multimodal-Robustness-Benchmark`` (issue 30), offline from a hub cache laid
out as huggingface_hub lays it out (``tests.test_hub.populate_hub_cache``).

The snapshot has the paper's layout (arXiv:2406.10638 appendix: ``MMR-benchmark/MMR-benchmark.json``
and ``MMR-data/MMR-data.json``): the benchmark's folder holds the released annotation file
(the team's copy in ``../shared``, sha256 e55290e6...) and an image zip; the loader reads
``MMR-benchmark/`` (never the training set), unzips the images once through
``datasets/unzip.py`` and checks the file against the pinned sha256.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets import load_dataset
from mmrobust.datasets.hub import MMR_RELEASE, with_revision
from mmrobust.datasets.hub import MMR_SHA256 as RELEASED_SHA256
from tests.shared_data import MMR_JSON as SHARED
from tests.shared_data import shared_file
from tests.test_hub import populate_hub_cache

COMMIT = "b" * 40


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.fixture()
def mmr_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import huggingface_hub.constants as c

    shared_file(SHARED)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "mm"))
    records = json.loads(SHARED.read_bytes())
    first = records[0]["image"]  # "<level>/<category>/<NN>.jpg"
    files = {
        "MMR-benchmark/MMR-benchmark.json": SHARED.read_bytes(),
        "MMR-benchmark/MMR-benchmark-images.zip": _zip({f"MMR-benchmark-images/{first}": b"jpg"}),
        "MMR-data/MMR-data.json": b"[]",  # the training set: never read
        "README.md": b"# MMR\n",
    }
    cache = tmp_path / "hf"
    populate_hub_cache(cache, MMR_RELEASE, files, COMMIT)
    return cache


def test_hub_mmr_loads_the_benchmark_folder_and_unzips_once(
    mmr_hub: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mmrobust")
    ds = load_dataset(f"hf:{MMR_RELEASE}@{COMMIT}", hub_cache=mmr_hub)
    assert ds.benchmark == "mmr" and len(ds.samples) == 600  # 300 pairs, 2 questions each
    assert ds.data_hash == RELEASED_SHA256
    assert ds.source == f"hf:{MMR_RELEASE}@{COMMIT}"
    assert ds.info["hub"]["commit"] == COMMIT and ds.info["hub"]["revision"] == COMMIT
    assert "MMR-benchmark.json is the pinned release (sha256 e55290e603f4...)" in caplog.text
    with_image = [s for s in ds.samples if s.error is None]
    assert len(with_image) == 2  # the pair of the one image in the zip
    image = with_image[0].image
    assert image is not None and image.read_bytes() == b"jpg"
    unzipped = tmp_path / "mm" / "unzipped"
    assert image.is_relative_to(unzipped)
    (marker,) = unzipped.glob("mmr-MMR-benchmark-images-*/.mmrobust-unzipped/*.json")
    stamp = marker.stat().st_mtime_ns
    again = load_dataset(f"hf:{MMR_RELEASE}", hub_cache=mmr_hub)  # refs/main -> the same commit
    assert again.data_hash == RELEASED_SHA256 and marker.stat().st_mtime_ns == stamp  # once


def test_another_revision_is_named_and_not_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import huggingface_hub.constants as c

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "mm"))
    records = [
        {"id": "x/y/01", "image": "x/y/01.jpg", "question_type": t, "ground_truth": gt,
         "question": "What?\nA. a\nB. b\nC. c\nD. d"}
        for t, gt in (("POS", "A"), ("NEG", "B"))
    ]  # fmt: skip
    files = {"MMR-benchmark/MMR-benchmark.json": json.dumps(records).encode()}
    populate_hub_cache(tmp_path / "hf", MMR_RELEASE, files, COMMIT)
    caplog.set_level(logging.INFO, logger="mmrobust")
    ds = load_dataset(f"hf:{MMR_RELEASE}", hub_cache=tmp_path / "hf", text_only=True)
    assert len(ds.samples) == 2 and ds.data_hash != RELEASED_SHA256
    assert "not the pinned release's e55290e603f4" in caplog.text


def test_revision_option(mmr_hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert with_revision(f"hf:{MMR_RELEASE}", "v2") == f"hf:{MMR_RELEASE}@v2"
    assert with_revision("mmr-demo", None) == "mmr-demo"
    with pytest.raises(ValueError, match="--revision v2 is for hf: data"):
        with_revision("mmr-demo", "v2")
    with pytest.raises(ValueError, match="already names revision 'v1'"):
        with_revision(f"hf:{MMR_RELEASE}@v1", "v2")
    import huggingface_hub.constants as c

    monkeypatch.setenv("HF_HUB_CACHE", str(mmr_hub))
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(mmr_hub))  # read at import
    out = tmp_path / "run"
    args = ["eval", "--data", f"hf:{MMR_RELEASE}", "--revision", COMMIT, "--model", "constant:A"]
    result = CliRunner().invoke(
        app, [*args, "--out", str(out), "--text-only", "--bootstrap", "0", "-q"]
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["UR"], metrics["UF"], metrics["NR"], metrics["NF"]) == (20, 56, 54, 170)
    info = json.loads((out / "run.json").read_text())
    assert info["dataset"]["source"] == f"hf:{MMR_RELEASE}@{COMMIT}"
    assert info["dataset"]["data_hash"] == RELEASED_SHA256

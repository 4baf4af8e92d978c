"""Every VLM family users evaluate first, through ``mmrobust eval --model hf:<folder>``.

Tiny random checkpoints are built in the session from each family's real config,
image processor, video processor and a chat template like the released model's
(``tests/hf_families.py``; no download). Each family runs on a tamper set built here
from two real clips (``bikes``: 250 frames at 25 fps; ``carphone_pristine``: 120
frames at 30000/1001 fps; originals plus ``dropping``) with ``video_input=images``
and, where the family has a video processor, ``video_input=video``, and on the
built-in MMR demo set. The processor calls are observed (a spy around the
processor inside ``HFModel._inputs``), so the tests assert what reaches the model:

* the frames handed to the processor are the frames decoded here independently with
  PyAV at the VLMEvalKit segment-centre indices written out by hand, in time order
  (each within 2 grey levels of its own, the JPEG q95 round trip of the frame cache,
  and nearest to it), and the model's input tensors are what the processor makes of
  exactly those frames (reversed frames give different tensors);
* with ``video_input=video``, the metadata is the clip's true timing (fps, the
  sampled indices, 250 frames, 10 s) with ``do_sample_frames=False``, and the
  processors turn it into the true times: Qwen2.5-VL ``second_per_grid_ts`` 2.5 s,
  Qwen3-VL ``<1.2 seconds> ... <8.7 seconds>``, SmolVLM2 ``Frame from 00:00 ...
  00:09`` in a ``0:00:10`` video;
* Gemma 3 prompts start with one ``<bos>``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.hf_families import FAMILIES
from tests.runs import stored_rows

pytest.importorskip("transformers")  # torchvision comes with it in the test extra: no skip

pytestmark = pytest.mark.slow

# VLMEvalKit's segment centres (8 frames), worked out by hand from
# int(seg / 2 + round(seg * i)), seg = (n - 1) / 8; round is half-to-even.
BIKES_IDX = [15, 46, 77, 108, 139, 171, 202, 233]  # n = 250, seg = 31.125; round(124.5) = 124
CARPHONE_IDX = [7, 22, 37, 52, 67, 81, 96, 111]  # n = 120, seg = 14.875
EXPECTED_IDX = {"bikes__original": BIKES_IDX, "carphone_pristine__original": CARPHONE_IDX}
CLIPS = {"bikes__original": "videos/bikes/original.mp4"}
CLIPS["carphone_pristine__original"] = "videos/carphone_pristine/original.mp4"
BIKES_METADATA = {
    "total_num_frames": 250,
    "fps": 25.0,
    "duration": 10.0,
    "frames_indices": BIKES_IDX,
}


ANSWERED = ("ok", "parse_fail", "empty_reply")
"""The model ran: random weights answer noise, sometimes only special tokens (an empty reply)."""


@dataclass
class Call:
    """One processor call made by ``HFModel`` and what it returned."""

    sample_ids: list[str]
    kwargs: dict[str, Any]
    inputs: Any
    processor: Any


@dataclass
class Spy:
    calls: list[Call] = field(default_factory=list)

    def for_sample(self, sample_id: str) -> Call:
        found = [c for c in self.calls if sample_id in c.sample_ids]
        assert found, f"{sample_id} never reached the processor"
        return found[-1]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    """Record every processor call of ``HFModel._inputs`` (kwargs and outputs)."""
    from mmrobust.models.hf import HFModel

    record = Spy()
    original = HFModel._inputs

    def observed(self: Any, chunk: list[Any]) -> Any:
        real = self.processor
        seen: list[dict[str, Any]] = []

        class Proxy:
            def __call__(self, **kwargs: Any) -> Any:
                seen.append(kwargs)
                return real(**kwargs)

            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

        self.processor = Proxy()
        try:
            inputs, frames = original(self, chunk)
        finally:
            self.processor = real
        record.calls.append(Call([r.sample_id for r in chunk], seen[0], inputs, real))
        return inputs, frames

    monkeypatch.setattr(HFModel, "_inputs", observed)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return record


def _eval(data: str, checkpoint: Path, out: Path, cache: Path, *extra: str) -> Any:
    args = ["eval", "--data", data, "--model", f"hf:{checkpoint}", "--out", str(out)]
    args += ["--model-arg", "device=cpu", "--model-arg", "max_new_tokens=2"]
    args += ["--cache-dir", str(cache), "--bootstrap", "0", "-q", *extra]
    return CliRunner().invoke(app, args)


def _decoded(path: Path, indices: list[int]) -> list[np.ndarray]:
    """Frames at ``indices`` decoded with PyAV directly, ``(H, W, 3) uint8 RGB``."""
    import av

    wanted = set(indices)
    frames: dict[int, np.ndarray] = {}
    with av.open(str(path)) as container:
        for i, frame in enumerate(container.decode(video=0)):
            if i in wanted:
                frames[i] = frame.to_ndarray(format="rgb24")
            if i >= max(indices):
                break
    return [frames[i] for i in indices]


def _tensors(inputs: Any) -> Iterator[tuple[str, Any]]:
    for key, value in inputs.items():
        if hasattr(value, "shape"):
            yield key, value


def _same_inputs(a: Any, b: Any) -> bool:
    import torch

    keys_a = {k for k, _ in _tensors(a)}
    keys_b = {k for k, _ in _tensors(b)}
    return keys_a == keys_b and all(
        a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in keys_a
    )


def _reprocess(call: Call, frames: list[np.ndarray]) -> Any:
    """The processor's output for ``call`` with its frames replaced by ``frames``."""
    from PIL import Image

    kwargs = dict(call.kwargs)
    if "videos" in kwargs:
        kwargs["videos"] = [np.stack(frames)]
    else:
        kwargs["images"] = [[Image.fromarray(f) for f in frames]]
    return call.processor(**kwargs)


def _prompt_text(call: Call) -> str:
    return str(call.processor.tokenizer.decode(call.inputs["input_ids"][0]))


def _same_frames_in_order(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    """``got[i]`` is ``want[i]`` as the runner hands it over (a JPEG q95 round trip of it).

    Each received frame is within 2 grey levels (mean absolute difference) of the
    expected frame at its position and closer to it than to any other expected frame.
    """
    assert len(got) == len(want) == 8
    for i, frame in enumerate(got):
        assert frame.shape == want[i].shape
        diffs = [float(np.abs(frame.astype(np.int16) - w.astype(np.int16)).mean()) for w in want]
        assert diffs[i] < 2.0, (i, diffs)
        assert int(np.argmin(diffs)) == i, (i, diffs)


def _check_frames_reached(call: Call, clip: Path, indices: list[int], mode: str) -> None:
    expected = _decoded(clip, indices)
    if mode == "video":
        (video,) = call.kwargs["videos"]
        received = list(video)
        assert call.kwargs["do_sample_frames"] is False
    else:
        (images,) = call.kwargs["images"]
        received = [np.asarray(image) for image in images]
    _same_frames_in_order(received, expected)
    # the model's input tensors are exactly the processor's output for these frames ...
    assert _same_inputs(call.inputs, _reprocess(call, received))
    # ... and the order matters: the same frames reversed make different inputs
    assert not _same_inputs(call.inputs, _reprocess(call, received[::-1]))


def _ran(result: Any) -> bool:
    """The eval finished; random weights may score nothing (exit 1, issue 15's rule)."""
    return result.exit_code == 0 or (
        result.exit_code == 1 and "no sample could be scored" in result.output
    )


def _run_tamper(
    name: str,
    mode: str,
    spy: Spy,
    family_checkpoints: Callable[[str], Path],
    family_tamper_set: Path,
    frame_cache: Path,
    out: Path,
    *extra: str,
    check_frames: bool = True,
) -> dict[str, dict[str, Any]]:
    checkpoint = family_checkpoints(name)
    args = ["--frames", "8", "--model-arg", f"video_input={mode}", *extra]
    result = _eval(str(family_tamper_set), checkpoint, out, frame_cache, *args)
    assert _ran(result), result.output
    rows = stored_rows(out)
    assert len(rows) == 4
    for sid, row in rows.items():
        assert row["status"] in ANSWERED, (sid, row["error"])
        assert row["prompt_tokens"] > 0
        assert json.loads(row["extra"])["n_images"] == 8
    for sid, indices in EXPECTED_IDX.items():
        assert json.loads(rows[sid]["frame_indices"]) == indices
        if check_frames:
            clip = family_tamper_set / CLIPS[sid]
            _check_frames_reached(spy.for_sample(sid), clip, indices, mode)
    return rows


TAMPER_CASES = [
    pytest.param(name, mode, id=f"{name}-{mode}")
    for name, family in FAMILIES.items()
    for mode in (("images", "video") if family.video else ("images",))
]


@pytest.mark.parametrize(("name", "mode"), TAMPER_CASES)
def test_family_on_a_tamper_set(
    name: str,
    mode: str,
    spy: Spy,
    family_checkpoints: Callable[[str], Path],
    family_tamper_set: Path,
    frame_cache: Path,
    tmp_path: Path,
) -> None:
    _run_tamper(
        name, mode, spy, family_checkpoints, family_tamper_set, frame_cache, tmp_path / "run"
    )
    call = spy.for_sample("bikes__original")
    text = _prompt_text(call)
    timestamps = FAMILIES[name].timestamps
    if mode == "video" and timestamps == "qwen2_5":
        # 8 frames over 250 at 25 fps: 0.8 frames/s, 2 frames per temporal patch
        assert call.inputs["second_per_grid_ts"].tolist() == pytest.approx([2.5])
        carphone = spy.for_sample("carphone_pristine__original").inputs["second_per_grid_ts"]
        assert carphone.tolist() == pytest.approx([2 / (8 / 120 * 30000 / 1001)])
    if mode == "video" and timestamps == "qwen3":
        # mean time of each 2-frame patch: (15 + 46) / 2 / 25 = 1.22 s ... (202 + 233) / 2 / 25
        stamps = re.findall(r"<(\d+\.\d) seconds>", text)
        assert stamps == ["1.2", "3.7", "6.2", "8.7"]
    if mode == "video" and timestamps == "smolvlm":
        assert "following series of eight frames from a 0:00:10 [H:MM:SS] video" in text
        stamps = re.findall(r"Frame from (\d\d:\d\d):", text)
        assert stamps == ["00:00", "00:01", "00:03", "00:04", "00:05", "00:06", "00:08", "00:09"]
    if name == "gemma3":
        bos = call.processor.tokenizer.bos_token_id
        ids = call.inputs["input_ids"][0].tolist()
        assert ids[0] == bos
        assert ids.count(bos) == 1, "Gemma 3 prompt must start with exactly one <bos>"
    if mode == "video":
        assert call.kwargs["video_metadata"] == [{**BIKES_METADATA, "height": 272, "width": 640}]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_on_the_mmr_demo(
    name: str,
    spy: Spy,
    family_checkpoints: Callable[[str], Path],
    frame_cache: Path,
    tmp_path: Path,
) -> None:
    from PIL import Image

    from mmrobust.datasets import load_dataset

    result = _eval(
        "mmr-demo", family_checkpoints(name), tmp_path / "run", frame_cache, "--limit", "4"
    )
    assert _ran(result), result.output
    rows = stored_rows(tmp_path / "run")
    samples = {s.id: s for s in load_dataset("mmr-demo").samples}
    assert len(rows) == 4
    for sid, row in rows.items():
        assert row["status"] in ANSWERED, (sid, row["error"])
        assert row["prompt_tokens"] > 0
        assert json.loads(row["extra"])["n_images"] == 1
        call = spy.for_sample(sid)
        (images,) = call.kwargs["images"]
        image = samples[sid].image
        assert image is not None
        want = np.asarray(Image.open(image).convert("RGB"))
        assert len(images) == 1 and np.array_equal(np.asarray(images[0]), want)
        assert _same_inputs(call.inputs, _reprocess(call, [want]))


def test_video_metadata_stays_with_its_clip_in_a_batch(
    spy: Spy,
    family_checkpoints: Callable[[str], Path],
    family_tamper_set: Path,
    frame_cache: Path,
    tmp_path: Path,
) -> None:
    """Qwen3-VL, two clips of different fps in one batch: each prompt has its own clip's times."""
    one = _run_tamper(
        "qwen3_vl", "video", spy, family_checkpoints, family_tamper_set, frame_cache, tmp_path / "1"
    )
    spy.calls.clear()
    two = _run_tamper(
        "qwen3_vl",
        "video",
        spy,
        family_checkpoints,
        family_tamper_set,
        frame_cache,
        tmp_path / "2",
        "--model-arg",
        "batch_size=2",
        check_frames=False,
    )
    assert any(len(c.sample_ids) == 2 for c in spy.calls)
    for call in spy.calls:
        tokenizer = call.processor.tokenizer
        for row, sid in enumerate(call.sample_ids):
            text = tokenizer.decode(call.inputs["input_ids"][row], skip_special_tokens=False)
            stamps = [float(s) for s in re.findall(r"<(\d+\.\d) seconds>", text)]
            meta = call.kwargs["video_metadata"][row]
            idx, fps = meta["frames_indices"], meta["fps"]
            want = [round((idx[i] + idx[i + 1]) / 2 / fps, 1) for i in range(0, 8, 2)]
            assert stamps == pytest.approx(want, abs=0.051), sid
            assert idx == json.loads(two[sid]["frame_indices"])
    assert {s: r["raw_text"] for s, r in one.items()} == {s: r["raw_text"] for s, r in two.items()}


@pytest.mark.parametrize("name", ["idefics3", "gemma3"])
def test_video_input_without_a_video_processor_is_a_clear_refusal(
    name: str,
    family_checkpoints: Callable[[str], Path],
    family_tamper_set: Path,
    frame_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _eval(
        str(family_tamper_set),
        family_checkpoints(name),
        tmp_path / "run",
        frame_cache,
        "--model-arg",
        "video_input=video",
    )
    assert result.exit_code == 2
    assert "video_input=video needs a processor with a video input" in result.output
    assert "use video_input=images" in result.output


def test_fingerprint_follows_the_chat_template_and_processor_config(
    spy: Spy,
    family_checkpoints: Callable[[str], Path],
    family_tamper_set: Path,
    frame_cache: Path,
    tmp_path: Path,
) -> None:
    """Editing a local checkpoint's template or preprocessor config never reuses old answers.

    Before, an edited ``chat_template.jinja`` left the fingerprint unchanged and the
    re-run resumed the answers made with the old template.
    """
    checkpoint = tmp_path / "qwen2_vl"
    shutil.copytree(family_checkpoints("qwen2_vl"), checkpoint)
    data = str(family_tamper_set)

    def run(out: str) -> Any:
        return _eval(data, checkpoint, tmp_path / out, frame_cache, "--limit", "1")

    def fingerprint(out: str) -> str:
        (row,) = stored_rows(tmp_path / out).values()
        return str(row["model_fp"])

    assert _ran(run("a"))
    again = run("a")
    assert _ran(again) and "0 new rows, 1 resumed" in again.output

    template = checkpoint / "chat_template.jinja"
    template.write_text(template.read_text().replace("helpful assistant", "careful assistant"))
    stale = run("a")
    assert stale.exit_code == 2 and "already holds a run with a different model" in stale.output
    assert _ran(run("b"))
    assert "careful assistant" in _prompt_text(spy.calls[-1])

    config = checkpoint / "processor_config.json"  # transformers 5 keeps every sub-processor here
    settings = json.loads(config.read_text())
    settings["image_processor"]["size"]["longest_edge"] = 28 * 28 * 9
    config.write_text(json.dumps(settings))
    assert run("b").exit_code == 2
    assert _ran(run("c"))
    assert len({fingerprint("a"), fingerprint("b"), fingerprint("c")}) == 3

    run_block = json.loads((tmp_path / "c" / "metrics.json").read_text())["run"]
    model_fp = run_block["model_fingerprint"]
    assert re.fullmatch(r"[0-9a-f]{16}", model_fp["chat_template_sha256"])
    assert re.fullmatch(r"[0-9a-f]{16}", model_fp["processor_config_sha256"])


def test_matching_torchvision_rule_and_messages() -> None:
    import torch
    import torchvision

    from mmrobust.models._torchvision import matching_torchvision, torchvision_fix

    assert matching_torchvision("2.14.1+cu130") == "0.29.1"
    assert matching_torchvision("2.13.0+cpu") == "0.28.0"
    assert matching_torchvision("2.6.0") == "0.21.0"
    assert matching_torchvision("1.13.1") is None
    # the pair installed by the test extra follows the rule
    assert matching_torchvision(torch.__version__) == torchvision.__version__.split("+")[0]

    cpu = torchvision_fix("torchvision is not installed", "2.13.0+cpu")
    assert (
        "pip install 'torchvision==0.28.0+cpu' --index-url https://download.pytorch.org/whl/cpu"
        in cpu
    )
    cuda = torchvision_fix("torchvision is not installed", "2.14.1+cu130")
    assert cuda.endswith("pip install 'torchvision==0.29.1' (the release for torch 2.14.1+cu130)")
    assert "\n" not in cpu + cuda


_CLI = (
    "import sys\n"
    "{prelude}\n"
    "from mmrobust.cli import main\n"
    "for name in sys.argv[1:]:\n"
    "    sys.argv = ['mmrobust', 'eval', '--data', 'mmr-demo', '--limit', '1', '--model',\n"
    "                'hf:' + name, '--model-arg', 'device=cpu', '--model-arg', 'max_new_tokens=1',\n"
    "                '--out', name + '-run', '--bootstrap', '0', '-q']\n"
    "    code = 0\n"
    "    try:\n"
    "        main()\n"
    "    except SystemExit as exc:\n"
    "        code = exc.code\n"
    "    print('exit', code, flush=True)\n"
)


def _cli_without_torchvision(prelude: str, *checkpoints: Path, env: dict[str, str]) -> Any:
    import os
    import subprocess
    import sys

    code = _CLI.format(prelude=prelude)
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, checkpoints)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
    )


def test_missing_torchvision_is_a_one_line_error_naming_the_fix(
    family_checkpoints: Callable[[str], Path], tmp_path: Path
) -> None:
    """No torchvision (``sys.modules['torchvision'] = None``): video-capable families stop with one line; Idefics3 still runs."""
    import torch

    from mmrobust.models._torchvision import matching_torchvision

    qwen = shutil.copytree(family_checkpoints("qwen2_vl"), tmp_path / "qwen2_vl")
    idefics = shutil.copytree(family_checkpoints("idefics3"), tmp_path / "idefics3")
    done = _cli_without_torchvision("sys.modules['torchvision'] = None", qwen, idefics, env={})
    assert "Traceback" not in done.stderr, done.stderr
    # Qwen2-VL stops at load; Idefics3 runs (its random answers may score nothing: exit 1)
    exits = re.findall(r"^exit (\d+)$", done.stdout, re.M)
    assert exits in (["2", "0"], ["2", "1"]), done.stdout
    errors = [line for line in done.stderr.splitlines() if "torchvision" in line]
    pair = matching_torchvision(torch.__version__)
    assert errors == [
        "error: hf: torchvision is not installed; transformers needs it for this model's "
        f"image/video processor: pip install 'torchvision=={pair}' "
        f"(the release for torch {torch.__version__})"
    ]
    assert (idefics.parent / "idefics3-run" / "results.sqlite").is_file()  # image-only family works


def test_broken_torchvision_is_a_one_line_error(
    family_checkpoints: Callable[[str], Path],
    family_tamper_set: Path,
    frame_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A torchvision built for another torch fails at import (``operator torchvision::nms does not exist``)."""
    import sys

    fake = tmp_path / "site" / "torchvision"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    monkeypatch.syspath_prepend(str(fake.parent))
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)  # next import: the broken one
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _eval(
        str(family_tamper_set), family_checkpoints("idefics3"), tmp_path / "r", frame_cache
    )
    assert result.exit_code == 2
    assert result.output.startswith(
        "error: hf: torchvision is installed but does not import "
        "(operator torchvision::nms does not exist); "
    )
    assert result.output.count("\n") == 1 and "pip install 'torchvision==" in result.output

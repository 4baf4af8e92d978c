"""``--official`` end to end: the request the reference sends, frames, the recorded version.

Reference: VLMEvalKit ``vlmeval/dataset/tamperbench.py`` (``build_prompt``,
``get_index``, ``SYS``) at eb58e9e05d4f64316608128988c60a3cb200307d (integration)
and e8e78f05f3080fe28154f2130321f17951c3be94 (head); MMR
``evaluation/evaluation/models/closed-source/gpt4o.py`` (and the other model
scripts) at b85b573034be5b97a06d230f3724b8259500cf7d: ``item['question'] +
"\\nAnswer with the option's letter from the given choices directly."``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from mmrobust.models.base import Model, Request, Response
from mmrobust.official import tamper_reference
from mmrobust.prompts import MMR_INSTRUCTION
from mmrobust.runner import EvalConfig, rescore, run_eval
from tests.fake_openai_server import FakeOpenAIServer, RecordedRequest, Reply
from tests.synth import make_synthetic_video, read_frame_code

QUESTION = (
    "Does this video exhibit any signs of tampering, such as corruption, blackouts, "
    "rotated frames, repeated frames, or swapped frames?"
)


def _tamper_set(tmp_path: Path, n_frames: int) -> Path:
    """Two clips (an original and a masking clip of one source) as generic JSONL."""
    clip = make_synthetic_video(tmp_path / "clip.mp4", n_frames, fps=25)
    lines = [
        {"id": f"v_{t}", "benchmark": "tamper", "video": clip.name, "question": QUESTION,
         "options": {"A": "Yes", "B": "No"}, "answer": "B" if t == "original" else "A",
         "group": "v", "tamper_type": t, "task": "demo"}
        for t in ("original", "masking")
    ]  # fmt: skip
    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return data


class _Recorder(Model):
    """Keeps every request; answers with a fixed reply."""

    def __init__(self, reply: str = "A") -> None:
        self.requests: list[Request] = []
        self.reply = reply

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        self.requests.extend(requests)
        return [Response(text=self.reply) for _ in requests]


@pytest.mark.parametrize(("official", "expected"), [(False, [0, 1, 2, 3, 4]),
                                                    (True, [0, 0, 1, 2, 2, 2, 3, 4])])  # fmt: skip
def test_short_clip_frames(tmp_path: Path, official: bool, expected: list[int]) -> None:
    """5 frames, --frames 8: each frame once by default; the reference's 8 indices officially.

    Reference get_index: seg = (5 - 1) / 8 = 0.5, index_i = int(0.25 + round(0.5 i)).
    """
    model = _Recorder()
    config = EvalConfig(
        data=str(_tamper_set(tmp_path, 5)), model="rec", out=str(tmp_path / "run"),
        frames=8, official=official, n_resamples=0, cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    run_eval(config, progress=False, model=model)
    req = model.requests[0]
    assert list(req.frame_indices) == expected
    assert [read_frame_code(f) for f in req.frames] == expected  # the pixels of those frames
    from tests.runs import stored_rows

    row = stored_rows(tmp_path / "run")["v_original"]
    assert json.loads(row["frame_indices"]) == expected
    assert json.loads(row["extra"])["frames_repeated"] == len(expected) - 5


@pytest.mark.parametrize("version", ["integration", "head"])
def test_official_tamper_request_over_http(tmp_path: Path, version: str) -> None:
    """System text of the version; user turn: question block, 8 frames, instruction; prefill."""
    data = _tamper_set(tmp_path, 40)
    with FakeOpenAIServer(responder=lambda _r: Reply.ok("A) Yes")) as server:
        config = EvalConfig(
            data=str(data), model="openai:test", out=str(tmp_path / "run"), official=True,
            reference=version, model_args={"base_url": server.base_url},
            n_resamples=0, cache_dir=str(tmp_path / "cache"),
        )  # fmt: skip
        result = run_eval(config, progress=False)
        sent: RecordedRequest = server.chat_requests[0]
    messages = sent.body["messages"]
    assert messages[0] == {"role": "system", "content": tamper_reference(version).system}
    assert sent.part_types == ["text", *["image_url"] * 8, "text"]
    parts = sent.user_content
    assert parts[0]["text"] == f"Question: {QUESTION}\nOptions:\n(A) Yes\n(B) No"
    assert parts[-1]["text"] == "\nOnly give the best option."
    assert messages[-1] == {"role": "assistant", "content": "Best option:("}
    assert sent.body["continue_final_message"] is True
    ref = result.metrics["run"]["reference"]
    assert ref["repo"] == "open-compass/VLMEvalKit"
    assert ref["commit"] == tamper_reference(version).commit
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["config"]["reference"] == version and info["run"]["reference"] == ref
    # the report names it in the run's metadata block
    from mmrobust.report.html import HtmlRun, run_metadata

    lines = dict(run_metadata(HtmlRun("openai:test", "tamper", info, result.metrics)))
    name = tamper_reference(version).name
    assert lines["reference"].startswith(f"open-compass/VLMEvalKit @ {name} (")
    # "A) Yes": right for the masking clip, wrong for the original (always-yes: F1 2/3)
    assert result.metrics["f1"]["masking"] == pytest.approx(2 / 3)
    acc = result.metrics["official_accuracy"]["tamper_type"]
    assert acc["masking"]["correct"] == 1 and acc["original"]["correct"] == 0


def test_prefill_as_user_text_like_vlmevalkit_api_wrappers(tmp_path: Path) -> None:
    data = _tamper_set(tmp_path, 12)
    with FakeOpenAIServer(responder=lambda _r: Reply.ok("B) No")) as server:
        config = EvalConfig(
            data=str(data), model="openai:test", out=str(tmp_path / "run"), official=True,
            model_args={"base_url": server.base_url, "prefill": "user"}, n_resamples=0,
            cache_dir=str(tmp_path / "cache"),
        )  # fmt: skip
        run_eval(config, progress=False)
        sent = server.chat_requests[0]
    assert [p.get("text") for p in sent.user_content[-2:]] == [
        "\nOnly give the best option.",
        "Best option:(",
    ]
    assert sent.body["messages"][-1]["role"] == "user"


def test_rescore_with_another_reference_version(tmp_path: Path) -> None:
    """Stored replies re-decided at head: the 10-character cap turns a long 'yes' wrong."""
    model = _Recorder("Yes, it is tampered.")
    out = tmp_path / "run"
    config = EvalConfig(
        data=str(_tamper_set(tmp_path, 12)), model="rec", out=str(out), official=True,
        n_resamples=0, cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    m = run_eval(config, progress=False, model=model).metrics
    assert m["per_type"]["masking"]["tp"] == 1 and m["run"]["reference"]["name"] == "eb58e9e"
    head = rescore(out, reference="head")
    assert head["per_type"]["masking"]["tp"] == 0 and head["run"]["reference"]["name"] == "e8e78f0"
    again = rescore(out)  # the run's decision version is now head
    assert again["run"]["reference"]["name"] == "e8e78f0"


def test_official_mmr_sends_the_raw_question(tmp_path: Path) -> None:
    raw_pos = "What colour is the car?\nA.red\nB.  blue \nC. green\nD. white\n"
    raw_neg = "Why is the green car so fast?\nA. It is red\nB. fast\nC. slow\nD. white"
    records = [
        {"id": "a/b/01", "image": "x.jpg", "question": raw_neg, "ground_truth": "A",
         "question_type": "NEG"},
        {"id": "a/b/01", "image": "x.jpg", "question": raw_pos, "ground_truth": "A",
         "question_type": "POS"},
    ]  # fmt: skip
    data = tmp_path / "mmr.json"
    data.write_text(json.dumps(records))
    texts = {}
    for official in (False, True):
        model = _Recorder("A")
        config = EvalConfig(
            data=str(data), model="rec", out=str(tmp_path / f"run{official}"),
            text_only=True, official=official, n_resamples=0,
        )  # fmt: skip
        m = run_eval(config, progress=False, model=model).metrics
        texts[official] = {r.sample_id: r.prompt for r in model.requests}
        assert m["UR"] == 1
        assert m["pairing"] == ("position" if official else "content")
    # the reference: item['question'] + "\nAnswer with ..." (the file's text untouched)
    assert texts[True]["a/b/01#pos"] == raw_pos + "\n" + MMR_INSTRUCTION
    assert texts[True]["a/b/01#neg"] == raw_neg + "\n" + MMR_INSTRUCTION
    # default: options one per line, whitespace normalised
    assert texts[False]["a/b/01#pos"] == (
        "What colour is the car?\nA. red\nB. blue\nC. green\nD. white\n" + MMR_INSTRUCTION
    )


def test_hf_messages_follow_the_same_order() -> None:
    from mmrobust.models.hf import build_messages

    prompt = f"Question: {QUESTION}\nOptions:\n(A) Yes\n(B) No\nOnly give the best option."
    k = prompt.index("\nOnly")
    req = Request(sample_id="s", prompt=prompt, question=QUESTION, options={"A": "Yes", "B": "No"},
                  system="sys", media_offset=k)  # fmt: skip
    parts = build_messages(req, 3, "images")[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image", "image", "image", "text"]
    assert parts[0]["text"] + parts[-1]["text"] == prompt
    assert [p["type"] for p in build_messages(req, 0, "images")[1]["content"]] == ["text"]


def test_rescore_names_prompt_and_decision_versions(tmp_path: Path) -> None:
    """Issue 28, section 3: after ``rescore --reference head`` the prompt was still asked at
    eb58e9e; metrics.json and the report say which version did what."""
    from mmrobust.report.html import HtmlRun, run_metadata

    out = tmp_path / "run"
    config = EvalConfig(
        data=str(_tamper_set(tmp_path, 12)), model="rec", out=str(out), official=True,
        n_resamples=0, cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    m = run_eval(config, progress=False, model=_Recorder("A")).metrics
    assert (m["run"]["prompt_reference"], m["run"]["decision_reference"]) == ("eb58e9e", "eb58e9e")
    head = rescore(out, reference="head")
    assert head["run"]["prompt_reference"] == "eb58e9e"  # asked with eb58e9e's system text
    assert head["run"]["decision_reference"] == "e8e78f0"  # decided by head's rules
    assert head["run"]["prompt"]["reference"] == "eb58e9e"  # the older field stays
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk["run"]["decision_reference"] == "e8e78f0"
    info = json.loads((out / "run.json").read_text())
    line = dict(run_metadata(HtmlRun("rec", "tamper", info, head)))["reference"]
    assert line.endswith("; decisions at e8e78f0, prompt as sent at eb58e9e")
    lenient = rescore(out, extract_mode="lenient")
    assert lenient["run"]["decision_reference"] is None and lenient["run"]["reference"] is None


def test_official_api_reply_is_stripped_as_the_wrapper_does(tmp_path: Path) -> None:
    """D3 end to end: ``"None\\n"`` from an OpenAI-compatible server is ``"None"`` for the
    reference (a missing value, never scored); from a local model it reads "no"."""
    from mmrobust.store import ResultStore

    data = _tamper_set(tmp_path, 12)
    with FakeOpenAIServer(responder=lambda _r: Reply.ok("None\n")) as server:
        config = EvalConfig(
            data=str(data), model="openai:test", out=str(tmp_path / "api"), official=True,
            model_args={"base_url": server.base_url}, n_resamples=0,
            cache_dir=str(tmp_path / "cache"),
        )  # fmt: skip
        run_eval(config, progress=False)
    with ResultStore(tmp_path / "api") as store:
        rules = {r.sample_id: (r.raw_text, r.rule) for r in store.rows()}
    assert rules["v_original"] == ("None\n", "official:missing-value")
    config = EvalConfig(
        data=str(data), model="rec", out=str(tmp_path / "local"), official=True,
        n_resamples=0, cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    run_eval(config, progress=False, model=_Recorder("None\n"))
    with ResultStore(tmp_path / "local") as store:
        rows = {r.sample_id: r for r in store.rows()}
    assert rows["v_original"].letter == "B" and rows["v_original"].rule == "official:rule-search"

"""Official mode's spreadsheet round trip (issue 28, D1-D4; docs/official.md).

VLMEvalKit (open-compass/VLMEvalKit) writes the predictions to an ``.xlsx`` with the
xlsxwriter engine and scores what ``pandas.read_excel`` (openpyxl) reads back
(``vlmeval/smp/file.py`` ``dump``, lines 148-149 at eb58e9e0, 165-171 at e8e78f05;
``vlmeval/dataset/tamperbench.py`` ``evaluate``), and its OpenAI wrapper strips each reply
(``vlmeval/api/gpt.py`` line 213 at eb58e9e0, 319 at e8e78f05). Decisions below were worked
out by hand from the reference's rules (tests/test_reference_parity.py docstring) on the
text it reads back; R right, W wrong, F never scored, for truth A then truth B.
"""

from __future__ import annotations

import pytest

from mmrobust.extract import extract
from mmrobust.official import (
    XLSX_CELL_LIMIT,
    reply_path_for,
    sheet_round_trip,
    tamper_decision,
    tamper_reference,
)

YN = {"A": "Yes", "B": "No"}
CODE = {"correct": "R", "wrong": "W", "failed": "F"}

# 34,000 characters of reasoning without a letter token or an option text, then the answer.
FILLER = "Frame by frame the motion seems steady. " * 850
LONG = FILLER + "Final answer: B"


def decide(reply: str, version: str, path: str) -> str:
    """The official verdicts for truth A then B, as ``extract`` stores them."""
    out = ""
    for truth in "AB":
        ex = extract(reply, YN, mode="official", answer=truth, reference=version,
                     reply_path=path)  # type: ignore[arg-type]  # fmt: skip
        if ex.letter == truth:
            out += "R"
        else:
            out += "F" if ex.rule in ("official:empty-reply", "official:missing-value") else "W"
    return out


def reference_on_raw(reply: str, version: str) -> str:
    """What mmrobust decided before modelling the round trip (the reply as stored)."""
    ref = tamper_reference(version)
    return "".join(CODE[tamper_decision(reply, t, YN, ref).outcome] for t in "AB")


# (reply, path, eb58e9e, e8e78f0, before at eb58e9e, before at e8e78f0)
SHEET: list[tuple[str, str, str, str, str, str]] = [
    # D1: cut at 32,767 characters, so the final answer is lost
    (LONG, "local", "WW", "WW", "WR", "WR"),
    (LONG, "api", "WW", "WW", "WR", "WR"),
    # D2: "\r" is read back as the text "_x000D_": "B_x000D_" is no token "B"
    ("Answer: B\r\nThe video is smooth.", "local", "WW", "WW", "WR", "WW"),
    ("Answer: B\r\nThe video is smooth.", "api", "WW", "WW", "WR", "WW"),  # inside: kept
    ("A\r\nThe frames are upside down.", "local", "WW", "WW", "RW", "WW"),
    ("B\r\n", "local", "WW", "WW", "WR", "WR"),  # a local model that does not strip
    ("B\r\n", "api", "WR", "WR", "WR", "WR"),  # the wrapper strips it first (D3)
    ("Answer: A\r\n", "local", "WW", "WW", "RW", "RW"),
    ("Answer: A\r\n", "api", "RW", "RW", "RW", "RW"),
    ("Yes\r\n", "local", "RW", "WW", "RW", "RW"),  # head: "yes_x000d_\n" is 11 characters
    ("Yes\r\n", "api", "RW", "RW", "RW", "RW"),
    # D3: the OpenAI wrapper strips the reply
    ("None\n", "api", "FF", "FF", "WR", "WR"),  # "None": a missing value, never scored
    ("None\n", "local", "WR", "WR", "WR", "WR"),
    ("Yes\n\n\n\n\n\n\n\n", "api", "RW", "RW", "RW", "WW"),  # head's 10-character cap
    ("Yes\n\n\n\n\n\n\n\n", "local", "RW", "WW", "RW", "WW"),
    ("No          ", "api", "WR", "WR", "WR", "WW"),
    ("No          ", "local", "WR", "WW", "WR", "WW"),
    # D4 (documented, not modelled): a formula at eb58e9e crashes the reference's whole
    # evaluation; official mode scores the text at both versions, as e8e78f0 does
    ("= B", "api", "WR", "WR", "WR", "WR"),
    ("=A", "local", "WW", "WW", "WW", "WW"),  # token "=A" is no letter; no option text
]


@pytest.mark.parametrize(("reply", "path", "integration", "head", "was_i", "was_h"), SHEET)
def test_sheet_round_trip_decisions(
    reply: str, path: str, integration: str, head: str, was_i: str, was_h: str
) -> None:
    assert decide(reply, "eb58e9e", path) == integration
    assert decide(reply, "e8e78f0", path) == head
    assert reference_on_raw(reply, "eb58e9e") == was_i  # the old decision, for the record
    assert reference_on_raw(reply, "e8e78f0") == was_h


def test_d1_cut_length() -> None:
    assert len(LONG) == 34_015
    assert sheet_round_trip(LONG) == LONG[:32_767]
    assert XLSX_CELL_LIMIT == 32_767
    short = "B" * 32_767
    assert sheet_round_trip(short) == short


def test_d2_control_characters() -> None:
    assert sheet_round_trip("Answer: B\r\nok") == "Answer: B_x000D_\nok"
    assert sheet_round_trip("a\x00b\x08c\x0bd\x1fe\x7f") == "a_x0000_b_x0008_c_x000B_d_x001F_e\x7f"
    assert sheet_round_trip("tab\tand\nnewline") == "tab\tand\nnewline"  # kept as they are
    # the cut comes first (xlsxwriter cuts the string, then escapes it in the XML)
    near = "x" * 32_765 + "\r\nB"
    assert sheet_round_trip(near) == "x" * 32_765 + "_x000D_\n"


def test_d3_wrapper_per_backend() -> None:
    assert sheet_round_trip("  None\n", reply_path="api") == "None"
    assert sheet_round_trip("  None\n", reply_path="local") == "  None\n"
    assert reply_path_for("openai:Qwen/Qwen2.5-VL-7B-Instruct") == "api"
    assert reply_path_for("anthropic:claude") == "api"
    assert reply_path_for("hf:/models/qwen") == "local"  # the hf backend strips its text itself
    assert reply_path_for("constant:A") == "local"
    assert reply_path_for(None) == "local"


def test_d4_formula_text_is_scored_as_written() -> None:
    assert sheet_round_trip("=SUM(A1)") == "=SUM(A1)"
    assert sheet_round_trip("= B", reply_path="api") == "= B"


def test_default_mode_ignores_the_sheet() -> None:
    """Lenient extraction reads the stored reply, not the spreadsheet's copy."""
    assert extract(LONG, YN).letter == "B"
    assert extract("Answer: B\r\nThe video is smooth.", YN).letter == "B"
    assert extract("None\n", YN).letter is None


def test_round_trip_matches_pandas_xlsxwriter_openpyxl(tmp_path: object) -> None:
    """Against the real engines when they are installed (they are not dependencies)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("xlsxwriter", reason="xlsxwriter not installed: engine check skipped")
    pytest.importorskip("openpyxl", reason="openpyxl not installed: engine check skipped")
    from pathlib import Path

    replies = [LONG, "Answer: B\r\nok", "B\r\n", "a\x01b", "x" * 32_765 + "\r\nB", "Yes"]
    path = Path(str(tmp_path)) / "p.xlsx"
    with pd.ExcelWriter(path, engine="xlsxwriter",
                        engine_kwargs={"options": {"strings_to_formulas": False}}) as writer:  # fmt: skip
        pd.DataFrame({"prediction": replies}).to_excel(writer, index=False)
    back = list(pd.read_excel(path)["prediction"])
    assert back == [sheet_round_trip(r) for r in replies]

"""Yes and No in the most spoken languages, for replies to a Yes/No question (pure).

A model asked in English may answer in the language of its training or of the video's
speech: ``"Sí, el vídeo fue manipulado."``, ``"Nein."``, ``"はい、改ざんされています。"``.
:func:`leading_yes_no` reads the word a reply *starts* with, alone or followed by an
explanation (the next character is punctuation, a space or the end: ``"はいっている"`` is no
``はい``). Languages (:data:`YES_NO`): the ten most spoken by total speakers (Ethnologue 2023:
English, Mandarin Chinese, Hindi, Spanish, Arabic, French, Bengali, Portuguese, Russian,
Urdu), then German, Japanese, Korean, Italian and Indonesian.

Spanish and Italian ``si`` without its accent is also *if*; it counts only when punctuation
or the end follows (``"Si."``, ``"Si, ..."``, never ``"Si el vídeo ..."``); so do Arabic
``لا``, Hindi ``नहीं``, Urdu ``نہیں`` and Chinese ``不``, which also begin "I don't know"
(:data:`_BARE_ONLY`). English ``Yes`` /
``No`` are the options' own text (:func:`mmrobust.reply_words.option_text`).

:func:`zh_tamper_phrase` reads Chinese tamper phrasing (``"视频没有被篡改"`` -> not tampered,
``"视频被篡改了"`` -> tampered), as :mod:`mmrobust.reply_words` reads the English.
"""

from __future__ import annotations

import re
import unicodedata

YES_NO: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "English": (("yes", "yeah", "yep"), ("no", "nope")),
    "Chinese": (("是的", "是", "对的", "对", "對", "有"),
                ("不是", "否", "不对", "不對", "没有", "沒有", "不", "无", "無")),
    "Hindi": (("हाँ", "हां", "जी हाँ", "जी हां"), ("नहीं", "जी नहीं")),
    "Spanish": (("sí", "si"), ("no",)),
    "Arabic": (("نعم",), ("لا",)),
    "French": (("oui",), ("non",)),
    "Bengali": (("হ্যাঁ", "হ্যা", "হাঁ"), ("না",)),
    "Portuguese": (("sim",), ("não", "nao")),
    "Russian": (("да",), ("нет",)),
    "Urdu": (("ہاں", "جی ہاں"), ("نہیں", "جی نہیں")),
    "German": (("ja",), ("nein",)),
    "Japanese": (("はい", "ええ"), ("いいえ", "いえ")),
    "Korean": (("네", "예"), ("아니요", "아니오", "아뇨")),
    "Italian": (("sì", "si"), ("no",)),
    "Indonesian": (("ya", "iya"), ("tidak", "bukan")),
}  # fmt: skip
"""Language -> (words for Yes, words for No), compared lower-cased after NFKC."""

_BARE_ONLY = frozenset({"si", "لا", "नहीं", "نہیں", "不"})
"""Words that count only before punctuation or the end: Spanish/Italian *si* is also *if*;
Arabic *la*, Hindi/Urdu *nahin*, Chinese *bu* also start "I don't know" (``"لا أعرف"``)."""

_AFTER = r"(?=[\s.,;:!?、。，．！？;،۔।\-–—)\]]|$)"
_AFTER_BARE = r"(?=\s*(?:[.,;:!?、。，．！？;،۔।\-–—]|$))"


def _pattern(words: list[str], after: str) -> re.Pattern[str]:
    forms = {unicodedata.normalize("NFKC", w) for w in words}
    alts = "|".join(re.escape(w) for w in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?:{alts}){after}")


_YES = {w for yes, _ in YES_NO.values() for w in yes}
_NO = {w for _, no in YES_NO.values() for w in no}
_LEADING = [
    (_pattern(sorted(_YES - _BARE_ONLY), _AFTER), True),
    (_pattern(sorted(_NO - _BARE_ONLY), _AFTER), False),
    (_pattern(sorted(_YES & _BARE_ONLY), _AFTER_BARE), True),
    (_pattern(sorted(_NO & _BARE_ONLY), _AFTER_BARE), False),
]


def leading_yes_no(text: str) -> bool | None:
    """``True`` when the reply starts with a word for Yes (:data:`YES_NO`), ``False`` for
    No, else ``None``. ``text``: the reply without markdown, any case; the longest word wins
    (``"不是"`` is No, not ``"不"`` then ``"是"``)."""
    t = text.strip().lower().lstrip("\"'“「『(")
    best: tuple[int, bool] | None = None
    for pattern, yes in _LEADING:
        m = pattern.match(t)
        if m and (best is None or m.end() > best[0]):
            best = (m.end(), yes)
    return None if best is None else best[1]


_ZH_NOT_TAMPERED = re.compile(
    r"(?:没有|沒有|未|并未|並未|不曾|无|無)(?:被|经过|經過)?(?:篡改|窜改|竄改)"
)
_ZH_TAMPERED = re.compile(r"(?:被|已被|经过|經過|有|存在)(?:篡改|窜改|竄改)")
_ZH_UNSURE = re.compile(r"是否|如果|无法|無法|不确定|不確定|不能确定|可能")


def zh_tamper_phrase(text: str) -> bool | None:
    """``False`` for Chinese "not tampered" phrasing (``没有被篡改``, ``未被篡改``), ``True``
    for "tampered" (``被篡改``, ``有篡改``), ``None`` otherwise or when the reply hedges
    (``是否``, ``无法``, ``可能``...)."""
    if _ZH_UNSURE.search(text):
        return None
    if _ZH_NOT_TAMPERED.search(text):
        return False
    if _ZH_TAMPERED.search(text):
        return True
    return None


__all__ = ["YES_NO", "leading_yes_no", "zh_tamper_phrase"]

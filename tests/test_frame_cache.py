"""Frame sampling in one pass and the JPEG frame cache (size cap, LRU, off switch, failures)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from mmrobust.media import probe
from mmrobust.media.cache import FrameCache, dumps_entry, loads_entry, parse_size
from mmrobust.media.frames import SampledClip, sample_clip
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.media.provider import FrameProvider
from mmrobust.media.sampling import FramePolicy, frame_indices
from mmrobust.models.base import Model, Request, Response
from mmrobust.runner import EvalConfig, run_eval
from tests.synth import make_synthetic_video, read_frame_code

SEG8 = FramePolicy(mode="segments", n_frames=8)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("clips")
    return {
        "mp4": make_synthetic_video(d / "a.mp4", 90, Fraction(30000, 1001), (160, 96), seed=1),
        # webm and mkv list no frame count: the hint comes from counting packets
        "webm": make_synthetic_video(
            d / "b.webm", 61, 25, (160, 96), seed=2, codec="libvpx-vp9", crf=30
        ),
        "mkv": make_synthetic_video(d / "c.mkv", 47, 24, (160, 96), seed=3),
        "rot": make_synthetic_video(d / "r.mp4", 30, 25, (160, 96), seed=4, rotation=90),
    }


@pytest.mark.parametrize("name", ["mp4", "webm", "mkv"])
@pytest.mark.parametrize(
    "policy", [SEG8, FramePolicy(mode="fps", fps=2.0), FramePolicy(mode="segments", n_frames=3)]
)
def test_one_pass_picks_the_policys_frames(
    clips: dict[str, Path], name: str, policy: FramePolicy
) -> None:
    info = probe(clips[name])  # counts by decoding: the reference count
    clip = sample_clip(clips[name], policy, FrameEncoding(quality=95))
    assert clip.n_frames == info.frame_count and clip.fps == info.fps
    assert list(clip.indices) == frame_indices(info.frame_count, info.fps, policy)
    # Each JPEG shows the frame it claims to: the synthetic clip draws its index into the pixels.
    assert [read_frame_code(f) for f in clip.arrays()] == list(clip.indices)
    assert clip.size == (160, 96)


def test_size_cap_and_rotation(clips: dict[str, Path]) -> None:
    clip = sample_clip(clips["rot"], SEG8, FrameEncoding(quality=90, max_side=64))
    assert clip.size == (38, 64)  # displayed upright (96x160), longer side capped at 64
    assert all(f.shape == (64, 38, 3) for f in clip.arrays())
    full = sample_clip(
        clips["mp4"], FramePolicy(mode="segments", n_frames=2, size=(80, 48)), FrameEncoding()
    )
    assert full.size == (80, 48) and full.arrays()[0].shape == (48, 80, 3)


def test_hint_mismatch_takes_a_second_pass(
    clips: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmrobust.media.frames as frames_mod

    real = frames_mod.frame_indices
    calls: list[int] = []

    def shifted(n: int, fps: Fraction | float, policy: FramePolicy) -> list[int]:
        calls.append(n)
        return real(n + 7 if len(calls) == 1 else n, fps, policy)  # a wrong first hint

    monkeypatch.setattr(frames_mod, "frame_indices", shifted)
    clip = sample_clip(clips["mp4"], SEG8, FrameEncoding())
    assert list(clip.indices) == real(90, Fraction(30000, 1001), SEG8)
    assert [read_frame_code(f) for f in clip.arrays()] == list(clip.indices)


def test_entry_round_trip_and_corruption(clips: dict[str, Path], tmp_path: Path) -> None:
    clip = sample_clip(clips["mp4"], SEG8, FrameEncoding(quality=90))
    assert loads_entry(dumps_entry(clip)) == clip
    raw = 8 * 96 * 160 * 3
    assert clip.nbytes < raw / 4  # JPEG q90 vs the decoded frames the old cache stored
    cache = FrameCache(tmp_path / "c")
    key = cache.key(clips["mp4"], SEG8, FrameEncoding(quality=90))
    assert cache.get(key) is None and cache.put(key, clip) and cache.get(key) == clip
    path = next((tmp_path / "c").rglob("*.frames"))
    path.write_bytes(path.read_bytes()[:-10])  # cut short
    assert cache.get(key) is None
    # The key depends on the encoding: another quality never reads this entry.
    assert cache.key(clips["mp4"], SEG8, FrameEncoding(quality=80)) != key
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 2


def _fake_clip(nbytes: int) -> SampledClip:
    return SampledClip(
        jpegs=(b"x" * nbytes,), indices=(0,), n_frames=1, fps=Fraction(25), size=(1, 1)
    )


def test_lru_eviction_keeps_the_cap(tmp_path: Path) -> None:
    keys = [f"{i:02x}" * 32 for i in range(5)]
    entry = len(dumps_entry(_fake_clip(1000), key=keys[0]))  # an entry records its key
    cache = FrameCache(tmp_path / "c", max_bytes=int(3.5 * entry))
    for i, k in enumerate(keys[:3]):
        assert cache.put(k, _fake_clip(1000))
        os.utime(cache._path(k), (1000 + i, 1000 + i))  # k0 oldest
    assert cache.get(keys[0]) is not None  # used now: k1 is the least recently used
    cache.put(keys[3], _fake_clip(1000))  # 4 entries > 3.5: evict down to <= 90 % of the cap
    present = [k for k in keys if cache._path(k).exists()]
    assert present == [keys[0], keys[2], keys[3]]
    # An entry of the old format (decoded frames, .npz) is evicted before any current one.
    old = tmp_path / "c" / "ab" / ("ab" * 32 + ".npz")
    old.parent.mkdir()
    old.write_bytes(b"x" * 10)
    cache.put(keys[4], _fake_clip(1000))
    assert not old.exists() and not cache._path(keys[2]).exists()
    stats = cache.stats()
    assert stats["evicted"] == 3 and stats["bytes"] == 3 * entry <= stats["max_bytes"]


def test_parse_size() -> None:
    assert parse_size("10GB") == 10 * 1000**3
    assert parse_size("500M") == 500 * 1000**2 and parse_size("2GiB") == 2 * 1024**3
    assert parse_size("0") == 0 and parse_size("1.5kb") == 1500
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


class Recorder(Model):
    """Answers "A"; records the frames it was shown."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: dict[str, list[bytes]] = {}

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        for r in requests:
            self.seen[r.sample_id] = [f.tobytes() for f in r.frames]
        return [Response(text="A") for _ in requests]


def _run(data: Path, out: Path, cache_dir: str | None, **kw: object) -> tuple[Recorder, dict]:
    model = Recorder()
    cfg = EvalConfig(
        data=str(data), model="rec", out=str(out), cache_dir=cache_dir, n_resamples=0, **kw
    )  # type: ignore[arg-type]
    run_eval(cfg, progress=False, model=model)
    return model, json.loads((out / "run.json").read_text())


@pytest.fixture()
def clip_set(clips: dict[str, Path], tmp_path: Path) -> Path:
    lines = [
        json.dumps({"id": n, "question": "q?", "options": ["Yes", "No"], "answer": "No",
                    "video": str(p), "benchmark": "tamper", "tamper_type": "original"})
        for n, p in clips.items()
    ]  # fmt: skip
    f = tmp_path / "set.jsonl"
    f.write_text("\n".join(lines) + "\n")
    return f


def test_cold_warm_and_off_show_the_same_pixels(clip_set: Path, tmp_path: Path) -> None:
    cold, info_cold = _run(clip_set, tmp_path / "cold", str(tmp_path / "cache"))
    warm, info_warm = _run(clip_set, tmp_path / "warm", str(tmp_path / "cache"))
    off, info_off = _run(clip_set, tmp_path / "off", "none")
    assert cold.seen == warm.seen == off.seen and len(cold.seen) == 4
    fc = info_cold["frame_cache"]
    assert (fc["writes"], fc["misses"], fc["hits"], fc["entries"]) == (4, 4, 0, 4)
    assert 0 < fc["bytes"] < 4 * 8 * 96 * 160 * 3 / 4 and fc["max_bytes"] == 10 * 1000**3
    assert (info_warm["frame_cache"]["hits"], info_warm["frame_cache"]["writes"]) == (4, 0)
    assert info_off["frame_cache"] is None
    assert info_cold["run"]["frame_encoding"] == "JPEG q95, decoded size"
    _, capped = _run(clip_set, tmp_path / "small", str(tmp_path / "c2"), cache_size="0")
    assert capped["frame_cache"] is None and not (tmp_path / "c2").exists()


def test_unwritable_cache_warns_once_and_every_sample_is_evaluated(
    clip_set: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the cache folder should be")
    with caplog.at_level(logging.WARNING, logger="mmrobust.media.cache"):
        model, info = _run(clip_set, tmp_path / "run", str(blocker / "cache"))
    warnings = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and len(model.seen) == 4
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["status_counts"] == {"ok": 4}
    fc = info["frame_cache"]
    assert (
        fc["writes"] == 0
        and fc["write_errors"] == 1
        and fc["write_error"].startswith(("NotADirectoryError", "FileExistsError"))
    )


def test_provider_treats_an_undecodable_entry_as_a_miss(
    clips: dict[str, Path], tmp_path: Path
) -> None:
    cache = FrameCache(tmp_path / "c")
    enc = FrameEncoding()
    provider = FrameProvider(SEG8, enc, cache)
    good, arrays = provider.clip(clips["mkv"], arrays=True)
    key = cache.key(clips["mkv"], SEG8, enc)
    bad = SampledClip(jpegs=tuple(b"not a jpeg" for _ in good.jpegs), indices=good.indices,
                      n_frames=good.n_frames, fps=good.fps, size=good.size)  # fmt: skip
    cache.put(key, bad)
    again, arrays2 = provider.clip(clips["mkv"], arrays=True)
    assert again == good and all(np.array_equal(a, b) for a, b in zip(arrays, arrays2, strict=True))
    assert cache.get(key) == good  # overwritten


def test_swapped_or_damaged_entries_are_misses_and_rewritten(
    clip_set: Path, tmp_path: Path
) -> None:
    """Issue 27 item 6: an entry records its key, the clip's hash and a payload checksum."""
    cache_dir = tmp_path / "cache"
    cold, _ = _run(clip_set, tmp_path / "cold", str(cache_dir))
    entries = sorted(cache_dir.rglob("*.frames"))
    assert len(entries) == 4
    first, second = entries[0].read_bytes(), entries[1].read_bytes()
    entries[0].write_bytes(second)  # each clip now finds the other's JPEGs under its key
    entries[1].write_bytes(first)
    damaged = bytearray(entries[2].read_bytes())
    mid = len(damaged) // 2  # inside the JPEG payload, well past the header
    damaged[mid : mid + 200] = bytes(200)
    entries[2].write_bytes(bytes(damaged))
    warm, info = _run(clip_set, tmp_path / "warm", str(cache_dir))
    assert warm.seen == cold.seen  # every clip shown its own, undamaged frames
    fc = info["frame_cache"]
    assert (fc["hits"], fc["misses"], fc["rejected"], fc["writes"]) == (1, 3, 3, 3)
    again, info = _run(clip_set, tmp_path / "again", str(cache_dir))
    assert again.seen == cold.seen
    assert (info["frame_cache"]["hits"], info["frame_cache"]["rejected"]) == (4, 0)


def test_an_entry_read_under_another_key_or_clip_is_refused(
    clips: dict[str, Path], tmp_path: Path
) -> None:
    clip = sample_clip(clips["mkv"], SEG8, FrameEncoding())
    data = dumps_entry(clip, key="k1", video_sha256="v1")
    assert loads_entry(data, key="k1", video_sha256="v1") == clip
    with pytest.raises(ValueError, match="another key"):
        loads_entry(data, key="k2")
    with pytest.raises(ValueError, match="another clip"):
        loads_entry(data, key="k1", video_sha256="v2")


def test_the_test_session_never_uses_the_users_cache(
    clip_set: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A run without ``cache_dir`` caches its frames in the session's own cache
    (``tests/conftest.py`` sets ``MMROBUST_CACHE``), never in ``~/.cache/mmrobust`` or
    ``$XDG_CACHE_HOME/mmrobust`` (before: every such test read and wrote the user's cache)."""
    from mmrobust.paths import cache_root
    from mmrobust.run.config import default_cache_dir

    session = tmp_path_factory.getbasetemp().resolve()
    assert cache_root().resolve().is_relative_to(session)
    xdg = os.environ.get("XDG_CACHE_HOME")
    user = {(Path.home() / ".cache").resolve(), *([Path(xdg).resolve()] if xdg else [])}
    assert not any(default_cache_dir().resolve().is_relative_to(u) for u in user)
    seen, info = _run(clip_set, tmp_path / "run", None)
    fc = info["frame_cache"]
    assert Path(fc["dir"]) == default_cache_dir() and len(seen.seen) == 4
    assert fc["entries"] >= 4 and Path(fc["dir"]).resolve().is_relative_to(session)

"""Synthetic calibration footage made from the photos that ship with scikit-image.

The detector's thresholds are set on these clips (and on synthetic tampering
of them), never on the real videos it is scored on. Each clip is a list of
shots; a shot is a camera move over one photo (pan, zoom, hold), optionally
with sensor noise, held frames ("animation on twos"), fades to or from black
and title cards, joined by hard cuts: the natural editing a detector must not
call tampering.

All frames are ``(H, W, 3) uint8 RGB``; lengths are in frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import cv2
import numpy as np

PHOTOS = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "camera",
    "coins",
    "immunohistochemistry",
    "hubble_deep_field",
    "grass",
    "retina",
    "brick",
    "page",
)


@cache
def photo(name: str) -> np.ndarray:
    """A scikit-image sample photo as ``(H, W, 3) uint8 RGB`` (grey photos are replicated)."""
    from skimage import data

    img = np.asarray(getattr(data, name)())
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    img = img[..., :3]
    if img.dtype != np.uint8:
        img = (255 * (img.astype(np.float64) / max(1.0, float(img.max())))).astype(np.uint8)
    return np.ascontiguousarray(img)


@dataclass(frozen=True)
class Shot:
    """One continuous camera move over a photo.

    Attributes:
        photo: scikit-image photo name.
        n: length in frames.
        move: "pan", "zoom", "hold" or "shake".
        speed: pan speed as a fraction of the crop width per frame (or zoom rate).
        noise: sensor-noise sigma in luma units.
        hold: each rendered frame is repeated this many times (animation on twos = 2).
        fade_in, fade_out: frames of fade from/to black at the shot's ends.
        title: text drawn over the shot (a title card if ``photo`` is "black").
        dissolve: frames of cross-dissolve from the previous shot (the two
            overlap; the programme is that many frames shorter).
        freeze: the shot's last this-many frames are a freeze frame.
    """

    photo: str
    n: int
    move: str = "pan"
    speed: float = 0.01
    noise: float = 2.0
    hold: int = 1
    fade_in: int = 0
    fade_out: int = 0
    title: str | None = None
    dissolve: int = 0
    freeze: int = 0


def render_shot(shot: Shot, size: tuple[int, int], rng: np.random.Generator) -> list[np.ndarray]:
    """Frames of one shot at ``size=(W, H)``: ``shot.n`` frames ``(H, W, 3) uint8 RGB``."""
    w, h = size
    src = np.zeros((h * 2, w * 2, 3), np.uint8) if shot.photo == "black" else photo(shot.photo)
    sh, sw = src.shape[:2]
    aspect = w / h
    cw = min(sw * 0.5, sh * 0.8 * aspect)
    ch = cw / aspect
    direction = float(rng.choice([-1.0, 1.0]))
    travel = min(shot.speed * cw * shot.n, 0.95 * (sw - cw))  # the pan stays inside the photo
    step = travel / max(1, shot.n)
    x0 = rng.uniform(0, sw - cw - travel)
    if direction < 0:
        x0 += travel
    y0 = rng.uniform(0, sh - ch)
    frames: list[np.ndarray] = []
    walk = np.zeros(2)
    for i in range(shot.n):
        k = (min(i, shot.n - 1 - shot.freeze) // shot.hold) * shot.hold
        if shot.move == "pan":
            x = float(np.clip(x0 + direction * step * k, 0, sw - cw))
            y, s = y0, 1.0
        elif shot.move == "zoom":
            x, y, s = x0, y0, 1.0 / (1.0 + shot.speed * k)
        elif shot.move == "shake":  # hand-held: a smooth random walk
            walk = walk * 0.9 + rng.normal(0, shot.speed * cw, 2)
            x = float(np.clip(x0 + walk[0], 0, sw - cw))
            y, s = float(np.clip(y0 + walk[1], 0, sh - ch)), 1.0
        else:
            x, y, s = x0, y0, 1.0
        cx, cy = x + cw / 2, y + ch / 2
        w2, h2 = cw * s / 2, ch * s / 2
        m = np.array(
            [
                [w / (2 * w2), 0, -(cx - w2) * w / (2 * w2)],
                [0, h / (2 * h2), -(cy - h2) * h / (2 * h2)],
            ]
        )
        f = cv2.warpAffine(src, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        if shot.title:
            cv2.putText(
                f,
                shot.title,
                (w // 10, h // 2),
                cv2.FONT_HERSHEY_SIMPLEX,
                h / 200,
                (255, 255, 255),
                2,
            )
        f32: np.ndarray = np.asarray(f, dtype=np.float32)
        if shot.fade_in and i < shot.fade_in:
            f32 *= (i + 1) / (shot.fade_in + 1)
        if shot.fade_out and i >= shot.n - shot.fade_out:
            f32 *= (shot.n - i) / (shot.fade_out + 1)
        if shot.noise > 0:
            f32 = f32 + rng.normal(0.0, shot.noise, f32.shape).astype(np.float32)
        frames.append(np.clip(f32, 0, 255).astype(np.uint8))
    return frames


def render(shots: list[Shot], size: tuple[int, int] = (320, 180), seed: int = 0) -> np.ndarray:
    """Render shots joined by hard cuts: ``(T, H, W, 3) uint8 RGB``."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    for s in shots:
        frames = render_shot(s, size, rng)
        k = min(s.dissolve, len(out), len(frames))
        for j in range(k):  # cross-dissolve: blend the previous shot's tail into this head
            a = (j + 1) / (k + 1)
            prev = out[len(out) - k + j].astype(np.float32)
            out[len(out) - k + j] = np.clip(
                (1 - a) * prev + a * frames[j].astype(np.float32), 0, 255
            ).astype(np.uint8)
        out.extend(frames[k:])
    return np.stack(out)


def random_programme(seed: int, n_frames: int = 240, fps: int = 25) -> list[Shot]:
    """A random edited programme of about ``n_frames`` frames (seeded).

    Modelled on film, TV and phone footage: the camera moves in almost every
    shot (pans, zooms, hand-held shake; 8 % are locked-off), shots last
    1-5 s (a third of the clips are a single shot), joined by hard cuts
    with occasional cross-dissolves, fades to and from black, freeze frames,
    held-frame animation and title cards.
    """
    rng = np.random.default_rng(seed)
    shots: list[Shot] = []
    left = n_frames
    single = rng.random() < 0.33
    while left > 0:
        n = left if single else min(left, int(rng.integers(fps, 5 * fps)))
        if left - n < fps // 2:
            n = left
        kind = rng.random()
        name = str(rng.choice(PHOTOS))
        move = str(rng.choice(["pan"] * 5 + ["zoom"] * 2 + ["shake"] * 2 + ["hold"] * 1))
        if move == "hold" and rng.random() < 0.2:
            move = "pan"
        speed = (
            float(rng.uniform(0.002, 0.015)) if move == "pan" else float(rng.uniform(0.001, 0.006))
        )
        shot = Shot(name, n, move=move, speed=speed, noise=float(rng.uniform(0.5, 4.0)))
        extra: dict[str, object] = {}
        if shots and rng.random() < 0.2 and n > 30:
            extra["dissolve"] = int(rng.integers(6, 16))
        if rng.random() < 0.1 and n > 40:
            extra["freeze"] = int(rng.integers(8, 25))
        if kind < 0.07 and not single:
            shot = Shot("black", n, move="hold", title="TITLE", noise=0.5)
        elif kind < 0.17:
            shot = Shot(name, n, move="pan", speed=speed, hold=int(rng.integers(2, 4)), noise=0.5)
        elif kind < 0.27 and n > 20:
            shot = Shot(
                name, n, move=move, speed=speed, fade_out=int(rng.integers(5, 15)), noise=1.0
            )
        elif kind < 0.37 and n > 20:
            shot = Shot(
                name, n, move=move, speed=speed, fade_in=int(rng.integers(5, 15)), noise=1.0
            )
        if extra and shot.photo != "black":
            from dataclasses import replace

            shot = replace(shot, **extra)  # type: ignore[arg-type]
        shots.append(shot)
        left -= n - shot.dissolve
    return shots


def apply_effect(
    frames: np.ndarray, effect: str, start: int, length: int, donor: np.ndarray | None = None
) -> np.ndarray:
    """Apply a paper tamper type to frames ``[start, start + length)`` (MVTamperBench section 3.2).

    Calibration-only mirror of the builder's effects: dropping removes the
    window, masking blacks it out, rotation turns it 180 degrees, repetition
    plays it twice, substitution replaces it with ``donor[:length]``.

    Raises:
        ValueError: unknown effect or missing donor.
    """
    a, b = start, start + length
    if effect == "dropping":
        return np.concatenate([frames[:a], frames[b:]])
    if effect == "masking":
        out = frames.copy()
        out[a:b] = 0
        return out
    if effect == "rotation":
        out = frames.copy()
        out[a:b] = out[a:b, ::-1, ::-1]
        return out
    if effect == "repetition":
        return np.concatenate([frames[:b], frames[a:b], frames[b:]])
    if effect == "substitution":
        if donor is None:
            raise ValueError("substitution needs a donor")
        out = frames.copy()
        out[a:b] = donor[:length]
        return out
    raise ValueError(f"unknown effect {effect!r}")


__all__ = ["PHOTOS", "Shot", "apply_effect", "photo", "random_programme", "render", "render_shot"]

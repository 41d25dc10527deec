"""``python -m sysmo.cli``: the ``sysmo`` command without its installed script (tests run it in a subprocess)."""

from sysmo.cli import main

main()

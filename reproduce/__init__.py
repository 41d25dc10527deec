"""``sysmo reproduce``: published benchmark tables re-scored with sysmo's metrics, or replayed as experiments, beside ours.

Above the runner (a reproduction may run experiments); the command itself is ``cli/reproduce.py``.
"""

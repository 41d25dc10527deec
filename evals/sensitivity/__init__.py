"""Scorer sensitivity (mutation testing of the scorers): operators per family, mutants of gold models, the matrix.

Each family module (``tla``, ``sysml``, ``uml_class``, ``architecture``) holds pure text -> text operators that
raise ``MutationError`` when they do not apply; ``suite`` builds the mutants of the gold models, scores them
with the family's real cascade and reports which declared stages lost points (``sysmo reproduce sensitivity``).
"""

from sysmo.errors import SysmoError


class MutationError(SysmoError):
    """An operator does not apply to this model (the message says why and what it needs)."""

"""How a command runs on untrusted input: no network, confined files, CPU/memory/time limits.

>>> from sysmo.sandbox import get_sandbox, Limits
>>> result = get_sandbox().run(["cat", "x.txt"], files={"x.txt": "hi"}, limits=Limits(timeout_s=5))
>>> result.stdout
'hi'
"""

from sysmo.sandbox.base import Limits, RunResult, Sandbox
from sysmo.sandbox.select import get_sandbox

__all__ = ["Limits", "RunResult", "Sandbox", "get_sandbox"]

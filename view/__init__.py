"""``sysmo view``: a local, read-only web app over a runs directory, to debug agent attempts in a browser.

``gather`` turns the experiment store (and LangGraph's checkpoint file) into the typed view models of ``models``;
``app`` serves them as HTML pages (Starlette, Jinja2 templates, uvicorn, bound to 127.0.0.1); ``cli/view.py``
adds the ``sysmo view`` command.
"""

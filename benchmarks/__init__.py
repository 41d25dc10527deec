"""Benchmark families: loaders for the published families and our starter suite (the ``Task`` model is in
``sysmo.contracts.task``)."""

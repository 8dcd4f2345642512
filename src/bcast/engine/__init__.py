"""Execution back ends. Each reads a :class:`~bcast.Plan`; none decides a shape."""

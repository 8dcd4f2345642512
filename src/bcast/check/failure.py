"""A model that could not be checked: what a run over many models reports in its place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CheckFailure"]


@dataclass(frozen=True)
class CheckFailure:
    """A model that could not be checked: unreadable (``status`` 2: not a model, a missing file, a bad
    ``--dim``) or a bug of bcast (``status`` 3). ``message`` is one line saying what and why."""

    model: str
    message: str
    status: int = 2

    def __bool__(self) -> bool:
        return False  # as a failing report is: ``if result:`` means "checked and clean"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "error": self.message, "status": self.status}

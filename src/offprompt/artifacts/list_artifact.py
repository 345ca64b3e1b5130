"""``ListArtifact``: an ordered sequence of artifacts."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import PrivateAttr, SerializeAsAny, field_validator, model_validator

from offprompt._validation import MAX_JSON_DEPTH
from offprompt.artifacts.base import BaseArtifact
from offprompt.errors import ValidationError

#: Lists of lists may nest this deep: each level is two levels of JSON (object, array).
MAX_LIST_NESTING = MAX_JSON_DEPTH // 2


class ListArtifact(BaseArtifact):
    """A sequence of artifacts, possibly of mixed types.

    Attributes:
        item_separator: Put between the items' texts in :meth:`to_text`.
    """

    type: Literal["ListArtifact"] = "ListArtifact"
    value: list[SerializeAsAny[BaseArtifact]] = []
    item_separator: str = "\n\n"
    _nesting: int = PrivateAttr(default=1)

    @model_validator(mode="after")
    def _bounded_nesting(self) -> ListArtifact:
        # Every method here (to_text, to_dict, len) recurses through nested lists.
        inner = [
            item._nesting  # private-ok: a nested ListArtifact's depth, read by its own class
            for item in self.value
            if isinstance(item, ListArtifact)
        ]
        self._nesting = 1 + max(inner, default=0)
        if self._nesting > MAX_LIST_NESTING:
            raise ValidationError(
                f"ListArtifacts nest {self._nesting} deep; the limit is {MAX_LIST_NESTING}"
            )
        return self

    @field_validator("value", mode="before")
    @classmethod
    def _items_are_artifacts(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise ValidationError(
                f"ListArtifact.value must be a list, got {builtins.type(value).__name__}"
            )
        items = []
        for index, item in enumerate(value):
            if isinstance(item, BaseArtifact):
                items.append(item)
            elif isinstance(item, dict):
                items.append(BaseArtifact.from_dict(item))
            else:
                raise ValidationError(
                    f"ListArtifact item {index} must be an artifact, got {builtins.type(item).__name__}"
                )
        return items

    @property
    def child_type(self) -> builtins.type[BaseArtifact] | None:
        """The class of the first item, or ``None`` for an empty list."""
        return builtins.type(self.value[0]) if self.value else None

    def is_type(self, target: builtins.type[BaseArtifact]) -> bool:
        """Whether every item is an instance of ``target`` (false for an empty list)."""
        return bool(self.value) and all(isinstance(item, target) for item in self.value)

    def has_items(self) -> bool:
        """Whether the list holds at least one artifact."""
        return bool(self.value)

    def to_text(self) -> str:
        return self.item_separator.join(item.to_text() for item in self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, index: int) -> BaseArtifact:
        return self.value[index]

    def __iter__(self) -> Iterator[BaseArtifact]:  # type: ignore[override]
        """The items, in order (not pydantic's field pairs)."""
        return iter(self.value)

    def __contains__(self, item: object) -> bool:
        return item in self.value

    def __reversed__(self) -> Iterator[BaseArtifact]:
        return reversed(self.value)

"""A registry of model classes by their ``type`` discriminator, and dispatch on it.

Artifacts and steps serialise to JSON with a ``type`` key naming their class; each base
keeps one :class:`TypeRegistry`, filled as subclasses are defined, and ``from_dict``
asks it which class rebuilds a document. Only registered classes can be rebuilt, so
deserialising never imports or runs arbitrary code.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from offprompt.errors import DeserializationError, UnknownTypeError

__all__ = ["TypeRegistry"]

M = TypeVar("M", bound=BaseModel)


class TypeRegistry(Generic[M]):
    """``type`` name -> class of one family of models (artifacts, steps).

    Args:
        article: How error messages name one member, with its article (``"an artifact"``).
        noun: How error messages name the family (``"artifact"``).
        inherited: Also register a subclass that inherits its parent's ``type`` default
            (it then takes over the name); if false, only a class that declares its own
            ``type`` registers.
    """

    def __init__(self, article: str, noun: str, *, inherited: bool) -> None:
        self.article = article
        self.noun = noun
        self.inherited = inherited
        self._classes: dict[str, type[M]] = {}

    def register(self, cls: type[M]) -> None:
        """Register ``cls`` under its ``type`` default (a no-op without a str default)."""
        default = cls.model_fields["type"].default
        if not isinstance(default, str):
            return
        if self.inherited or "type" in inspect.get_annotations(cls):
            self._classes[default] = cls

    def types(self) -> dict[str, type[M]]:
        """A copy of the registered names and classes."""
        return dict(self._classes)

    def resolve(self, data: Any, base: type[M]) -> tuple[str, type[M]]:
        """The ``type`` name of ``data`` and its class, which must be ``base`` or below.

        Raises:
            DeserializationError: ``data`` is not a mapping, lacks a str ``type``, or names
                a class that is not a ``base``.
            UnknownTypeError: ``type`` names no registered class.
        """
        if not isinstance(data, Mapping):
            raise DeserializationError(
                f"{self.article} must be a JSON object, got {type(data).__name__}"
            )
        type_name = data.get("type")
        if not isinstance(type_name, str):
            raise DeserializationError(
                f"{self.noun} has no 'type' field: keys {sorted(map(str, data))}"
            )
        target = self._classes.get(type_name)
        if target is None:
            known = ", ".join(sorted(self._classes))
            raise UnknownTypeError(
                f"unknown {self.noun} type {type_name!r}; known types: {known}", type=type_name
            )
        if not issubclass(target, base):
            raise DeserializationError(f"{self.noun} type {type_name!r} is not a {base.__name__}")
        return type_name, target

"""``BaseArtifact``: the typed envelope every piece of data travels in."""

from __future__ import annotations

import builtins
import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from offprompt._registry import TypeRegistry
from offprompt._validation import (
    check_json_depth,
    check_text,
    deserialization_error,
    ensure_json,
    loads_json,
    validation_error,
)
from offprompt.errors import DeserializationError, ValidationError

A = TypeVar("A", bound="BaseArtifact")

_UNSET: Any = object()


def new_id() -> str:
    """A fresh artifact / message id: a uuid4 in hex."""
    return uuid.uuid4().hex


class BaseArtifact(BaseModel, ABC):
    """Base of every artifact: an id, a name, a typed ``value`` and JSON metadata.

    Subclasses narrow ``value`` and fix ``type``, the discriminator that
    :meth:`from_dict` uses to rebuild the right class. Only registered subclasses can
    be rebuilt, so deserialising never runs arbitrary code.

    Attributes:
        type: The class discriminator, e.g. ``"TextArtifact"``.
        id: A uuid4 hex string.
        name: Defaults to ``id``; in task memory it is the namespace.
        value: The payload; its type depends on the subclass.
        meta: JSON-serialisable metadata.
        reference: Where the value came from (URL, path, tool, memory reference), if known.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    _registry: ClassVar[TypeRegistry[BaseArtifact]] = TypeRegistry(
        "an artifact", "artifact", inherited=True
    )

    type: str
    id: str = Field(default_factory=new_id, min_length=1)
    name: str = ""
    value: Any
    meta: dict[str, Any] = Field(default_factory=dict)
    reference: str | None = None

    def __init__(self, value: Any = _UNSET, /, **data: Any) -> None:
        if value is not _UNSET:
            if "value" in data:
                raise ValidationError(f"{builtins.type(self).__name__}: value given twice")
            data["value"] = value
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error(builtins.type(self).__name__, exc) from None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        BaseArtifact._registry.register(cls)

    @field_validator("meta", mode="after")
    @classmethod
    def _meta_is_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = ensure_json(value, field="meta")
        return result

    @model_validator(mode="after")
    def _valid_unicode(self) -> BaseArtifact:
        # Every str field, the value included: a lone surrogate cannot be stored.
        for field_name, field_value in self.__dict__.items():
            if isinstance(field_value, str):
                check_text(field_value, what=f"{builtins.type(self).__name__}.{field_name}")
        return self

    @model_validator(mode="after")
    def _name_defaults_to_id(self) -> BaseArtifact:
        if not self.name:
            self.name = self.id
        return self

    @abstractmethod
    def to_text(self) -> str:
        """A human- and model-readable rendering of the value."""

    def to_bytes(self) -> bytes:
        """The value as bytes: UTF-8 of :meth:`to_text` unless the subclass holds bytes."""
        return self.to_text().encode("utf-8")

    def __str__(self) -> str:
        return self.to_text()

    def __bool__(self) -> bool:
        return bool(self.value)

    def __len__(self) -> int:
        """Length of :meth:`to_text` in characters (bytes for blobs, items for lists)."""
        return len(self.to_text())

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        # pydantic would yield (field, value) pairs here, which reads like data but is
        # not; only ListArtifact is a sequence (it overrides this), as in Griptape.
        raise TypeError(
            f"{builtins.type(self).__name__} is not iterable; use .value or .to_text()"
            " (use model_dump() for its fields)"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that :meth:`from_dict` turns back into an equal artifact."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """``to_dict()`` as a JSON string (non-ASCII kept as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def registered_types(cls) -> dict[str, builtins.type[BaseArtifact]]:
        """The ``type`` names that :meth:`from_dict` accepts, with their classes."""
        return BaseArtifact._registry.types()

    @classmethod
    def from_dict(cls: builtins.type[A], data: Mapping[str, Any]) -> A:
        """Rebuild an artifact from :meth:`to_dict` output, dispatching on ``type``.

        Raises:
            DeserializationError: ``data`` is not a mapping, lacks ``type``, nests deeper
                than ``MAX_JSON_DEPTH``, or a field is invalid.
            UnknownTypeError: ``type`` names no registered artifact class.
        """
        if isinstance(data, Mapping):
            check_json_depth(data, what="artifact")
        type_name, target = BaseArtifact._registry.resolve(data, cls)
        try:
            return target.model_validate(dict(data))  # type: ignore[return-value]
        except PydanticValidationError as exc:
            raise deserialization_error(type_name, exc) from None
        except ValidationError as exc:
            raise DeserializationError(str(exc)) from None

    @classmethod
    def from_json(cls: builtins.type[A], text: str | bytes) -> A:
        """:meth:`from_dict` of a JSON document; malformed JSON is a clear error."""
        return cls.from_dict(loads_json(text, what="artifact JSON"))

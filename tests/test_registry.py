"""The one type registry behind ``BaseArtifact.from_dict`` and ``MemoryStep.from_dict``."""

from __future__ import annotations

import pytest

from offprompt._registry import TypeRegistry
from offprompt.artifacts import BaseArtifact, TextArtifact
from offprompt.errors import DeserializationError, UnknownTypeError
from offprompt.steps import ActionStep, MemoryStep


def test_artifacts_and_steps_share_one_registry_class() -> None:
    # private-ok: the registry the classes share is the subject
    assert isinstance(BaseArtifact._registry, TypeRegistry)
    # private-ok: the registry the classes share is the subject
    assert isinstance(MemoryStep._registry, TypeRegistry)
    assert BaseArtifact.registered_types()["TextArtifact"] is TextArtifact
    assert MemoryStep.registered_types()["ActionStep"] is ActionStep


@pytest.mark.parametrize(
    ("base", "noun", "article"),
    [(BaseArtifact, "artifact", "an artifact"), (MemoryStep, "step", "a step")],
)
def test_dispatch_errors_name_the_family(base: type, noun: str, article: str) -> None:
    with pytest.raises(DeserializationError, match=f"^{article} must be a JSON object, got list$"):
        base.from_dict([])
    with pytest.raises(DeserializationError, match=rf"^{noun} has no 'type' field: keys \['a'\]$"):
        base.from_dict({"a": 1})
    with pytest.raises(UnknownTypeError, match=f"^unknown {noun} type 'Nope'; known types: "):
        base.from_dict({"type": "Nope"})


def test_a_step_subclass_without_its_own_type_does_not_take_over() -> None:
    class TracedActionStep(ActionStep):
        pass

    assert MemoryStep.registered_types()["ActionStep"] is ActionStep


def test_a_class_outside_the_asked_base_is_refused() -> None:
    with pytest.raises(
        DeserializationError, match=r"^artifact type 'ImageArtifact' is not a TextArtifact$"
    ):
        TextArtifact.from_dict({"type": "ImageArtifact", "value": b""})

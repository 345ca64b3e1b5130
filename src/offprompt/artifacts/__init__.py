"""Typed artifacts: the envelope every piece of data travels in.

``BaseArtifact.from_dict`` rebuilds any of them from ``to_dict`` output through the
``type`` discriminator; an unknown type is an ``UnknownTypeError``, never code execution.
"""

from offprompt.artifacts.action import ActionArtifact
from offprompt.artifacts.base import BaseArtifact
from offprompt.artifacts.blob import BlobArtifact
from offprompt.artifacts.boolean import BooleanArtifact
from offprompt.artifacts.generic import GenericArtifact
from offprompt.artifacts.image import ImageArtifact
from offprompt.artifacts.info import ErrorArtifact, InfoArtifact
from offprompt.artifacts.json_artifact import JsonArtifact
from offprompt.artifacts.list_artifact import ListArtifact
from offprompt.artifacts.text import TextArtifact

__all__ = [
    "ActionArtifact",
    "BaseArtifact",
    "BlobArtifact",
    "BooleanArtifact",
    "ErrorArtifact",
    "GenericArtifact",
    "ImageArtifact",
    "InfoArtifact",
    "JsonArtifact",
    "ListArtifact",
    "TextArtifact",
]

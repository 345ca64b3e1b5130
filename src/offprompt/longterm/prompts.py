"""Prompt text for long-term memory: render read fragments, and turn a turn into an observation.

DB-GPT writes each finished turn to memory by rendering a *write template*
(``Question: ... Thought: ... Observation: ...``) and stores the result as the
fragment's observation; later it reads the most relevant fragments back and puts them
into the prompt variable ``most_recent_memories``. :func:`render_write_memory` and
:func:`format_memories` are those two halves, without a template engine.

Templates use :meth:`str.format` fields (``{question}``; ``{{`` for a literal brace).
Like DB-GPT's ``{% if question %}...{% endif %}`` blocks, a line whose fields are all
empty (``None`` or ``""``) is left out, so optional parts need no special syntax.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from offprompt.errors import ValidationError
from offprompt.tokens import Tokenizer, default_tokenizer

__all__ = [
    "DEFAULT_MEMORY_TEMPLATE",
    "DEFAULT_WRITE_MEMORY_TEMPLATE",
    "MemoryLike",
    "format_memories",
    "render_template",
    "render_write_memory",
]

#: How one read fragment is rendered by :func:`format_memories`.
DEFAULT_MEMORY_TEMPLATE = "{observation}"

#: DB-GPT's ``write_memory_template``: the observation stored for a finished turn.
DEFAULT_WRITE_MEMORY_TEMPLATE = (
    "Question: {question}\n"
    "Thought: {thought}\n"
    "Action: {action}\n"
    "Action Input: {action_input}\n"
    "Observation: {observation}"
)

_FRAGMENT_FIELDS = (
    "observation",
    "importance",
    "created_at",
    "last_accessed_at",
    "is_insight",
    "id",
    "index",
)
_WRITE_FIELDS = ("question", "thought", "action", "action_input", "observation")


@runtime_checkable
class MemoryLike(Protocol):
    """Anything with an ``observation`` text; ``importance``, ``created_at``,
    ``last_accessed_at``, ``is_insight`` and ``id`` are read when present."""

    @property
    def observation(self) -> str:
        """The text to render."""
        ...


class _Formatter(string.Formatter):
    def format_field(self, value: Any, format_spec: str) -> str:
        if value is None:  # an empty field renders as nothing, whatever its format spec
            return ""
        return str(super().format_field(value, format_spec))


_FORMATTER = _Formatter()


def _empty(value: Any) -> bool:
    return value is None or value == ""


def _line_fields(line: str, allowed: Iterable[str] | None, template_name: str) -> list[str]:
    try:
        parsed = list(_FORMATTER.parse(line))
    except ValueError as exc:
        raise ValidationError(f"{template_name} is not a valid format string: {exc}") from None
    names = []
    for _, field, _, _ in parsed:
        if field is None:
            continue
        if not field.isidentifier():
            raise ValidationError(
                f"{template_name} field {{{field}}} must be a plain name (no positional, "
                f"attribute or index fields)"
            )
        if allowed is not None and field not in allowed:
            raise ValidationError(
                f"{template_name} uses unknown field {{{field}}}; available: {', '.join(sorted(allowed))}"
            )
        names.append(field)
    return names


def render_template(
    template: str,
    values: Mapping[str, Any],
    *,
    allowed: Iterable[str] | None = None,
    template_name: str = "template",
) -> str:
    """Fill ``template`` from ``values``, leaving out lines whose fields are all empty.

    Args:
        template: A :meth:`str.format` template.
        values: Field values; a missing field counts as empty.
        allowed: If given, the only field names the template may use.
        template_name: Names the template in error messages.

    Raises:
        ValidationError: the template is malformed or uses a field not in ``allowed``.

    Example:
        >>> render_template("Q: {q}\\nA: {a}", {"q": "hi", "a": None})
        'Q: hi'
    """
    if not isinstance(template, str):
        raise ValidationError(f"{template_name} must be a str, got {type(template).__name__}")
    allowed_set = set(allowed) if allowed is not None else None
    lines = []
    for line in template.split("\n"):
        fields = _line_fields(line, allowed_set, template_name)
        if fields and all(_empty(values.get(f)) for f in fields):
            continue
        lines.append(_FORMATTER.vformat(line, (), {f: values.get(f) for f in fields}))
    return "\n".join(lines)


def render_write_memory(
    question: str | None = None,
    answer: str | None = None,
    *,
    thought: str | None = None,
    action: str | None = None,
    action_input: str | None = None,
    observation: str | None = None,
    template: str = DEFAULT_WRITE_MEMORY_TEMPLATE,
) -> str:
    """The observation to store for a finished turn (DB-GPT's write-memory step).

    ``answer`` fills ``thought`` when no thought is given, as DB-GPT stores the
    model's reply in that slot.

    Raises:
        ValidationError: every field is empty (nothing to remember), or the template
            uses a field other than ``question``, ``thought``, ``action``,
            ``action_input`` and ``observation``.

    Example:
        >>> render_write_memory("What is my favourite colour?", "Your favourite colour is green.")
        'Question: What is my favourite colour?\\nThought: Your favourite colour is green.'
    """
    values = {
        "question": question,
        "thought": thought if not _empty(thought) else answer,
        "action": action,
        "action_input": action_input,
        "observation": observation,
    }
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise ValidationError(
                f"render_write_memory: {name} must be a str, got {type(value).__name__}"
            )
    if all(_empty(v) or not str(v).strip() for v in values.values()):
        raise ValidationError(
            "render_write_memory: question, answer and the other fields are all empty"
        )
    text = render_template(
        template, values, allowed=_WRITE_FIELDS, template_name="write memory template"
    )
    return text.strip()


def format_memories(
    fragments: Iterable[MemoryLike],
    template: str = DEFAULT_MEMORY_TEMPLATE,
    *,
    separator: str = "\n",
    max_tokens: int | None = None,
    tokenizer: Tokenizer | None = None,
) -> str:
    """Render read fragments into one string for a prompt variable such as ``most_recent_memories``.

    Args:
        fragments: In the order to show them (usually most relevant first).
        template: Per fragment; fields ``observation``, ``importance``, ``created_at``,
            ``last_accessed_at``, ``is_insight``, ``id`` and ``index`` (1-based).
        separator: Between rendered fragments.
        max_tokens: Keep the longest prefix of ``fragments`` whose rendering fits.
        tokenizer: Counts tokens for ``max_tokens`` (default: offprompt's default).

    Returns:
        The rendered text; ``""`` when there are no fragments.

    Raises:
        ValidationError: a fragment has no ``str`` observation, the template uses an
            unknown field, or ``max_tokens`` is negative.

    Example:
        >>> from types import SimpleNamespace as F
        >>> format_memories([F(observation="likes green", importance=0.8)], "- {observation} ({importance:.1f})")
        '- likes green (0.8)'
    """
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 0):
        raise ValidationError(
            f"format_memories: max_tokens must be a non-negative int, got {max_tokens!r}"
        )
    if not isinstance(separator, str):
        raise ValidationError(
            f"format_memories: separator must be a str, got {type(separator).__name__}"
        )
    render_template(
        template, {}, allowed=_FRAGMENT_FIELDS, template_name="memory template"
    )  # check once
    counter = None
    if max_tokens is not None:
        counter = tokenizer if tokenizer is not None else default_tokenizer()
    parts: list[str] = []
    used = 0
    for index, fragment in enumerate(fragments, start=1):
        observation = getattr(fragment, "observation", None)
        if not isinstance(observation, str):
            raise ValidationError(
                f"format_memories: fragment {index} has no str 'observation' "
                f"(got {type(observation).__name__} on a {type(fragment).__name__})"
            )
        values = {name: getattr(fragment, name, None) for name in _FRAGMENT_FIELDS}
        values["index"] = index
        text = render_template(
            template, values, allowed=_FRAGMENT_FIELDS, template_name="memory template"
        )
        if counter is not None and max_tokens is not None:
            cost = counter.count(text) + (counter.count(separator) if parts else 0)
            if used + cost > max_tokens:
                break
            used += cost
        parts.append(text)
    return separator.join(parts)

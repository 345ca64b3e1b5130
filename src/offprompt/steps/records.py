"""The step records: smolagents' step types, their small records, and how each step
serialises (``dict()``, ``to_dict()``/``from_dict()``) and becomes model messages."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from offprompt._registry import TypeRegistry
from offprompt._validation import ensure_json, validation_error
from offprompt.artifacts import BaseArtifact, ImageArtifact, TextArtifact
from offprompt.errors import (
    DeserializationError,
    SerializationError,
    ValidationError,
)
from offprompt.messages import Message

__all__ = [
    "PLAN_FOLLOW_UP",
    "RETRY_GUIDANCE",
    "ActionStep",
    "FinalAnswerStep",
    "MemoryStep",
    "PlanningStep",
    "StepError",
    "SystemPromptStep",
    "TaskStep",
    "Timing",
    "TokenUsage",
    "ToolCall",
]

#: Appended to an error in ``ActionStep.to_messages``, word for word as smolagents does.
RETRY_GUIDANCE = (
    "\nNow let's retry: take care not to repeat previous errors! If you have retried "
    "several times, try a completely different approach.\n"
)
#: The user message after a plan; the role change keeps models from continuing the plan.
PLAN_FOLLOW_UP = "Now proceed and carry out this plan."
_ARTIFACT_MARKER = "$artifact"

S = TypeVar("S", bound="MemoryStep")


# -- small records -------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error(type(self).__name__, exc) from None

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except PydanticValidationError as exc:
            raise validation_error(type(self).__name__, exc) from None


class Timing(_Record):
    """When a step started and ended (seconds since the epoch, as ``time.time()``).

    Example:
        >>> Timing(start_time=10.0, end_time=12.5).duration
        2.5
    """

    start_time: float
    end_time: float | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, or ``None`` while the step runs."""
        return None if self.end_time is None else self.end_time - self.start_time

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        """smolagents' shape: ``start_time``, ``end_time``, ``duration``."""
        return {"start_time": self.start_time, "end_time": self.end_time, "duration": self.duration}

    @model_validator(mode="before")
    @classmethod
    def _drop_duration(cls, data: Any) -> Any:
        # ``dict()`` includes the derived duration; reading it back must not fail.
        if isinstance(data, Mapping) and "duration" in data:
            data = {k: v for k, v in data.items() if k != "duration"}
        return data


class TokenUsage(_Record):
    """Tokens a model call used; ``total_tokens`` defaults to input + output.

    Example:
        >>> TokenUsage(input_tokens=120, output_tokens=30).total_tokens
        150
    """

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    total_tokens: int = Field(default=-1)

    @model_validator(mode="after")
    def _total(self) -> TokenUsage:
        if self.total_tokens < 0:
            # object.__setattr__ skips validate_assignment, which would recurse here.
            object.__setattr__(self, "total_tokens", self.input_tokens + self.output_tokens)
        return self

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        """smolagents' shape: input, output and total tokens."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


class StepError(_Record):
    """A serialisable record of an error raised during a step (smolagents' ``AgentError.dict()``).

    Example:
        >>> str(StepError.from_exception(ValueError("bad input")))
        'bad input'
    """

    type: str = Field(default="AgentError", min_length=1)
    message: str

    @classmethod
    def from_exception(cls, exc: BaseException) -> StepError:
        """The error of ``exc``: its type name and message."""
        message = getattr(exc, "message", None)
        return cls(type=builtins.type(exc).__name__, message=str(message if message else exc))

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        """smolagents' shape: ``{"type": ..., "message": ...}``."""
        return {"type": self.type, "message": self.message}

    def __str__(self) -> str:
        return self.message


def _smolagents_json(value: Any) -> Any:
    """smolagents' ``make_json_serializable`` on JSON data: strings that look like a JSON
    object or array are parsed. Used only for the smolagents-shaped ``dict()`` views."""
    if isinstance(value, str):
        if (value.startswith("{") and value.endswith("}")) or (
            value.startswith("[") and value.endswith("]")
        ):
            try:
                return _smolagents_json(json.loads(value))
            except json.JSONDecodeError:
                return value
        return value
    if isinstance(value, (list, tuple)):
        return [_smolagents_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _smolagents_json(v) for k, v in value.items()}
    return value


class ToolCall(_Record):
    """A tool call recorded in a step.

    Unlike :class:`offprompt.messages.ToolCall`, ``arguments`` may be any JSON value:
    smolagents' code agents record the code string itself as the arguments of a
    ``python_interpreter`` call, and that string is kept as it is (lossless).

    Example:
        >>> ToolCall(id="call_1", name="python_interpreter", arguments="print(1)").dict()
        {'id': 'call_1', 'type': 'function', 'function': {'name': 'python_interpreter', 'arguments': 'print(1)'}}
    """

    id: str
    name: str = Field(min_length=1)
    arguments: Any = None

    @field_validator("arguments", mode="after")
    @classmethod
    def _json_arguments(cls, value: Any) -> Any:
        try:
            return ensure_json(value, field="ToolCall.arguments")
        except SerializationError as exc:
            raise ValueError(str(exc)) from None

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        """The function-call shape smolagents uses (``arguments`` as a value, not a string)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": _smolagents_json(self.arguments)},
        }

    def to_openai(self) -> builtins.dict[str, Any]:
        """The strict OpenAI shape: ``arguments`` is a string (a str argument is kept as is)."""
        arguments = self.arguments
        if not isinstance(arguments, str):
            arguments = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": arguments},
        }

    @classmethod
    def from_openai(cls, data: Mapping[str, Any]) -> ToolCall:
        """Read ``dict()`` / OpenAI output back (``arguments`` stays as given)."""
        function = data.get("function") if isinstance(data, Mapping) else None
        if not isinstance(function, Mapping):
            raise ValidationError(f"tool call has no 'function' object: {data!r}")
        return cls(
            id=data.get("id", ""),
            name=function.get("name", ""),
            arguments=function.get("arguments"),
        )


# -- steps ---------------------------------------------------------------------------


def _to_image(value: Any, field: str) -> Any:
    if isinstance(value, ImageArtifact):
        return value
    if isinstance(value, (bytes, bytearray)):
        return ImageArtifact(value=bytes(value))
    if isinstance(value, Mapping):
        return ImageArtifact.from_dict(value)
    if hasattr(value, "save") and hasattr(value, "mode"):  # a pillow image
        return ImageArtifact.from_pil(value)
    raise ValidationError(
        f"{field} items must be ImageArtifact, pillow images, encoded image bytes or "
        f"ImageArtifact dicts, got {type(value).__name__}"
    )


def _images(value: Any, field: str) -> Any:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValidationError(f"{field} must be a list of images, got {type(value).__name__}")
    return [_to_image(v, field) for v in value]


def _to_message(value: Any) -> Any:
    if isinstance(value, Mapping):
        return Message.from_dict(value)
    return value


def _output_in(value: Any) -> Any:
    """Inbound any-value field: pillow images become artifacts, the artifact marker is read."""
    if isinstance(value, Mapping) and set(value) == {_ARTIFACT_MARKER}:
        return BaseArtifact.from_dict(value[_ARTIFACT_MARKER])
    if hasattr(value, "save") and hasattr(value, "mode") and hasattr(value, "size"):
        return ImageArtifact.from_pil(value)
    return value


def _output_out(value: Any, field: str) -> Any:
    """Outbound any-value field for ``to_dict``: JSON or an artifact, nothing else."""
    if isinstance(value, BaseArtifact):
        return {_ARTIFACT_MARKER: value.to_dict()}
    return ensure_json(value, field=field)


def _output_view(value: Any) -> Any:
    """Lenient view for ``dict()`` (smolagents stringifies what JSON cannot hold)."""
    if isinstance(value, BaseArtifact):
        return value.to_dict()
    try:
        return _smolagents_json(ensure_json(value, field="value"))
    except SerializationError:
        return str(value)


class MemoryStep(BaseModel):
    """Base of every step: serialisation through the ``type`` discriminator.

    Steps are mutable (an agent fills an ``ActionStep`` in as it runs); assignments are
    validated.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    type: str
    _registry: ClassVar[TypeRegistry[MemoryStep]] = TypeRegistry("a step", "step", inherited=False)
    _any_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error(builtins.type(self).__name__, exc) from None

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except PydanticValidationError as exc:
            raise validation_error(builtins.type(self).__name__, exc) from None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Only a class that declares its own ``type`` registers: a plain subclass (e.g. a
        # traced ActionStep) must not take over its parent's name.
        MemoryStep._registry.register(cls)

    @classmethod
    def registered_types(cls) -> builtins.dict[str, builtins.type[MemoryStep]]:
        """The ``type`` names :meth:`from_dict` accepts, with their classes."""
        return MemoryStep._registry.types()

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        """smolagents' view of the step (no ``type`` key), JSON-ready."""
        raise NotImplementedError  # pragma: no cover - every concrete step overrides it

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        """The messages this step contributes to the model's input."""
        return []

    def to_dict(self) -> builtins.dict[str, Any]:
        """Lossless JSON with a ``type`` key; :meth:`from_dict` gives back an equal step.

        Raises:
            SerializationError: a free-form field (``action_output``, ``output``) holds a
                value that is neither JSON nor an artifact.
        """
        name = builtins.type(self).__name__
        data = self.model_dump(mode="json", exclude=set(self._any_fields))
        for field in self._any_fields:
            data[field] = _output_out(getattr(self, field), f"{name}.{field}")
        return data

    def to_json(self) -> str:
        """``to_dict()`` as a JSON string (non-ASCII kept as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls: builtins.type[S], data: Mapping[str, Any]) -> S:
        """Rebuild a step from :meth:`to_dict` output, dispatching on ``type``.

        Raises:
            UnknownTypeError: ``type`` names no step class (the message names it).
            DeserializationError: not a mapping, no ``type``, or an invalid field.
        """
        _, target = MemoryStep._registry.resolve(data, cls)
        try:
            # The constructor turns pydantic's errors into offprompt's, field names included.
            return target(**{str(k): v for k, v in data.items()})  # type: ignore[return-value]
        except (ValidationError, SerializationError) as exc:
            raise DeserializationError(str(exc)) from None


def _text_message(role: str, text: str, smolagents_role: str) -> Message:
    return Message(
        role=role, content=[TextArtifact(value=text)], meta={"smolagents_role": smolagents_role}
    )


class SystemPromptStep(MemoryStep):
    """The system prompt (dropped from messages in summary mode).

    Example:
        >>> SystemPromptStep(system_prompt="Be brief.").to_messages()[0].text
        'Be brief.'
    """

    type: Literal["SystemPromptStep"] = "SystemPromptStep"
    system_prompt: str

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        return {"system_prompt": self.system_prompt}

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        if summary_mode:
            return []
        return [_text_message("system", self.system_prompt, "system")]


class TaskStep(MemoryStep):
    """A task given to the agent, with optional images.

    Example:
        >>> TaskStep(task="Add 2 and 3").to_messages()[0].text
        'New task:\\nAdd 2 and 3'
    """

    type: Literal["TaskStep"] = "TaskStep"
    task: str
    task_images: list[ImageArtifact] | None = None

    @field_validator("task_images", mode="before")
    @classmethod
    def _task_images(cls, value: Any) -> Any:
        return _images(value, "TaskStep.task_images")

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        images = [i.to_dict() for i in self.task_images] if self.task_images is not None else None
        return {"task": self.task, "task_images": images}

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        content: list[BaseArtifact] = [TextArtifact(value=f"New task:\n{self.task}")]
        content.extend(self.task_images or [])
        return [Message(role="user", content=content, meta={"smolagents_role": "user"})]


class ActionStep(MemoryStep):
    """One think-act-observe step.

    Attributes:
        step_number: The step's number in the run (smolagents counts from 1).
        timing: Start and end time.
        model_input_messages: The messages the model was given.
        tool_calls: The calls the model made (a code agent: one ``python_interpreter``
            call whose arguments are the code).
        error: What went wrong, if anything; shown to the model with retry guidance.
        model_output_message: The model's reply as a message.
        model_output: The model's reply text (or content parts).
        code_action: The code a code agent ran.
        observations: What the tools returned, as text.
        observations_images: Images observed (e.g. screenshots).
        action_output: The step's output value: JSON or an artifact.
        token_usage: Tokens the model call used.
        is_final_answer: Whether this step produced the final answer.

    Example:
        >>> step = ActionStep(step_number=1, timing=Timing(start_time=0.0), observations="4")
        >>> [m.text for m in step.to_messages()]
        ['Observation:\\n4']
    """

    type: Literal["ActionStep"] = "ActionStep"
    step_number: int
    timing: Timing
    model_input_messages: list[Message] | None = None
    tool_calls: list[ToolCall] | None = None
    error: StepError | None = None
    model_output_message: Message | None = None
    model_output: str | list[builtins.dict[str, Any]] | None = None
    code_action: str | None = None
    observations: str | None = None
    observations_images: list[ImageArtifact] | None = None
    action_output: Any = None
    token_usage: TokenUsage | None = None
    is_final_answer: bool = False

    _any_fields: ClassVar[tuple[str, ...]] = ("action_output",)

    @field_validator("observations_images", mode="before")
    @classmethod
    def _observation_images(cls, value: Any) -> Any:
        return _images(value, "ActionStep.observations_images")

    @field_validator("model_input_messages", mode="before")
    @classmethod
    def _input_messages(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_to_message(v) for v in value]
        return value

    @field_validator("model_output_message", mode="before")
    @classmethod
    def _output_message(cls, value: Any) -> Any:
        return _to_message(value)

    @field_validator("error", mode="before")
    @classmethod
    def _error(cls, value: Any) -> Any:
        if isinstance(value, BaseException):
            return StepError.from_exception(value)
        return value

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _tool_calls(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [
                ToolCall.from_openai(v) if isinstance(v, Mapping) and "function" in v else v
                for v in value
            ]
        return value

    @field_validator("action_output", mode="before")
    @classmethod
    def _action_output(cls, value: Any) -> Any:
        return _output_in(value)

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        return {
            "step_number": self.step_number,
            "timing": self.timing.dict(),
            "model_input_messages": [m.to_dict() for m in self.model_input_messages]
            if self.model_input_messages
            else None,
            "tool_calls": [tc.dict() for tc in self.tool_calls] if self.tool_calls else [],
            "error": self.error.dict() if self.error else None,
            "model_output_message": self.model_output_message.to_dict()
            if self.model_output_message
            else None,
            "model_output": self.model_output,
            "code_action": self.code_action,
            "observations": self.observations,
            "observations_images": [i.to_dict() for i in self.observations_images]
            if self.observations_images
            else None,
            "action_output": _output_view(self.action_output),
            "token_usage": self.token_usage.dict() if self.token_usage else None,
            "is_final_answer": self.is_final_answer,
        }

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        """assistant output → tool call → observation images (user) → observation → error.

        The texts are smolagents' own, including the retry guidance after an error.
        """
        messages: list[Message] = []
        if self.model_output is not None and not summary_mode:
            text = (
                self.model_output.strip()
                if isinstance(self.model_output, str)
                else json.dumps(self.model_output, ensure_ascii=False)
            )
            messages.append(_text_message("assistant", text, "assistant"))
        if self.tool_calls is not None:
            calls = str([tc.dict() for tc in self.tool_calls])
            messages.append(_text_message("assistant", "Calling tools:\n" + calls, "tool-call"))
        if self.observations_images:
            messages.append(
                Message(
                    role="user",
                    content=list(self.observations_images),
                    meta={"smolagents_role": "user"},
                )
            )
        if self.observations is not None:
            messages.append(
                _text_message("user", f"Observation:\n{self.observations}", "tool-response")
            )
        if self.error is not None:
            text = f"Call id: {self.tool_calls[0].id}\n" if self.tool_calls else ""
            text += "Error:\n" + str(self.error) + RETRY_GUIDANCE
            messages.append(_text_message("user", text, "tool-response"))
        return messages


class PlanningStep(MemoryStep):
    """A plan the model wrote; followed in messages by a user turn asking to carry it out.

    Example:
        >>> [m.role for m in PlanningStep(plan="1. search", timing=Timing(start_time=0)).to_messages()]
        ['assistant', 'user']
    """

    type: Literal["PlanningStep"] = "PlanningStep"
    model_input_messages: list[Message] = Field(default_factory=list)
    model_output_message: Message | None = None
    plan: str
    timing: Timing
    token_usage: TokenUsage | None = None

    @field_validator("model_input_messages", mode="before")
    @classmethod
    def _input_messages(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, list):
            return [_to_message(v) for v in value]
        return value

    @field_validator("model_output_message", mode="before")
    @classmethod
    def _output_message(cls, value: Any) -> Any:
        return _to_message(value)

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        return {
            "model_input_messages": [m.to_dict() for m in self.model_input_messages],
            "model_output_message": self.model_output_message.to_dict()
            if self.model_output_message
            else None,
            "plan": self.plan,
            "timing": self.timing.dict(),
            "token_usage": self.token_usage.dict() if self.token_usage else None,
        }

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        if summary_mode:
            return []
        return [
            _text_message("assistant", self.plan.strip(), "assistant"),
            # A role change, so that the model does not simply continue the plan message.
            _text_message("user", PLAN_FOLLOW_UP, "user"),
        ]


class FinalAnswerStep(MemoryStep):
    """The run's final answer. It adds no messages: the answer is already in the last
    ``ActionStep``'s observations (smolagents never writes this step into the prompt).

    Example:
        >>> FinalAnswerStep(output=5).dict()
        {'output': 5}
    """

    type: Literal["FinalAnswerStep"] = "FinalAnswerStep"
    output: Any = None

    _any_fields: ClassVar[tuple[str, ...]] = ("output",)

    def __init__(self, output: Any = None, /, **data: Any) -> None:
        # smolagents builds it positionally: FinalAnswerStep(answer).
        if "output" not in data:
            data["output"] = output
        super().__init__(**data)

    @field_validator("output", mode="before")
    @classmethod
    def _output(cls, value: Any) -> Any:
        return _output_in(value)

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        return {"output": _output_view(self.output)}

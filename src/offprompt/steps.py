"""Step memory: smolagents' structured record of an agent run.

An :class:`AgentMemory` holds a :class:`SystemPromptStep` and a list of steps
(:class:`TaskStep`, :class:`ActionStep`, :class:`PlanningStep`,
:class:`FinalAnswerStep`). The steps are variants of one record, so they live together
here, as they do in smolagents' ``memory.py``.

Three views of a step:

* ``dict()`` -- smolagents' shape (the keys ``get_full_steps()`` returns), JSON-ready;
  images become ``ImageArtifact`` dicts where smolagents gives raw pixel bytes, and
  messages are offprompt ``Message`` dicts where smolagents gives ``ChatMessage`` dicts.
* ``to_dict()`` / ``MemoryStep.from_dict()`` -- lossless JSON with a ``type``
  discriminator; an unknown ``type`` is an :class:`~offprompt.errors.UnknownTypeError`.
* ``to_messages(summary_mode)`` -- the messages smolagents writes into the model's
  input for the step, as :class:`~offprompt.messages.Message`. smolagents' own
  ``tool-call`` / ``tool-response`` roles are mapped the way its default
  ``tool_role_conversions`` maps them (to ``assistant`` / ``user``); the original role is
  kept in ``message.meta["smolagents_role"]``.

Persistence: :meth:`AgentMemory.save` / :meth:`AgentMemory.load` write a run to any
conversation store with the state API (``get_state``, ``set_state``, ``delete_state``,
``state_keys``), and :meth:`AgentMemory.attach` writes each step as it is appended, so a
run can be reloaded, replayed and continued after a restart. Layout, per session::

    steps/{run_id}/meta        {"format": 1, "count": n, "system_prompt": "..."}
    steps/{run_id}/{i:08d}     the i-th step's to_dict()

``meta.count`` is written after the steps it counts, so an append interrupted by a crash
leaves the run as it was before the append.
"""

from __future__ import annotations

import builtins
import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Literal,
    Protocol,
    TypeVar,
    overload,
    runtime_checkable,
)

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from offprompt._validation import ensure_json, validation_error
from offprompt.artifacts import BaseArtifact, ImageArtifact, TextArtifact
from offprompt.errors import (
    DeserializationError,
    NamespaceError,
    NotFoundError,
    SerializationError,
    StorageError,
    UnknownTypeError,
    ValidationError,
)
from offprompt.messages import Message

if TYPE_CHECKING:
    from offprompt.scope import Scope

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "RETRY_GUIDANCE",
    "ActionStep",
    "AgentMemory",
    "AsyncStateStore",
    "CallbackRegistry",
    "FinalAnswerStep",
    "MemoryStep",
    "PlanningStep",
    "StateStore",
    "StepError",
    "StepList",
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
_FORMAT_VERSION = 1

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
        message = getattr(exc, "message", None)
        return cls(type=builtins.type(exc).__name__, message=str(message if message else exc))

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
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
    _registry: ClassVar[dict[str, builtins.type[MemoryStep]]] = {}
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
        default = cls.model_fields["type"].default
        if "type" in inspect.get_annotations(cls) and isinstance(default, str):
            MemoryStep._registry[default] = cls

    @classmethod
    def registered_types(cls) -> builtins.dict[str, builtins.type[MemoryStep]]:
        """The ``type`` names :meth:`from_dict` accepts, with their classes."""
        return dict(MemoryStep._registry)

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
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls: builtins.type[S], data: Mapping[str, Any]) -> S:
        """Rebuild a step from :meth:`to_dict` output, dispatching on ``type``.

        Raises:
            UnknownTypeError: ``type`` names no step class (the message names it).
            DeserializationError: not a mapping, no ``type``, or an invalid field.
        """
        if not isinstance(data, Mapping):
            raise DeserializationError(
                f"a step must be a JSON object, got {builtins.type(data).__name__}"
            )
        type_name = data.get("type")
        if not isinstance(type_name, str):
            raise DeserializationError(f"step has no 'type' field: keys {sorted(map(str, data))}")
        target = MemoryStep._registry.get(type_name)
        if target is None:
            known = ", ".join(sorted(MemoryStep._registry))
            raise UnknownTypeError(
                f"unknown step type {type_name!r}; known types: {known}", type=type_name
            )
        if not issubclass(target, cls):
            raise DeserializationError(f"step type {type_name!r} is not a {cls.__name__}")
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


# -- callbacks -----------------------------------------------------------------------

StepCallback = Callable[..., Any]


class CallbackRegistry:
    """Callbacks run for each step, registered per step class.

    :meth:`callback` walks the step class's MRO, so a callback registered for
    :class:`MemoryStep` sees every step. Keyword context (e.g. ``agent=``) is passed only
    to the callbacks whose signature accepts it, by name or through ``**kwargs``.

    Example:
        >>> seen = []
        >>> registry = CallbackRegistry()
        >>> registry.register(ActionStep, lambda step: seen.append(step.step_number))
        >>> registry.callback(ActionStep(step_number=3, timing=Timing(start_time=0)), agent=None)
        >>> seen
        [3]
    """

    def __init__(self) -> None:
        self._callbacks: dict[type[MemoryStep], list[StepCallback]] = {}

    def register(self, step_cls: type[MemoryStep], callback: StepCallback) -> None:
        if not (isinstance(step_cls, type) and issubclass(step_cls, MemoryStep)):
            raise ValidationError(
                f"callbacks are registered for a MemoryStep subclass, got {step_cls!r}"
            )
        if not callable(callback):
            raise ValidationError(f"callback must be callable, got {type(callback).__name__}")
        self._callbacks.setdefault(step_cls, []).append(callback)

    def callbacks_for(self, step_cls: type[MemoryStep]) -> list[StepCallback]:
        """The callbacks that :meth:`callback` would call for a step of ``step_cls``, in order."""
        return [cb for cls in step_cls.__mro__ for cb in self._callbacks.get(cls, [])]

    def callback(self, memory_step: MemoryStep, **kwargs: Any) -> None:
        for cb in self.callbacks_for(type(memory_step)):
            cb(memory_step, **_accepted_kwargs(cb, kwargs))


def _accepted_kwargs(callback: StepCallback, kwargs: dict[str, Any]) -> dict[str, Any]:
    if not kwargs:
        return {}
    try:
        parameters = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature: the step only
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return kwargs
    # The first positional parameter receives the step; it is not a context slot.
    rest = (
        parameters[1:]
        if parameters and parameters[0].kind is not inspect.Parameter.KEYWORD_ONLY
        else parameters
    )
    names = {
        p.name
        for p in rest
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return {k: v for k, v in kwargs.items() if k in names}


# -- persistence ---------------------------------------------------------------------


@runtime_checkable
class StateStore(Protocol):
    """The part of a conversation store (``offprompt.stores``) that step memory uses."""

    def get_state(self, session_id: str, key: str) -> Any | None: ...
    def set_state(self, session_id: str, key: str, value: Any) -> None: ...
    def delete_state(self, session_id: str, key: str) -> None: ...
    def state_keys(self, session_id: str, prefix: str = "") -> list[str]: ...


@runtime_checkable
class AsyncStateStore(Protocol):
    """The async twins of :class:`StateStore`."""

    async def aget_state(self, session_id: str, key: str) -> Any | None: ...
    async def aset_state(self, session_id: str, key: str, value: Any) -> None: ...
    async def adelete_state(self, session_id: str, key: str) -> None: ...
    async def astate_keys(self, session_id: str, prefix: str = "") -> list[str]: ...


def _check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not run_id.strip():
        raise NamespaceError(f"run_id must be a non-empty string, got {run_id!r}", run_id=run_id)
    if "/" in run_id or len(run_id) > 256:
        raise NamespaceError(
            f"run_id must not contain '/' and must be at most 256 characters, got {run_id[:80]!r}",
            run_id=run_id,
        )
    return run_id


def _meta_key(run_id: str) -> str:
    return f"steps/{run_id}/meta"


def _step_key(run_id: str, index: int) -> str:
    return f"steps/{run_id}/{index:08d}"


def _parse_meta(meta: Any, run_id: str, session_id: str) -> tuple[int, str]:
    if meta is None:
        raise NotFoundError(
            f"no step memory saved for run {run_id!r} in session {session_id!r}",
            run_id=run_id,
            session_id=session_id,
        )
    if (
        not isinstance(meta, Mapping)
        or not isinstance(meta.get("count"), int)
        or meta["count"] < 0
        or not isinstance(meta.get("system_prompt"), str)
    ):
        raise StorageError(
            f"corrupt step-memory header for run {run_id!r}: {str(meta)[:200]}", run_id=run_id
        )
    if meta.get("format") != _FORMAT_VERSION:
        raise StorageError(
            f"run {run_id!r} was saved in step-memory format {meta.get('format')!r}; "
            f"this version reads format {_FORMAT_VERSION}",
            run_id=run_id,
        )
    return meta["count"], meta["system_prompt"]


def _load_step(data: Any, index: int, run_id: str) -> MemoryStep:
    if data is None:
        raise StorageError(
            f"step {index} of run {run_id!r} is missing from the store", run_id=run_id
        )
    try:
        return MemoryStep.from_dict(data)
    except UnknownTypeError as exc:
        raise UnknownTypeError(
            f"step {index} of run {run_id!r}: {exc}", run_id=run_id, **exc.context
        ) from None
    except DeserializationError as exc:
        raise DeserializationError(
            f"step {index} of run {run_id!r}: {exc}", run_id=run_id
        ) from None


def _as_step(value: Any) -> MemoryStep:
    if not isinstance(value, MemoryStep):
        raise ValidationError(
            f"AgentMemory.steps holds MemoryStep objects, got {type(value).__name__}"
        )
    return value


class StepList(MutableSequence[MemoryStep]):
    """The list behind :attr:`AgentMemory.steps`: a list that tells its memory when it
    changes, so an attached store is kept in step. Used exactly like a ``list``."""

    def __init__(self, owner: AgentMemory, steps: Iterable[MemoryStep] = ()) -> None:
        self._owner = owner
        self._items: list[MemoryStep] = [_as_step(s) for s in steps]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[MemoryStep]:
        return iter(self._items)

    @overload
    def __getitem__(self, index: int) -> MemoryStep: ...
    @overload
    def __getitem__(self, index: slice) -> list[MemoryStep]: ...
    def __getitem__(self, index: int | slice) -> MemoryStep | list[MemoryStep]:
        return self._items[index]

    @overload
    def __setitem__(self, index: int, value: MemoryStep) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[MemoryStep]) -> None: ...
    def __setitem__(self, index: int | slice, value: Any) -> None:
        before = list(self._items)
        if isinstance(index, slice):
            self._items[index] = [_as_step(v) for v in value]
            start = 0
        else:
            self._items[index] = _as_step(value)
            start = range(len(self._items))[index]
        self._owner._steps_changed(start, before)

    @overload
    def __delitem__(self, index: int) -> None: ...
    @overload
    def __delitem__(self, index: slice) -> None: ...
    def __delitem__(self, index: int | slice) -> None:
        before = list(self._items)
        start = 0 if isinstance(index, slice) else range(len(self._items))[index]
        del self._items[index]
        self._owner._steps_changed(start, before)

    def insert(self, index: int, value: MemoryStep) -> None:
        before = list(self._items) if self._owner._attached is not None else self._items
        step = _as_step(value)
        size = len(self._items)
        position = min(max(index + size if index < 0 else index, 0), size)
        self._items.insert(position, step)
        self._owner._steps_changed(position, before)

    def append(self, value: MemoryStep) -> None:
        before = list(self._items) if self._owner._attached is not None else self._items
        self._items.append(_as_step(value))
        self._owner._steps_changed(len(self._items) - 1, before)

    def extend(self, values: Iterable[MemoryStep]) -> None:
        new = [_as_step(v) for v in values]
        if not new:
            return
        before = list(self._items)
        self._items.extend(new)
        self._owner._steps_changed(len(before), before)

    def clear(self) -> None:
        before = list(self._items)
        self._items.clear()
        self._owner._steps_changed(0, before)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepList):
            return self._items == other._items
        if isinstance(other, list):
            return self._items == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepList({self._items!r})"


class _Attachment:
    __slots__ = ("count", "run_id", "session_id", "store")

    def __init__(self, store: StateStore, session_id: str, run_id: str, count: int) -> None:
        self.store = store
        self.session_id = session_id
        self.run_id = run_id
        self.count = count


class AgentMemory:
    """The record of an agent run: a system prompt and the steps taken.

    Attributes:
        system_prompt: The :class:`SystemPromptStep`; :meth:`reset` keeps it.
        steps: The steps, in order; a list (a :class:`StepList`).
        callbacks: Called by :meth:`add_step` for each step added.

    Example:
        >>> memory = AgentMemory("You are a calculator.")
        >>> memory.steps.append(TaskStep(task="2 + 3?"))
        >>> memory.steps.append(ActionStep(step_number=1, timing=Timing(start_time=0.0),
        ...                                code_action="print(2 + 3)", observations="5"))
        >>> [m.role for m in memory.to_messages()]
        ['system', 'user', 'user']
        >>> memory.return_full_code()
        'print(2 + 3)'
    """

    def __init__(self, system_prompt: str, *, callbacks: CallbackRegistry | None = None) -> None:
        self.system_prompt: SystemPromptStep = SystemPromptStep(system_prompt=system_prompt)
        self.callbacks = callbacks if callbacks is not None else CallbackRegistry()
        self._attached: _Attachment | None = None
        self._steps = StepList(self)

    # -- the list --------------------------------------------------------------------
    @property
    def steps(self) -> StepList:
        return self._steps

    @steps.setter
    def steps(self, value: Iterable[MemoryStep]) -> None:
        if value is self._steps:  # ``memory.steps += [...]`` already extended in place
            return
        before = list(self._steps)
        self._steps._items = [_as_step(s) for s in value]
        self._steps_changed(0, before)

    def add_step(self, step: MemoryStep, **context: Any) -> None:
        """Append ``step`` (persisting it when attached), then run the callbacks with ``context``."""
        self._steps.append(step)
        self.callbacks.callback(step, **context)

    def reset(self) -> None:
        """Remove every step, keeping the system prompt (and the attached store in step)."""
        self._steps.clear()

    # -- views ---------------------------------------------------------------------
    def get_succinct_steps(self) -> list[dict[str, Any]]:
        """Each step's ``dict()`` without ``model_input_messages``."""
        return [
            {k: v for k, v in step.dict().items() if k != "model_input_messages"}
            for step in self._steps
        ]

    def get_full_steps(self) -> list[dict[str, Any]]:
        """Each step's ``dict()``, model input messages included."""
        return [step.dict() for step in self._steps]

    def return_full_code(self) -> str:
        """The code actions of the action steps, joined into one script."""
        return "\n\n".join(
            s.code_action
            for s in self._steps
            if isinstance(s, ActionStep) and s.code_action is not None
        )

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        """The model input for this memory: the system prompt, then each step's messages.

        ``summary_mode`` drops the system prompt, the plans and the model outputs, as
        smolagents does when it asks a model to summarise or re-plan.
        """
        messages = self.system_prompt.to_messages(summary_mode=summary_mode)
        for step in self._steps:
            messages.extend(step.to_messages(summary_mode=summary_mode))
        return messages

    def replay(self, detailed: bool = False, *, console: Console | None = None) -> None:
        """Print a readable timeline of the run with rich.

        Args:
            detailed: Also show each step's model input messages (long).
            console: A ``rich.console.Console`` to print to (default: a new one).
        """
        _replay(self, detailed=detailed, console=console)

    # -- persistence ---------------------------------------------------------------
    def _payload(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        steps = [s.to_dict() for s in self._steps]  # serialise everything before writing anything
        meta = {
            "format": _FORMAT_VERSION,
            "count": len(steps),
            "system_prompt": self.system_prompt.system_prompt,
        }
        return meta, steps

    def save(
        self,
        store: StateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        """Write the whole run to ``store`` (replacing what was saved under ``run_id``).

        Args:
            store: A conversation store (``InMemoryStore``, ``SQLiteStore`` ...).
            run_id: Names the run; no ``/``.
            session_id: The store session to write in; defaults to ``run_id``.
            scope: The :class:`~offprompt.scope.Scope` partition to write in.

        Raises:
            SerializationError: a step holds a value that is neither JSON nor an artifact;
                nothing is written then.
        """
        session = session_id if session_id is not None else _check_run_id(run_id)
        _check_run_id(run_id)
        store = _with_scope(store, scope)
        meta, steps = self._payload()
        old = store.get_state(session, _meta_key(run_id))
        old_count = (
            old["count"] if isinstance(old, Mapping) and isinstance(old.get("count"), int) else 0
        )
        for index, data in enumerate(steps):
            store.set_state(session, _step_key(run_id, index), data)
        store.set_state(session, _meta_key(run_id), meta)
        for index in range(len(steps), old_count):
            store.delete_state(session, _step_key(run_id, index))

    async def asave(
        self,
        store: AsyncStateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        """Async twin of :meth:`save`, through the store's ``a``-prefixed methods."""
        session = session_id if session_id is not None else _check_run_id(run_id)
        _check_run_id(run_id)
        store = _with_scope(store, scope)
        meta, steps = self._payload()
        old = await store.aget_state(session, _meta_key(run_id))
        old_count = (
            old["count"] if isinstance(old, Mapping) and isinstance(old.get("count"), int) else 0
        )
        for index, data in enumerate(steps):
            await store.aset_state(session, _step_key(run_id, index), data)
        await store.aset_state(session, _meta_key(run_id), meta)
        for index in range(len(steps), old_count):
            await store.adelete_state(session, _step_key(run_id, index))

    @classmethod
    def load(
        cls,
        store: StateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        attach: bool = False,
        callbacks: CallbackRegistry | None = None,
        scope: Scope | None = None,
    ) -> AgentMemory:
        """Read a run saved by :meth:`save` or recorded with :meth:`attach`.

        Args:
            attach: Keep recording into the same run: later appends are persisted.
            scope: The :class:`~offprompt.scope.Scope` partition the run was saved in.

        Raises:
            NotFoundError: nothing is saved under ``run_id``.
            UnknownTypeError: a saved step has a ``type`` no step class has; the message
                names it and the step's index.
            StorageError: the saved record is incomplete or corrupt.
        """
        session = session_id if session_id is not None else _check_run_id(run_id)
        _check_run_id(run_id)
        store = _with_scope(store, scope)
        count, system_prompt = _parse_meta(
            store.get_state(session, _meta_key(run_id)), run_id, session
        )
        steps = [
            _load_step(store.get_state(session, _step_key(run_id, i)), i, run_id)
            for i in range(count)
        ]
        memory = cls(system_prompt, callbacks=callbacks)
        memory._steps._items = steps
        if attach:
            memory._attached = _Attachment(store, session, run_id, count)
        return memory

    @classmethod
    async def aload(
        cls,
        store: AsyncStateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        callbacks: CallbackRegistry | None = None,
        scope: Scope | None = None,
    ) -> AgentMemory:
        """Async twin of :meth:`load` (without ``attach``: auto-persistence is sync)."""
        session = session_id if session_id is not None else _check_run_id(run_id)
        _check_run_id(run_id)
        store = _with_scope(store, scope)
        count, system_prompt = _parse_meta(
            await store.aget_state(session, _meta_key(run_id)), run_id, session
        )
        steps = [
            _load_step(await store.aget_state(session, _step_key(run_id, i)), i, run_id)
            for i in range(count)
        ]
        memory = cls(system_prompt, callbacks=callbacks)
        memory._steps._items = steps
        return memory

    @staticmethod
    def delete_run(store: StateStore, run_id: str, *, session_id: str | None = None) -> None:
        """Remove a saved run (no error if there is none)."""
        session = session_id if session_id is not None else _check_run_id(run_id)
        _check_run_id(run_id)
        for key in store.state_keys(session, prefix=f"steps/{run_id}/"):
            store.delete_state(session, key)

    @staticmethod
    def list_runs(store: StateStore, session_id: str) -> list[str]:
        """The run ids saved in ``session_id``, sorted."""
        keys = store.state_keys(session_id, prefix="steps/")
        return sorted({k.split("/")[1] for k in keys if k.endswith("/meta") and k.count("/") == 2})

    def attach(
        self,
        store: StateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        """Save now, then persist every change to :attr:`steps` as it happens.

        An appended step is written to ``steps/{run_id}/{index:08d}`` before the run's
        header is updated, so a crash never leaves a half-counted step. Edits in the
        middle of the list (insert, delete, replace) rewrite the steps after the edit and
        are not atomic across a crash. A step mutated in place after it was appended is
        written again by :meth:`sync`. Only one ``AgentMemory`` should record a run.
        """
        store = _with_scope(store, scope)
        self.save(store, run_id, session_id=session_id)
        session = session_id if session_id is not None else run_id
        self._attached = _Attachment(store, session, run_id, len(self._steps))

    def detach(self) -> None:
        """Stop persisting changes (what was written stays)."""
        self._attached = None

    def sync(self) -> None:
        """Rewrite the attached run entirely (after steps were changed in place)."""
        if self._attached is None:
            raise ValidationError("AgentMemory.sync() needs an attached store; call attach() first")
        att = self._attached
        self.save(att.store, att.run_id, session_id=att.session_id)
        att.count = len(self._steps)

    @property
    def attached(self) -> bool:
        return self._attached is not None

    def _steps_changed(self, start: int, before: list[MemoryStep]) -> None:
        """Persist steps[start:] and the new count; on failure undo the in-memory change."""
        att = self._attached
        if att is None:
            return
        items = self._steps._items
        try:
            payload = [s.to_dict() for s in items[start:]]
            for offset, data in enumerate(payload):
                att.store.set_state(att.session_id, _step_key(att.run_id, start + offset), data)
            meta = {
                "format": _FORMAT_VERSION,
                "count": len(items),
                "system_prompt": self.system_prompt.system_prompt,
            }
            att.store.set_state(att.session_id, _meta_key(att.run_id), meta)
        except BaseException:
            self._steps._items = before
            raise
        for index in range(len(items), att.count):
            att.store.delete_state(att.session_id, _step_key(att.run_id, index))
        att.count = len(items)

    def __repr__(self) -> str:
        return f"AgentMemory(system_prompt={self.system_prompt.system_prompt[:40]!r}, steps={len(self._steps)})"


# -- replay --------------------------------------------------------------------------


def _replay(memory: AgentMemory, *, detailed: bool, console: Console | None) -> None:
    # Text objects, never markup strings: step contents may hold "[/...]" sequences.
    from rich.console import Console, Group
    from rich.panel import Panel
    from rich.rule import Rule
    from rich.text import Text

    out = console if console is not None else Console()
    out.print(Text("Replaying the agent's steps:", style="bold"))
    out.print(
        Panel(Text(memory.system_prompt.system_prompt), title="System prompt", title_align="left")
    )

    def messages(items: list[Message]) -> None:
        dumped = "\n".join(json.dumps(m.to_dict(), indent=2, ensure_ascii=False) for m in items)
        out.print(
            Panel(Text(dumped, style="dim"), title="Model input messages", title_align="left")
        )

    def footer(timing: Timing | None, usage: TokenUsage | None) -> Text:
        parts = []
        if timing is not None and timing.duration is not None:
            parts.append(f"Duration {timing.duration:.2f} s")
        if usage is not None:
            parts.append(
                f"Input tokens: {usage.input_tokens:,} | Output tokens: {usage.output_tokens:,}"
            )
        return Text(" | ".join(parts), style="dim")

    for step in memory.steps:
        if isinstance(step, TaskStep):
            images = f"{len(step.task_images)} image(s)" if step.task_images else ""
            out.print(
                Panel(
                    Text(step.task, style="bold"),
                    title="New task",
                    subtitle=images,
                    title_align="left",
                )
            )
        elif isinstance(step, ActionStep):
            out.print(Rule(Text(f"Step {step.step_number}", style="bold")))
            if detailed and step.model_input_messages:
                messages(step.model_input_messages)
            if step.model_output is not None:
                text = (
                    step.model_output
                    if isinstance(step.model_output, str)
                    else json.dumps(step.model_output)
                )
                out.print(Panel(Text(text), title="Agent output", title_align="left"))
            if step.code_action is not None:
                out.print(Panel(Text(step.code_action), title="Executing code", title_align="left"))
            elif step.tool_calls:
                calls = "\n".join(
                    f"{tc.name}({json.dumps(tc.arguments, ensure_ascii=False)})  [{tc.id}]"
                    for tc in step.tool_calls
                )
                out.print(Panel(Text(calls), title="Tool calls", title_align="left"))
            body: list[Any] = []
            if step.observations is not None:
                body.append(Text("Observations: ", style="bold") + Text(step.observations))
            if step.observations_images:
                body.append(
                    Text(", ".join(i.to_text() for i in step.observations_images), style="italic")
                )
            if step.error is not None:
                body.append(
                    Text(f"Error ({step.error.type}): {step.error.message}", style="bold red")
                )
            if step.is_final_answer:
                body.append(
                    Text(f"Final answer: {_output_view(step.action_output)}", style="bold green")
                )
            body.append(footer(step.timing, step.token_usage))
            out.print(Group(*body))
        elif isinstance(step, PlanningStep):
            out.print(Rule(Text("Planning step", style="bold")))
            if detailed and step.model_input_messages:
                messages(step.model_input_messages)
            out.print(Panel(Text(step.plan), title="Plan", title_align="left"))
            out.print(footer(step.timing, step.token_usage))
        elif isinstance(step, FinalAnswerStep):
            out.print(Text(f"Final answer: {_output_view(step.output)}", style="bold green"))


def _with_scope(store: Any, scope: Scope | None) -> Any:
    """``store`` seen through ``scope`` (a :class:`~offprompt.stores.ScopedStore`)."""
    if scope is None:
        return store
    from offprompt.stores.base import ScopedStore

    return ScopedStore(store, scope)

"""offprompt quick start: typed artifacts, messages and token counts, offline.

Run with ``make demo`` (or ``python examples/quickstart.py`` inside the venv).
"""

from __future__ import annotations

from PIL import Image, ImageDraw

from offprompt import (
    BaseArtifact,
    ErrorArtifact,
    ImageArtifact,
    JsonArtifact,
    ListArtifact,
    Message,
    TextArtifact,
    ToolCall,
    default_tokenizer,
)
from offprompt.errors import OffpromptError


def main() -> None:
    tokenizer = default_tokenizer()
    print(f"tokenizer: {tokenizer!r} (found offline)\n")

    report = TextArtifact("Quarterly revenue grew 12% to $4.2M. " * 2000, name="q3-report")
    print(f"a tool output: {len(report):,} characters, {report.token_count():,} tokens")

    canvas = Image.new("RGB", (800, 600), "white")
    ImageDraw.Draw(canvas).rectangle((100, 100, 700, 500), outline="black", width=5)
    chart = ImageArtifact.from_pil(canvas, name="chart")
    print(f"an image: {chart.to_text()}  -> as text it is described, never dumped")

    conversation = [
        Message.system("You are a financial analyst."),
        Message.user(["Summarise the report and the chart.", chart]),
        Message.assistant(
            tool_calls=[ToolCall(id="call_1", name="load_report", arguments={"q": "Q3"})]
        ),
        Message.tool(report, tool_call_id="call_1", name="load_report"),
        Message.assistant("Revenue grew 12% to $4.2M."),
    ]
    print("\nthe conversation, with what each message costs in a prompt:")
    for message in conversation:
        preview = message.text[:48].replace("\n", " ") or ", ".join(
            c.name for c in message.tool_calls
        )
        extra = f" +{len(message.images)} image" if message.images else ""
        print(
            f"  {message.role:<9} {tokenizer.count_message(message):>7,} tokens  {preview!r}{extra}"
        )

    bundle = ListArtifact([JsonArtifact({"quarter": "Q3", "growth": 0.12}), chart])
    restored = BaseArtifact.from_json(bundle.to_json())
    print(f"\nround trip through JSON: {type(restored).__name__} equal={restored == bundle}")
    message = conversation[1]
    print(f"message round trip equal={Message.from_json(message.to_json()) == message}")

    print("\nbad input gets a clear error:")
    for bad in ('{"type": "PickleArtifact", "value": "..."}', '{"type": "TextArtifact", "value": '):
        try:
            BaseArtifact.from_json(bad)
        except OffpromptError as exc:
            print(f"  {type(exc).__name__}: {exc}")
    print(f"  errors for the model are values: {ErrorArtifact('tool timed out').to_text()!r}")


if __name__ == "__main__":
    main()

"""offprompt for LlamaIndex: durable token-limited memory, off-prompt tools, memory blocks."""

__all__: list[str] = []

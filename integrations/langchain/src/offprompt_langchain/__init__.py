"""offprompt for LangChain: durable chat history, off-prompt tools and agent middleware."""

__all__: list[str] = []

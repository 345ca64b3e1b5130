"""Conversation memory: lossless history, runs, token-budgeted windows, summaries."""

from offprompt.conversation.memory import ConversationMemory, Run, Window
from offprompt.conversation.summary import SUMMARY_STATE_KEY, SummaryConversationMemory

__all__ = [
    "SUMMARY_STATE_KEY",
    "ConversationMemory",
    "Run",
    "SummaryConversationMemory",
    "Window",
]

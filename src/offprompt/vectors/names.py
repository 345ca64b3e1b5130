"""Re-export of :mod:`offprompt.names` (the name rules live in that leaf module)."""

from offprompt.names import MAX_NAME_LENGTH, validate_namespace

__all__ = ["MAX_NAME_LENGTH", "validate_namespace"]

"""LLM backends behind one small protocol; strings become backends only in `resolve_llm`."""

from agent.llm.base import LLM, Completion, Message, Usage
from agent.llm.resolve import resolve_llm

__all__ = ["LLM", "Completion", "Message", "Usage", "resolve_llm"]

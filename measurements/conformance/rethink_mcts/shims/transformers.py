"""Shim: the released utils and GPT modules import transformers (for local models) and never use it: the chat
model is an OpenAI client, and the tokenizer is tiktoken's cl100k_base."""

"""Shim: the released RPM-MCTS embeds with ``HuggingFaceEmbeddings("../../huggingface/bge-large-en-v1.5",
device cuda, normalize_embeddings=True)``, a 1.3 GB model its ``huggingface/download.py`` fetches from the Hugging
Face hub, run by sentence-transformers on PyTorch. This machine reaches no hub and has no GPU: the class is
codeforest's bundled embedder instead, ``codeforest.tools.knowledge.WordLlamaEmbeddings`` (wordllama's
``l2_supercat``, 256 dimensions, unit length), the one codeforest's ``rpm_mcts`` uses by default, so the released
search and a replay into codeforest see the same similarities. Only the vectors change: the released code still
filters siblings above its 0.85 cosine, still builds and searches its own Chroma knowledge base, and still folds K in
as it does. ``model_name``, ``model_kwargs`` and ``encode_kwargs`` are accepted and not used (WordLlama's vectors are
unit length, which is what ``normalize_embeddings=True`` asks for)."""

from langchain_huggingface.embeddings import HuggingFaceEmbeddings

__all__ = ["HuggingFaceEmbeddings"]

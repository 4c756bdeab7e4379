"""Shim: the packages the released CodePRM imports at module level and never uses on the recorded path, each with
why. ``run_released.py`` installs them (``_unused.install``) before ``run.py`` runs: any use of one is an error.

The released ``run.py`` imports ``llm_service`` (a local-model actor on vLLM or transformers, for a trained PRM or
a local generator), ``Processor`` (metrics), ``models`` (every search: its ``__init__`` imports all four), ``prm``
(the trained PRM: transformers, peft, DeepSpeed, flash-attention) and ``utils`` (plotting). The recorded run talks
to an OpenAI-compatible endpoint (``call_mode='api'``), with ``--prm_model_name gpt4o-mini``, so neither
``LocalModelActor`` nor ``ValuePRM``/``TokenPRM`` is built."""

UNUSED = {
    "transformers": "local models and the PRM's base model (llm_service, prm, ChatModels); the chat model is an "
                    "OpenAI client and the tokenizer is tiktoken's cl100k_base",
    "transformers.integrations.deepspeed": "prm/value_prm.py: PRM training",
    "vllm": "llm_service and ChatModels.GPT35: the local (vLLM) generator, not built for an API model",
    "peft": "prm/: loading or training the LoRA CodePRM adapter",
    "peft.tuners.lora": "prm/value_prm.py: PRM training",
    "datasets": "prm/: PRM training data",
    "deepspeed": "prm/value_prm.py: PRM training",
    "flash_attn.utils.distributed": "prm/value_prm.py: ring attention for PRM training",
    "accelerate": "run.py imports Accelerator and never uses it",
    "torcheval.metrics": "Processor and models import HitRate, ReciprocalRank and never use them",
    "torchmetrics": "Processor and models import it and never use it",
    "sklearn.manifold": "utils imports TSNE (plots not in the release)",
    "sklearn.metrics": "prm/token_prm.py: PRM evaluation",
    "matplotlib.pyplot": "utils imports pyplot (plots not in the release)",
    "pyext": "executors import RuntimeModule, which only the APPS executor's call-based path uses (and that path "
             "asserts False); pyext (2014) calls inspect.getargspec and does not install on Python 3.11",
}

# The slice of vllm that vllm_evidence._audit imports (checked by stubtest).
__version__: str

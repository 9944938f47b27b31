# The slice of vllm that vllm_evidence.audit imports (checked by stubtest).
__version__: str

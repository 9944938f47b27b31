# The slice of vllm that vllm_evidence.upstream.audit imports (checked by stubtest).
__version__: str

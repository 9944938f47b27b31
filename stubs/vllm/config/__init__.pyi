from vllm.config.cache import CacheConfig as CacheConfig

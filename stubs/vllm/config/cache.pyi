from typing import Any

class CacheConfig:
    # At run time __init__ is pydantic's dataclass wrapper, with these parameter names;
    # the audit builds a default instance only.
    def __init__(__dataclass_self__, *args: Any, **kwargs: Any) -> None: ...
    def metrics_info(self) -> dict[str, str]: ...

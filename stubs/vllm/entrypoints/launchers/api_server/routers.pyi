from argparse import Namespace
from typing import Any

def register_api_routers(
    args: Namespace,
    app: Any,
    supported_tasks: tuple[str, ...],
    model_config: Any | None = None,
) -> None: ...

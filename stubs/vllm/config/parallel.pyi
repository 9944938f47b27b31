from typing import Literal, TypeAlias

DistributedExecutorBackend: TypeAlias = Literal["ray", "mp", "uni", "external_launcher"]

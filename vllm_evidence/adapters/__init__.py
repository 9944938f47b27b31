"""One parser per evidence source: bytes in, typed observations or a typed failure out."""

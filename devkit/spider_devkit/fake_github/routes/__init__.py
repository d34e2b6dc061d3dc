"""The fake's REST and GraphQL routes, one module a concern, each a ``router(fake)``."""

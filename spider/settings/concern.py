"""The base of every group of engine settings (a concern)."""

from pydantic import BaseModel, ConfigDict


class Concern(BaseModel):
    """A group of engine settings. It is validated as part of
    :class:`~spider.settings.EngineSettings`, so its own schema is built only if it is ever
    validated alone (``EngineSettings.index_part``): the package imports as fast as one class."""

    model_config = ConfigDict(defer_build=True)
